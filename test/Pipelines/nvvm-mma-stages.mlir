// attn-lower-to-nvvm with the mma.sync tensor-core kernel (strategy=auto's
// choice for f16/bf16 from sm_80 on, but for sm_90a's wgmma), stopped after
// each stage; sm_75 has no cp.async and keeps the SIMT kernel
// (kernel-strategy.mlir has every strategy and refusal).
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=tile" | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=bufferize" | FileCheck %s --check-prefix=BUFFERIZE
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=gpu" | FileCheck %s --check-prefix=GPU
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=nvvm" | FileCheck %s --check-prefix=NVVM
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_80" | FileCheck %s --check-prefix=BINARY
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_75 until=tile" | FileCheck %s --check-prefix=SM75

// TILE: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c128
// TILE: nvgpu.ldmatrix
// TILE: nvvm.mma.sync

// BUFFERIZE-NOT: tensor<
// BUFFERIZE: gpu.launch
// BUFFERIZE: nvgpu.device_async_copy

// The launch outlined: one kernel for every B, H, M and N, its block size
// known to the compiler.
// GPU: gpu.launch_func @causal_bf16_kernel::@causal_bf16_kernel
// GPU: gpu.module @causal_bf16_kernel
// GPU: gpu.func @causal_bf16_kernel({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>
// GPU: nvgpu.ldmatrix

// NVVM: llvm.func @causal_bf16_kernel
// NVVM: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// NVVM: nvvm.ldmatrix
// NVVM: nvvm.mma.sync
// NVVM: nvvm.shfl.sync bfly

// BINARY: gpu.binary @causal_bf16_kernel
// BINARY-SAME: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// SM75-NOT: gpu.launch
// SM75: scf.forall
// SM75: attn.attention

func.func @causal_bf16(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>,
                       %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>)
    -> tensor<?x8x?x64xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>)
      outs(%o : tensor<?x8x?x64xbf16>) {causal}
      -> tensor<?x8x?x64xbf16>
  return %r : tensor<?x8x?x64xbf16>
}
