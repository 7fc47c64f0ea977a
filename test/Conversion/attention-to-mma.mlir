// attn-choose-kernel picks each op's kernel; the pass builds the
// tensor-core ones.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_90 --attn-attention-to-mma | FileCheck %s
// RUN: not attn-opt %s --attn-choose-kernel="chip=sm_90 q-tile=24" 2>&1 | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90 stages=1 warps=8" --attn-attention-to-mma | FileCheck %s --check-prefix=STAGES
// RUN: not attn-opt %s --attn-choose-kernel="chip=sm_90 q-tile=64 warps=8" 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: not attn-opt %s --attn-choose-kernel="chip=sm_90 stages=3" 2>&1 | FileCheck %s --check-prefix=WARPS3
// strategy=wgmma refuses the f32 and D = 48 ops below (stderr); the others
// print.
// RUN: not attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90a strategy=wgmma" --attn-attention-to-mma | FileCheck %s --check-prefix=WGMMA
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_90a --attn-attention-to-mma | FileCheck %s --check-prefix=AUTO-WGMMA
// RUN: attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90a stages=1" --attn-attention-to-mma | FileCheck %s --check-prefix=WGMMA-STAGES

// bf16, D = 64, causal, with the logsumexp: one launch over (q-blocks,
// heads, batches), its tiles recorded on it.
// CHECK-LABEL: func.func @causal_bf16
// CHECK: %[[M:.*]] = memref.dim %{{.*}}, %c2
// CHECK: %[[QB:.*]] = arith.ceildivui %[[M]], %c128
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[QB]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads({{.*}}) in (%{{.*}} = %c128{{.*}}, {{.*}}) dynamic_shared_memory_size %c55296_i32
// Q, then K_0, copied with 16-byte cp.async (zero-filled past M or N).
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x8x?x64xbf16> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy {{.*}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// The warp's Q fragments, once.
// CHECK: nvvm.cp.async.wait.group 1
// CHECK-NEXT: gpu.barrier
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<128x72xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// The kv loop: V_j copied, K_j waited for, S = Q K^T on mma.sync (bf16 as
// i32 pairs), K_j+1 prefetched.
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy {{.*}} to memref<2x64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: nvvm.cp.async.commit.group
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<2x64x72xbf16
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: nvvm.cp.async.commit.group
// Tiles that the diagonal cuts (or past N) are masked; those below are not.
// CHECK: %[[MASKED:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : index
// CHECK: scf.if %[[MASKED]] -> (f32,
// CHECK: arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// The online softmax on the fragments: quad max, exp2 with the scale folded
// in, the accumulator rescaled, P packed as PV's A operand.
// CHECK: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: math.exp2
// CHECK: math.fma
// CHECK: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvvm.cp.async.wait.group 1
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// Epilogue: the quad's row sums, the rows staged in shared memory and
// stored in 16-byte vectors, the natural-log logsumexp.
// CHECK: nvvm.cp.async.wait.group 0
// CHECK: gpu.barrier
// CHECK: vector.store %{{.*}} : memref<128x72xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK: nvvm.bar.warp.sync
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x8x?x64xbf16>, vector<8xbf16>
// CHECK: math.log2
// CHECK: memref.store %{{.*}} : memref<?x8x?xf32>
// One stage: K and V in one buffer each; in each step the copy of V_j waits
// for the barrier after P V_j-1, and that of K_j+1 for the one after S_j.
// Eight warps of two bands: 256 rows.
// STAGES-LABEL: func.func @causal_bf16
// STAGES: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{.*}}, {{.*}}) dynamic_shared_memory_size %c55296_i32
// STAGES: scf.for
// STAGES: nvvm.cp.async.wait.group 0
// STAGES-NEXT: gpu.barrier
// STAGES: nvgpu.device_async_copy {{.*}} to memref<1x64x72xbf16, #gpu.address_space<workgroup>>
// STAGES: nvvm.mma.sync
// STAGES: nvvm.cp.async.wait.group 0
// STAGES-NEXT: gpu.barrier
// STAGES: scf.if
// STAGES: nvgpu.device_async_copy {{.*}} to memref<1x64x72xbf16, #gpu.address_space<workgroup>>
// With wgmma (sm_90a): two warpgroups of 64 rows, Q, K and V in the
// 128-byte swizzle layout from a 1024-byte-aligned base, S = Q K^T from
// two shared-memory descriptors, O += P V with P from registers and V
// MN-major (transposed). Step 0 is peeled; step j issues S_j, then
// O += P_j-1 V_j-1, waits for S_j alone (wait 1), runs the softmax and
// then waits for O; the last P V follows the loop. Each wait returns the
// accumulators it waited for.
// WGMMA-STAGES-LABEL: func.func @causal_bf16
// The wgmma loop keeps two K/V buffers: one stage stays on mma.sync.
// WGMMA-STAGES: nvvm.mma.sync
// WGMMA-LABEL: func.func @causal_bf16
// WGMMA: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{.*}}) dynamic_shared_memory_size %c84992_i32
// WGMMA: memref.extract_aligned_pointer_as_index
// WGMMA: memref.view {{.*}} to memref<1x128x64xbf16, #gpu.address_space<workgroup>>
// WGMMA: memref.view {{.*}} to memref<128x72xbf16, #gpu.address_space<workgroup>>
// WGMMA: memref.view {{.*}} to memref<2x1x128x64xbf16, #gpu.address_space<workgroup>>
// WGMMA: arith.xori
// WGMMA: nvgpu.device_async_copy {{.*}} to memref<1x128x64xbf16, #gpu.address_space<workgroup>>
// WGMMA: scf.if
// WGMMA: nvvm.cp.async.wait.group 0
// WGMMA-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// WGMMA-NEXT: gpu.barrier
// WGMMA: nvvm.wgmma.fence.aligned
// WGMMA: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, $128, $129, p, 1, 1, 0, 0;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;"
// WGMMA: scf.for
// WGMMA: gpu.barrier
// WGMMA: llvm.inline_asm has_side_effects {{.*}}m64n128k16.f32.bf16.bf16 {{.*}}, $128, $129, p, 1, 1, 0, 0;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: nvvm.wgmma.fence.aligned
// WGMMA: llvm.inline_asm has_side_effects {{.*}}m64n64k16.f32.bf16.bf16 {{.*}}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 1;"
// WGMMA: math.exp2
// WGMMA: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;"
// WGMMA: scf.yield
// WGMMA: scf.if
// WGMMA: llvm.inline_asm has_side_effects {{.*}}m64n64k16.f32.bf16.bf16
// WGMMA: nvvm.wgmma.commit.group.sync.aligned
// WGMMA-NEXT: llvm.inline_asm has_side_effects "wgmma.wait_group.sync.aligned 0;"
func.func @causal_bf16(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                       %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>,
                       %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
      outs(%o, %lse : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>) {causal}
      -> tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>
}

// -----

// f16 with regions: mask_mod and score_mod (with a captured tensor) are
// inlined per register; f16 pairs are the mma operands as they are. The
// regions' registers leave one band per warp: 8 warps of 16 rows.
// CHECK-LABEL: func.func @regions_f16
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256
// CHECK: nvvm.mma.sync {{.*}}shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: tensor.extract %{{.*}}[%{{.*}}] : tensor<?xf32>
// CHECK: math.tanh
func.func @regions_f16(%q: tensor<1x4x?x128xf16>, %k: tensor<1x4x?x128xf16>,
                       %v: tensor<1x4x?x128xf16>, %o: tensor<1x4x?x128xf16>,
                       %slopes: tensor<?xf32>) -> tensor<1x4x?x128xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x?x128xf16>, tensor<1x4x?x128xf16>, tensor<1x4x?x128xf16>)
      outs(%o : tensor<1x4x?x128xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %slope = tensor.extract %slopes[%h] : tensor<?xf32>
        %t = math.tanh %s : f32
        %y = arith.mulf %t, %slope : f32
        attn.yield %y : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x4x?x128xf16>
  return %r : tensor<1x4x?x128xf16>
}

// -----

// A mask_mod whose values provably fit in i32 (positions are below 2^31)
// runs in i32 on the partial blocks; one whose values may not (a position
// minus a captured i32) keeps index arithmetic. Either way a score takes one
// select on its whole keep predicate, frozen so that the NVPTX backend does
// not split it into a select per condition.
// CHECK-LABEL: func.func @mask_in_i32
// CHECK: gpu.launch
// CHECK: %[[D:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// CHECK: %[[NEAR:.*]] = arith.cmpi ult, %[[D]], %{{.*}} : i32
// CHECK: %[[KEEP:.*]] = arith.andi %{{.*}}, %[[NEAR]] : i1
// CHECK: %[[WHOLE:.*]] = llvm.freeze %[[KEEP]] : i1
// CHECK: arith.select %[[WHOLE]], %{{.*}}, %{{.*}} : f32
// CHECK-LABEL: func.func @mask_in_index
// CHECK: gpu.launch
// CHECK: %[[START:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK: arith.subi %{{.*}}, %[[START]] : index
// CHECK: %[[WHOLE:.*]] = llvm.freeze %{{.*}} : i1
// CHECK: arith.select %[[WHOLE]], %{{.*}}, %{{.*}} : f32
func.func @mask_in_i32(%q: tensor<1x4x?x64xf16>, %k: tensor<1x4x?x64xf16>,
                       %v: tensor<1x4x?x64xf16>, %o: tensor<1x4x?x64xf16>)
    -> tensor<1x4x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x4x?x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %w = arith.constant 100 : index
        %d = arith.subi %qi, %kv : index
        %near = arith.cmpi ult, %d, %w : index
        attn.yield %near : i1
      }
      -> tensor<1x4x?x64xf16>
  return %r : tensor<1x4x?x64xf16>
}

func.func @mask_in_index(%q: tensor<1x4x?x64xf16>, %k: tensor<1x4x?x64xf16>,
                         %v: tensor<1x4x?x64xf16>, %o: tensor<1x4x?x64xf16>,
                         %starts: tensor<?xi32>) -> tensor<1x4x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x4x?x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %s = tensor.extract %starts[%b] : tensor<?xi32>
        %si = arith.index_cast %s : i32 to index
        %local = arith.subi %qi, %si : index
        %keep = arith.cmpi uge, %local, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x4x?x64xf16>
  return %r : tensor<1x4x?x64xf16>
}

// -----

// f32 stays for the SIMT lowering (tf32 would miss the f32 tolerance), and
// so do head dims that are not multiples of 16.
// CHECK-LABEL: func.func @not_served
// CHECK-NOT: gpu.launch
// CHECK: attn.attention
// CHECK: attn.attention
func.func @not_served(%q: tensor<1x1x?x64xf32>, %o: tensor<1x1x?x64xf32>,
                      %h: tensor<1x1x?x24xf16>, %ho: tensor<1x1x?x24xf16>)
    -> (tensor<1x1x?x64xf32>, tensor<1x1x?x24xf16>) {
  %a = attn.attention ins(%q, %q, %q : tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
      outs(%o : tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32>
  %b = attn.attention ins(%h, %h, %h : tensor<1x1x?x24xf16>, tensor<1x1x?x24xf16>, tensor<1x1x?x24xf16>)
      outs(%ho : tensor<1x1x?x24xf16>) -> tensor<1x1x?x24xf16>
  return %a, %b : tensor<1x1x?x64xf32>, tensor<1x1x?x24xf16>
}

// WARPS: attn-choose-kernel: warps must be up to 32, with q-tile given one or two 16-row bands each, and stages 1 or 2 (0: chosen), got 8 warps for q-tile 64 and 0 stages
// WARPS3: got 0 warps for q-tile 0 and 3 stages
// TILE: attn-choose-kernel: the tensor-core kernels need q-tile and kv-tile to be multiples of 16 (strategy=simt takes others), got 24 and 0

// -----

// Head dims other than 16, 32, 64, 128 and 256 stay on mma.sync under
// strategy=auto on sm_90a, where the others take the warp-specialized
// kernel.
// AUTO-WGMMA-LABEL: func.func @causal_bf16
// AUTO-WGMMA: nvvm.setmaxregister
// AUTO-WGMMA-LABEL: func.func @narrow_head_dim
// AUTO-WGMMA-NOT: wgmma
// AUTO-WGMMA: nvvm.mma.sync
// AUTO-WGMMA-NOT: wgmma
// AUTO-WGMMA: return
func.func @narrow_head_dim(%q: tensor<1x2x?x48xbf16>, %k: tensor<1x2x?x48xbf16>,
                           %v: tensor<1x2x?x48xbf16>, %o: tensor<1x2x?x48xbf16>)
    -> tensor<1x2x?x48xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x48xbf16>, tensor<1x2x?x48xbf16>, tensor<1x2x?x48xbf16>)
       outs(%o : tensor<1x2x?x48xbf16>) -> tensor<1x2x?x48xbf16>
  return %r : tensor<1x2x?x48xbf16>
}
