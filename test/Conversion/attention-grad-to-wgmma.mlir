// On sm_90a, attn-choose-kernel gives each attention_grad a wgmma kernel
// (64 x 64 tiles, two stages) unless the strategy asks for mma.sync; the
// launches are those of the mma.sync kernel (attention-grad-to-mma.mlir),
// with the tiles in wgmma's swizzle layout, made visible to it after each
// copy, and every contraction a warpgroup's wgmma: S and dP from two
// shared-memory descriptors (P computed while dP runs), dQ (or dK and dV)
// with dS (and P) from the registers.
// RUN: attn-opt %s --attn-choose-kernel=chip=sm_90a | FileCheck %s --check-prefix=CHOOSE
// RUN: attn-opt %s --attn-choose-kernel="chip=sm_90a strategy=mma-sync" | FileCheck %s --check-prefix=MMASYNC
// RUN: attn-opt %s --attn-choose-kernel=chip=sm_90a --attn-attention-grad-to-mma | FileCheck %s
// RUN: attn-opt %s --attn-choose-kernel=chip=sm_90a --attn-attention-grad-to-mma | FileCheck %s --check-prefix=OCCUPANCY

// CHOOSE: attn.attention_grad {{.*}} {causal, kernel = #attn.kernel<wgmma, q_tile = 64, kv_tile = 64>}
// MMASYNC: attn.attention_grad {{.*}} {causal, kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64>}

// CHECK-LABEL: func.func @causal_gqa
// The dQ kernel: one warpgroup per q-tile. Q and dO as two swizzled tiles
// of 64 columns each, two stages of K and V, then Delta.
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128{{.*}})
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<2x2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: memref.view {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy {{.*}} : memref<?x8x?x128xbf16> to memref<2x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK: nvvm.cp.async.wait.group 0
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK-NEXT: gpu.barrier
// S = Q K^T and dP = dO V^T: 8 k-steps each, a group each. P is computed
// once S has landed, while dP's group runs; dS once dP has.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0, 0;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: scf.if
// CHECK: math.exp2
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: arith.subf
// CHECK: } else {
// CHECK: math.exp2
// CHECK: wgmma.wait_group.sync.aligned 0;
// dQ += dS K: A from the registers, K MN-major (transposed).
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
// CHECK: gpu.terminator
// The dK/dV kernel: S^T and dP^T, then dV += P^T dO and dK += dS^T Q in
// one group.
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK-COUNT-16: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: wgmma.wait_group.sync.aligned 1;
// CHECK: math.exp2
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK-NEXT: wgmma.wait_group.sync.aligned 0;
// CHECK: gpu.terminator
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


// At head dims up to 64 the dK/dV kernel is built for three blocks an SM
// (attn-min-blocks-per-sm makes the mark its nvvm.minctasm), the dQ
// kernel as its registers allow; at 128 neither is marked.
// OCCUPANCY-LABEL: func.func @causal_gqa
// OCCUPANCY-NOT: attn.min_blocks_per_sm
// OCCUPANCY-LABEL: func.func @d64
// OCCUPANCY: gpu.dynamic_shared_memory : memref<?xi8
// OCCUPANCY: gpu.dynamic_shared_memory {attn.min_blocks_per_sm = 3 : i32} : memref<?xi8
func.func @d64(%q: tensor<?x8x?x64xf16>, %k: tensor<?x8x?x64xf16>,
               %v: tensor<?x8x?x64xf16>, %o: tensor<?x8x?x64xf16>,
               %do: tensor<?x8x?x64xf16>, %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>) {
  %r:3 = attn.attention_grad
      ins(%q, %k, %v, %o, %do, %lse : tensor<?x8x?x64xf16>,
          tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>,
          tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?xf32>)
      outs(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>,
           tensor<?x8x?x64xf16>)
      -> tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>
  return %r#0, %r#1, %r#2
      : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>
}
