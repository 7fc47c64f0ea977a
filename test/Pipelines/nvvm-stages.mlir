// attn-lower-to-nvvm, stopped after each stage.
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=tile" | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=decompose" | FileCheck %s --check-prefix=DECOMPOSE
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=bufferize" | FileCheck %s --check-prefix=BUFFERIZE
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=gpu" | FileCheck %s --check-prefix=GPU
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=nvvm" | FileCheck %s --check-prefix=NVVM
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_80" | FileCheck %s --check-prefix=BINARY80
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 q-tile=128 kv-tile=32" | FileCheck %s --check-prefix=BINARY90
// Bad options are reported, not crashed on.
// RUN: not attn-opt %s --attn-lower-to-nvvm 2>&1 | FileCheck %s --check-prefix=NOCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm=chip=sm_70 2>&1 | FileCheck %s --check-prefix=OLDCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90 q-tile=2048" 2>&1 | FileCheck %s --check-prefix=BIGTILE
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=ptx" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90 format=fatbin" 2>&1 | FileCheck %s --check-prefix=FORMAT

// TILE: scf.forall {{.*}} step (1, 1, 64)
// TILE: scf.forall
// TILE: attn.attention {{.*}} : tensor<1x1x1x64xf16>
// TILE: {mapping = [#gpu.thread<x>]}
// TILE: {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}

// DECOMPOSE-NOT: attn.
// DECOMPOSE: affine.min
// DECOMPOSE: math.exp2

// BUFFERIZE-NOT: memref.alloc(
// BUFFERIZE-NOT: memref.alloc()
// BUFFERIZE: memref.alloca() {{.*}} : memref<1x64xf32>

// GPU: gpu.launch_func @causal_gqa_kernel::@causal_gqa_kernel blocks in ({{.*}}) threads in (%c64, %c1, %c1)
// GPU: gpu.module @causal_gqa_kernel
// GPU: gpu.func @causal_gqa_kernel({{.*}}) kernel

// NVVM: gpu.module @causal_gqa_kernel [#nvvm.target<O = 3, chip = "sm_90">]
// NVVM: llvm.func @causal_gqa_kernel
// NVVM: nvvm.read.ptx.sreg.tid.x
// NVVM: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// NVVM-NOT: __nv_

// BINARY80: gpu.binary @causal_gqa_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, {{.*}}assembly = "{{.*}}.target sm_80
// BINARY90: threads in (%c128, %c1, %c1)
// BINARY90: gpu.binary @causal_gqa_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "{{.*}}.target sm_90

// NOCHIP: attn-lower-to-nvvm: missing target chip: pass chip=sm_80 or chip=sm_90
// OLDCHIP: attn-lower-to-nvvm: unsupported chip 'sm_70': the kernels need sm_75 or newer
// BIGTILE: attn-lower-to-nvvm: need 0 < q-tile <= 1024
// STAGE: attn-lower-to-nvvm: unknown stage 'ptx'
// FORMAT: attn-lower-to-nvvm: format must be isa or bin, not 'fatbin'

func.func @causal_gqa(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                      %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {causal} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}
