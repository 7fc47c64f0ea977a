// attn-lower-to-nvvm with the SIMT kernels (strategy=simt; f16 attention
// goes to tensor cores by default: nvvm-mma-stages.mlir), stopped after each
// stage.
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=tile" | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=decompose" | FileCheck %s --check-prefix=DECOMPOSE
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=bufferize" | FileCheck %s --check-prefix=BUFFERIZE
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=gpu" | FileCheck %s --check-prefix=GPU
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=nvvm" | FileCheck %s --check-prefix=NVVM
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_80" | FileCheck %s --check-prefix=BINARY80
// RUN: attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 q-tile=128 kv-tile=32 threads=256" | FileCheck %s --check-prefix=BINARY90
// Bad options are reported, not crashed on.
// RUN: not attn-opt %s --attn-lower-to-nvvm 2>&1 | FileCheck %s --check-prefix=NOCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_70" 2>&1 | FileCheck %s --check-prefix=OLDCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_80a" 2>&1 | FileCheck %s --check-prefix=UNKNOWNCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_91" 2>&1 | FileCheck %s --check-prefix=UNKNOWNCHIP
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 threads=2048" 2>&1 | FileCheck %s --check-prefix=BIGBLOCK
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 q-tile=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=BIGBLOCK
// Tiles too large for any GPU's shared memory are refused at the grid.
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 q-tile=512 kv-tile=256" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 until=ptx" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not attn-opt %s --attn-lower-to-nvvm="strategy=simt chip=sm_90 format=fatbin" 2>&1 | FileCheck %s --check-prefix=FORMAT

// The grid of q-tiles; each block's attention tile is shared by its threads.
// TILE: scf.forall {{.*}} step (1, 1, 64)
// TILE: attn.attention {{.*}} : tensor<1x1x?x64xf16>
// TILE: {mapping = [#gpu.block<z>, #gpu.block<y>, #gpu.block<x>]}

// DECOMPOSE-NOT: {{= attn\.|^ *attn\.}}
// DECOMPOSE: affine.min
// DECOMPOSE: math.exp2

// The block's temporaries in workgroup memory with static shapes; the Q and
// K/V tiles staged there (rows of 128 bytes padded by 4).
// BUFFERIZE-NOT: memref.alloc(
// BUFFERIZE: memref.alloc() : memref<64x66xf16, #gpu.address_space<workgroup>>
// BUFFERIZE: linalg.copy ins(%{{.*}} : memref<?x64xf16, strided<[64, 1], offset: ?>>) outs(%{{.*}} : memref<?x64xf16, strided<[66, 1]>, #gpu.address_space<workgroup>>)
// BUFFERIZE: memref.alloc() {{.*}} : memref<64x64xf32, #gpu.address_space<workgroup>>
// BUFFERIZE: scf.for
// BUFFERIZE: linalg.copy ins(%{{.*}} : memref<?x64xf16, strided<[64, 1], offset: ?>>) outs(%{{.*}} : memref<?x64xf16, strided<[66, 1]>, #gpu.address_space<workgroup>>)
// BUFFERIZE: linalg.generic

// Dynamic shared memory above 48 KiB; loops strided over 128 threads, a
// barrier after each.
// GPU: gpu.launch_func @causal_gqa_kernel::@causal_gqa_kernel blocks in ({{.*}}) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %c76288_i32
// GPU: gpu.module @causal_gqa_kernel
// GPU: gpu.func @causal_gqa_kernel({{.*}}) kernel
// GPU: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// GPU: memref.view %[[SHARED]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x66xf16, #gpu.address_space<workgroup>>
// GPU: scf.for %{{.*}} = %thread_id_x to %{{.*}} step %c128
// GPU: gpu.barrier

// NVVM: gpu.module @causal_gqa_kernel [#nvvm.target<O = 3, chip = "sm_90">]
// NVVM: llvm.func @causal_gqa_kernel
// NVVM: nvvm.read.ptx.sreg.tid.x
// NVVM: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// NVVM-NOT: __nv_

// BINARY80: gpu.binary @causal_gqa_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_80">, {{.*}}assembly = "{{.*}}.target sm_80
// BINARY90: threads in (%c256, %c1, %c1)
// BINARY90: gpu.binary @causal_gqa_kernel {{ *}}[#gpu.object<#nvvm.target<O = 3, chip = "sm_90">, {{.*}}assembly = "{{.*}}.target sm_90

// NOCHIP: attn-lower-to-nvvm: missing target chip: pass chip=sm_80 or chip=sm_90
// OLDCHIP: attn-lower-to-nvvm: unsupported chip 'sm_70': the kernels need sm_75 or newer, one of sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a,
// UNKNOWNCHIP: attn-lower-to-nvvm: unsupported chip 'sm_{{80a|91}}': the kernels need sm_75 or newer
// BIGBLOCK: attn-lower-to-nvvm: need 0 <= q-tile <= 65536, 0 <= kv-tile <= 65536 (0: chosen to fit the chip) and 0 < threads <= 1024
// SMEM: error: 'scf.forall' op needs {{[0-9]+}} bytes of shared memory per block; the target has 232448 (use smaller tiles)
// STAGE: attn-lower-to-nvvm: unknown stage 'ptx'
// FORMAT: attn-lower-to-nvvm: format must be isa or bin, not 'fatbin'

func.func @causal_gqa(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                      %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {causal} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}
