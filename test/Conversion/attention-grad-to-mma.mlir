// attn-choose-kernel gives each attention_grad an mma_sync kernel (64 x 64
// tiles, two stages where they fit); attn-attention-grad-to-mma builds its
// launches: dQ (with Delta, left in the workspace) per q-tile, dK and dV
// per kv-tile, then one that zeroes Delta's words again. With a mask_mod,
// the kernels walk the block mask of their tiles.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 | FileCheck %s --check-prefix=CHOOSE
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 --attn-attention-grad-to-mma | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_86 | FileCheck %s --check-prefix=SM86
// RUN: not attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_75 2>&1 | FileCheck %s --check-prefix=SM75
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 --attn-attention-grad-to-mma=block-masks=false --canonicalize | FileCheck %s --check-prefix=NOLISTS

// CHOOSE: attn.attention_grad {{.*}} {causal, kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64>}
// sm_86 has 99 KB of shared memory per block: D = 128 takes one stage.
// SM86: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64, stages = 1>
// SM75: error: 'attn.attention_grad' op has no GPU kernel on sm_75: the backward needs sm_80 or newer (attn-lower-to-cpu computes it)

// CHECK-LABEL: func.func @causal_gqa
// Delta: B * Hq * M words of the zeroed workspace.
// CHECK: %[[B:.*]] = memref.dim %{{.*}}, %c0
// CHECK: %[[H:.*]] = memref.dim %{{.*}}, %c1
// CHECK: %[[M:.*]] = memref.dim %{{.*}}, %c2 :
// CHECK: %[[N:.*]] = memref.dim %{{.*}}, %c2_{{[0-9]+}} : memref<?x2x?x128xbf16>
// CHECK: %[[BH:.*]] = arith.muli %[[B]], %[[H]]
// CHECK: %[[WORDS:.*]] = arith.muli %[[BH]], %[[M]]
// CHECK: %[[DELTA:.*]] = attn.workspace %[[WORDS]] : memref<?xi32>
// The dQ kernel: a block of 4 warps per q-tile of each (head, batch); Q and
// dO, then two stages of K and V tiles, then Delta, in shared memory.
// CHECK: %[[QB:.*]] = arith.ceildivui %[[M]], %c64
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[QB]], %{{.*}} = %[[H]], %{{.*}} = %[[B]]) threads({{.*}}) in (%{{.*}} = %c128{{.*}}) dynamic_shared_memory_size %c{{[0-9]+}}_i32
// CHECK: memref.view {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x64x136xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// Delta = rowsum(dO * O), two threads a row.
// CHECK: vector.fma {{.*}} : vector<8xf32>
// CHECK: vector.reduction <add>
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: memref.store %{{.*}}, %[[DELTA]]
// The kv loop: S = Q K^T and dP = dO V^T on mma.sync, P and dS per
// register (the masks only on steps that need them), dQ += dS K.
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: nvvm.mma.sync
// CHECK: scf.if
// CHECK: arith.cmpi sle
// CHECK: math.exp2
// CHECK: } else {
// CHECK: math.exp2
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// dQ, times the scale, stored as bf16 pairs.
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: vector.store %{{.*}} : memref<?x8x?x128xbf16>, vector<2xbf16>
// CHECK: gpu.terminator
// The dK/dV kernel: a block per kv-tile of each (kv head, batch), stepping
// over the q-tiles of the kv head's four query heads.
// CHECK: %[[KVB:.*]] = arith.ceildivui %[[N]], %c64
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[KVB]], %{{.*}} = %{{.*}}, %{{.*}} = %[[B]])
// L and Delta per column, copied with each step's Q and dO tiles (Delta
// from the scratch buffer), read from shared memory where they are used.
// CHECK: memref.view {{.*}} to memref<2x64xi32, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy %{{.*}}, %{{.*}}, 1, %{{.*}} : memref<?x8x?xf32> to memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %[[DELTA]][%{{.*}}], %{{.*}}, 1, %{{.*}} : memref<?xi32> to memref<2x64xi32, #gpu.address_space<workgroup>>
// CHECK: nvvm.mma.sync
// CHECK: memref.load %{{.*}} : memref<2x64xf32, #gpu.address_space<workgroup>>
// CHECK: memref.load %{{.*}} : memref<2x64xi32, #gpu.address_space<workgroup>>
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: math.exp2
// dV += P^T dO, dK += dS^T Q.
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: vector.store %{{.*}} : memref<?x2x?x128xbf16>, vector<2xbf16>
// CHECK: vector.store %{{.*}} : memref<?x2x?x128xbf16>, vector<2xbf16>
// Delta's words zeroed, 256 a block.
// CHECK: %[[ZB:.*]] = arith.ceildivui %[[WORDS]], %c256
// CHECK: gpu.launch blocks({{.*}}) in (%{{.*}} = %[[ZB]], {{.*}}) threads({{.*}}) in (%{{.*}} = %c256
// CHECK: memref.store %c0_i32, %[[DELTA]]
// CHECK: bufferization.to_tensor
func.func @causal_gqa(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                      %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>,
                      %do: tensor<?x8x?x128xbf16>, %lse: tensor<?x8x?xf32>,
                      %dq: tensor<?x8x?x128xbf16>, %dk: tensor<?x2x?x128xbf16>,
                      %dv: tensor<?x2x?x128xbf16>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %k, %v, %o, %do, %lse : tensor<?x8x?x128xbf16>,
          tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>,
          tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
      outs(%dq, %dk, %dv : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>,
           tensor<?x2x?x128xbf16>) {causal}
      -> tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
  return %r#0, %r#1, %r#2
      : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>
}

// -----

// A mask_mod (and causal): the block mask of 64 x 64 blocks, both sides
// read, for attn-block-masks-to-gpu to build; the dQ kernel walks the kv
// side, the dK/dV kernel the q side.
// CHECK-LABEL: func.func @windowed
// CHECK: %[[BM:.*]] = attn.create_block_mask batch(%c1{{.*}}) heads(%c1{{.*}}) q_len(%{{.*}}) kv_len(%{{.*}}) : <q_block = 64, kv_block = 64> mask_mod
// CHECK: arith.cmpi uge
// CHECK: arith.andi
// CHECK-COUNT-8: attn.block_mask_field {{.*}} of %[[BM]]
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: gpu.launch
func.func @windowed(%q: tensor<?x4x?x64xf16>, %o: tensor<?x4x?x64xf16>,
                    %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %q, %q, %o, %o, %lse : tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%o, %o, %o : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
           tensor<?x4x?x64xf16>) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %c100 = arith.constant 100 : index
        %near = arith.cmpi ule, %d, %c100 : index
        attn.yield %near : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2
      : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// A given block mask of 128 x 128 blocks, one for every head: its lists
// serve both kernels (no other is derived), each listed block walked in
// two 64-row steps, and the line is read once for the group's heads.
// CHECK-LABEL: func.func @given_blocks
// CHECK: %[[BM:.*]] = attn.create_block_mask batch(%c1) heads(%c1)
// CHECK-NOT: attn.create_block_mask
// CHECK-COUNT-8: attn.block_mask_field {{.*}} of %[[BM]]
// The dQ kernel: the q-tile's line is its q-block; step e is entry e / 2,
// 64 (e % 2) rows into its block.
// CHECK: gpu.launch blocks(%[[QX:[^,]*]],
// CHECK: arith.divui %[[QX]], %c2
// CHECK: scf.for
// CHECK: arith.divui %{{.*}}, %c2
// CHECK: arith.muli %{{.*}}, %c128
// CHECK: arith.remui %{{.*}}, %c2
// CHECK: gpu.terminator
// The dK/dV kernel: the same for the kv-tile's kv-block and its q-blocks.
// CHECK: gpu.launch blocks(%[[KX:[^,]*]],
// CHECK: arith.divui %[[KX]], %c2
// CHECK: gpu.terminator
func.func @given_blocks(%q: tensor<?x4x?x64xf16>, %o: tensor<?x4x?x64xf16>,
                        %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<?x4x?x64xf16>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%m)
      : !attn.block_mask<q_block = 128, kv_block = 128> mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %c300 = arith.constant 300 : index
        %near = arith.cmpi ule, %d, %c300 : index
        attn.yield %near : i1
      }
  %r:3 = attn.attention_grad
      ins(%q, %q, %q, %o, %o, %lse : tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%o, %o, %o : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
           tensor<?x4x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %c300 = arith.constant 300 : index
        %near = arith.cmpi ule, %d, %c300 : index
        attn.yield %near : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2
      : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// Without its block lists (block-masks=false), a mask_mod is evaluated on
// every step of both kernels: no step is taken as unmasked.
// NOLISTS-LABEL: func.func @prefix_no_lists
// NOLISTS-NOT: attn.create_block_mask
// NOLISTS: gpu.launch
// NOLISTS-NOT: } else {
// NOLISTS: return
func.func @prefix_no_lists(%q: tensor<?x4x?x64xf16>, %o: tensor<?x4x?x64xf16>,
                           %lse: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %q, %q, %o, %o, %lse : tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%o, %o, %o : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
           tensor<?x4x?x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c20 = arith.constant 20 : index
        %prefix = arith.cmpi ule, %j, %c20 : index
        %below = arith.cmpi ule, %j, %i : index
        %keep = arith.ori %prefix, %below : i1
        attn.yield %keep : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2
      : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

// Head dims over 128 on sm_86's 99 KB: 64 x 64 tiles do not fit even in
// one stage, 32 x 32 tiles do (one stage at D = 256, two at D = 192).
// SM86-LABEL: func.func @d256
// SM86: kernel = #attn.kernel<mma_sync, q_tile = 32, kv_tile = 32, stages = 1>
// SM86-LABEL: func.func @d192
// SM86: kernel = #attn.kernel<mma_sync, q_tile = 32, kv_tile = 32>
func.func @d256(%q: tensor<?x4x?x256xbf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>) {
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>)
      -> tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>, tensor<?x4x?x256xbf16>
}
func.func @d192(%q: tensor<?x4x?x192xf16>, %l: tensor<?x4x?xf32>)
    -> (tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>) {
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>)
      {causal}
      -> tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>, tensor<?x4x?x192xf16>
}

// -----

// Gradients of captured tensors: the dQ kernel adds each element's terms
// exactly (i64 words of the workspace after Delta's, 33 per element), by
// element for a read that varies with q and kv, and as the warp's sum for
// one that does not (the slope of the block's head); a launch per tensor
// turns the words into f32 and zeroes them again.
// CHECK-LABEL: func.func @learned_bias
// CHECK: %[[EVEN:.*]] = arith.muli %{{.*}}, %c2
// CHECK: %[[SLOPES:.*]] = tensor.dim %{{.*}} : tensor<4xf32>
// CHECK: %[[SLOPEWORDS:.*]] = arith.muli %{{.*}}, %c66
// CHECK: %[[AFTER:.*]] = arith.addi %[[EVEN]], %[[SLOPEWORDS]]
// CHECK: tensor.dim %{{.*}} : tensor<4x?xf32>
// CHECK: %[[BIASWORDS:.*]] = arith.muli %{{.*}}, %c66
// CHECK: %[[WORDS:.*]] = arith.addi %[[AFTER]], %[[BIASWORDS]]
// CHECK: attn.workspace %[[WORDS]] : memref<?xi32>
// CHECK: gpu.launch
// CHECK: scf.if
// CHECK: llvm.inline_asm has_side_effects "red.add.u64 [$0], $1;"
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32
// CHECK: llvm.inline_asm has_side_effects "red.add.u64 [$0], $1;"
// CHECK: gpu.launch
// CHECK-NOT: red.add
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: memref.store %{{.*}} : memref<4xf32>
// CHECK: gpu.launch
// CHECK: memref.store %{{.*}} : memref<4x?xf32>
func.func @learned_bias(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>,
                        %slopes: tensor<4xf32>, %bias: tensor<4x?xf32>,
                        %dslopes: tensor<4xf32>, %dbias: tensor<4x?xf32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
        tensor<4xf32>, tensor<4x?xf32>) {
  %r:5 = attn.attention_grad
      ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
          tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
          tensor<?x4x?xf32>)
      wrt(%slopes, %bias : tensor<4xf32>, tensor<4x?xf32>)
      outs(%q, %q, %q, %dslopes, %dbias : tensor<?x4x?x64xf16>,
           tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<4xf32>,
           tensor<4x?xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<4xf32>
        %y = arith.mulf %s, %slope : f32
        %d = arith.subi %i, %j : index
        %bd = tensor.extract %bias[%h, %d] : tensor<4x?xf32>
        %z = arith.addf %y, %bd : f32
        attn.yield %z : f32
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
         tensor<4xf32>, tensor<4x?xf32>
  return %r#0, %r#1, %r#2, %r#3, %r#4
      : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>,
        tensor<4xf32>, tensor<4x?xf32>
}
