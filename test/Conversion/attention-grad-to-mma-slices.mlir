// Head dims over 128 split the gradients' columns: D = 256 takes two
// column slices of 128 (Dv = 64 two of 32), each a block of its own that
// recomputes the scores and dP over the whole head dims and accumulates
// its slice. The slices of a tile are neighbours in the grid's x. wgmma's
// swizzled tiles serve up to 128, so sm_90a too gets mma.sync.
// RUN: attn-opt %s --attn-choose-kernel=chip=sm_90a | FileCheck %s --check-prefix=CHOOSE
// RUN: attn-opt %s --attn-choose-kernel=chip=sm_90a --attn-attention-grad-to-mma --canonicalize | FileCheck %s

// CHOOSE: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64>

// The dQ kernel: two blocks a q-tile, x = 2 * tile + slice; the tile's
// first row from x / 2.
// CHECK-LABEL: func.func @d256
// CHECK: %[[QT:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[QB:.*]] = arith.muli %[[QT]], %c2
// CHECK: gpu.launch blocks(%[[X:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[QB]],
// CHECK-SAME: dynamic_shared_memory_size %c129280_i32
// CHECK: memref<64x264xbf16, #gpu.address_space<workgroup>>
// CHECK: memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[TILE:.*]] = arith.divui %[[X]], %c2
// CHECK: %[[SLICE:.*]] = arith.remui %[[X]], %c2
// CHECK: %[[T:.*]] = arith.remui %{{.*}}, %c4
// CHECK-NEXT: %[[T2:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[FIRST:.*]] = arith.muli %[[SLICE]], %c128
// CHECK: arith.muli %[[TILE]], %c64
// Every slice computes Delta; the first stores it.
// CHECK: %[[IS_FIRST:.*]] = arith.cmpi eq, %[[SLICE]], %c0
// CHECK: arith.andi %{{.*}}, %[[IS_FIRST]]
// CHECK: memref.store %{{.*}} : memref<?xi32>
// dQ's slice: dS times K's columns from the slice's first.
// CHECK: %[[KCOL:.*]] = arith.addi %{{.*}}, %[[FIRST]]
// CHECK: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %[[KCOL]]] {numTiles = 4 : i32, transpose = true} : memref<2x64x264xbf16
// CHECK: %[[DQCOL:.*]] = arith.addi %[[T2]], %[[FIRST]]
// CHECK: vector.store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[DQCOL]]] {{.*}} : memref<?x4x?x256xbf16>, vector<2xbf16>
// CHECK: gpu.terminator
// The dK/dV kernel: two blocks a kv-tile; dK's slice is 128 columns,
// dV's 32.
// CHECK: %[[KT:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[KB:.*]] = arith.muli %[[KT]], %c2
// CHECK: gpu.launch blocks(%[[X2:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[KB]],
// CHECK: %[[TILE2:.*]] = arith.divui %[[X2]], %c2
// CHECK: %[[SLICE2:.*]] = arith.remui %[[X2]], %c2
// CHECK: %[[T_KV:.*]] = arith.remui %{{.*}}, %c4
// CHECK-NEXT: %[[T2_KV:.*]] = arith.muli %[[T_KV]], %c2
// CHECK: %[[L16:.*]] = arith.divui %{{.*}}, %c16
// CHECK-NEXT: %[[HALF:.*]] = arith.muli %[[L16]], %c8
// CHECK: %[[DK0:.*]] = arith.muli %[[SLICE2]], %c128
// CHECK: %[[DV0:.*]] = arith.muli %[[SLICE2]], %c32
// CHECK: arith.muli %[[TILE2]], %c64
// dV += P^T dO's slice, dK += dS^T Q's slice.
// CHECK: %[[DVREAD:.*]] = arith.addi %[[HALF]], %[[DV0]]
// CHECK-NEXT: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %[[DVREAD]]] {numTiles = 4 : i32, transpose = true} : memref<2x64x72xbf16
// CHECK: %[[DKREAD:.*]] = arith.addi %[[HALF]], %[[DK0]]
// CHECK-NEXT: nvgpu.ldmatrix %{{.*}}[%{{.*}}, %{{.*}}, %[[DKREAD]]] {numTiles = 4 : i32, transpose = true} : memref<2x64x264xbf16
// CHECK: %[[DKCOL:.*]] = arith.addi %[[T2_KV]], %[[DK0]]
// CHECK: vector.store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[DKCOL]]] {{.*}} : memref<?x4x?x256xbf16>, vector<2xbf16>
// CHECK: %[[DVCOL:.*]] = arith.addi %[[T2_KV]], %[[DV0]]
// CHECK: vector.store %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %[[DVCOL]]] {{.*}} : memref<?x4x?x64xbf16>, vector<2xbf16>
func.func @d256(%q: tensor<?x4x?x256xbf16>, %v: tensor<?x4x?x64xbf16>,
                %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x64xbf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %q, %v, %v, %v, %lse : tensor<?x4x?x256xbf16>,
          tensor<?x4x?x256xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>,
          tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %v : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>,
           tensor<?x4x?x64xbf16>) {causal}
      -> tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x64xbf16>
  return %r#0, %r#1, %r#2
      : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x64xbf16>
}

// D = 144 has no two slices of whole k16 steps (72 columns): three of 48.
// CHECK-LABEL: func.func @d144
// CHECK: %[[QT3:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[QB3:.*]] = arith.muli %[[QT3]], %c3
// CHECK: gpu.launch blocks(%[[X3:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[QB3]],
// CHECK: %[[SLICE3:.*]] = arith.remui %[[X3]], %c3
// CHECK: arith.muli %[[SLICE3]], %c48
func.func @d144(%q: tensor<?x2x?x144xf16>, %lse: tensor<?x2x?xf32>)
    -> (tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %q, %q, %q, %q, %lse : tensor<?x2x?x144xf16>,
          tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>,
          tensor<?x2x?x144xf16>, tensor<?x2x?xf32>)
      outs(%q, %q, %q : tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>,
           tensor<?x2x?x144xf16>)
      -> tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>
  return %r#0, %r#1, %r#2
      : tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>, tensor<?x2x?x144xf16>
}

// D = 64 with Dv = 256: dQ needs no slices; dK and dV take two, of 32
// and 128 columns.
// CHECK-LABEL: func.func @d64_dv256
// CHECK: %[[QT4:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK-NOT: arith.muli %[[QT4]]
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[QT4]],
// CHECK: gpu.terminator
// CHECK: %[[KT4:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK: %[[KB4:.*]] = arith.muli %[[KT4]], %c2
// CHECK: gpu.launch blocks(%[[X4:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[KB4]],
// CHECK: %[[SLICE4:.*]] = arith.remui %[[X4]], %c2
// CHECK: arith.muli %[[SLICE4]], %c32
// CHECK: arith.muli %[[SLICE4]], %c128
func.func @d64_dv256(%q: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x256xbf16>,
                     %lse: tensor<?x2x?xf32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x256xbf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %q, %v, %v, %v, %lse : tensor<?x2x?x64xbf16>,
          tensor<?x2x?x64xbf16>, tensor<?x2x?x256xbf16>, tensor<?x2x?x256xbf16>,
          tensor<?x2x?x256xbf16>, tensor<?x2x?xf32>)
      outs(%q, %q, %v : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>,
           tensor<?x2x?x256xbf16>)
      -> tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x256xbf16>
  return %r#0, %r#1, %r#2
      : tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x256xbf16>
}
