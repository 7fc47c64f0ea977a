// attn-choose-kernel records each op's kernel for the chip, keeps one
// already chosen when the chip runs it, and refuses one it cannot run.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 | FileCheck %s --check-prefix=SM80
// RUN: attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_80 q-tile=64 kv-tile=32" | FileCheck %s --check-prefix=GIVEN
// RUN: not attn-opt %s --attn-choose-kernel 2>&1 | FileCheck %s --check-prefix=NOCHIP
// RUN: not attn-opt %s --attn-choose-kernel=chip=sm_70 2>&1 | FileCheck %s --check-prefix=OLDCHIP
// RUN: not attn-opt %s --attn-choose-kernel="chip=sm_80 q-tile=48 bands=2" 2>&1 | FileCheck %s --check-prefix=BANDS
// Given tiles that no tensor-core kernel fits are an error under auto too,
// never a silent fallback to SIMT.
// RUN: not attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_86 q-tile=256 kv-tile=256" 2>&1 | FileCheck %s --check-prefix=NOFIT

// SM90A-LABEL: func.func @bf16
// SM90A: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128, query_buffers = 2, producer_registers = 40, consumer_registers = 232>
// SM80-LABEL: func.func @bf16
// SM80: kernel = #attn.kernel<mma_sync, q_tile = 128, kv_tile = 32, bands = 2>
// GIVEN-LABEL: func.func @bf16
// GIVEN: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 32, bands = 2>
// GIVEN-LABEL: func.func @f32
// GIVEN: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 32>
// NOCHIP: attn-choose-kernel: missing chip: pass chip=sm_80 or chip=sm_90a
// OLDCHIP: attn-choose-kernel: unsupported chip 'sm_70': the kernels need one of sm_75
// NOFIT: error: 'attn.attention' op has no mma.sync tiles that fit 101376 bytes of shared memory per block (D = 128, Dv = 128, q-tile 256, kv-tile 256
// BANDS: attn-choose-kernel: q-tile must be up to 512 (a multiple of 32 with bands=2), kv-tile up to 256 and bands 1 or 2 (0: chosen), got 48, 0 and 2
func.func @bf16(%q: tensor<?x8x?x128xbf16>, %o: tensor<?x8x?x128xbf16>)
    -> tensor<?x8x?x128xbf16> {
  %r = attn.attention ins(%q, %q, %q : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
      outs(%o : tensor<?x8x?x128xbf16>) {causal} -> tensor<?x8x?x128xbf16>
  return %r : tensor<?x8x?x128xbf16>
}

// -----

// A kernel given in the IR is kept (sm_90a and sm_80 both run mma.sync).
// SM90A-LABEL: func.func @given
// SM90A: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 16, stages = 1>
// SM80-LABEL: func.func @given
// SM80: kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 16, stages = 1>
func.func @given(%q: tensor<?x8x?x64xf16>, %o: tensor<?x8x?x64xf16>)
    -> tensor<?x8x?x64xf16> {
  %r = attn.attention ins(%q, %q, %q : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 16, stages = 1>} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}

// -----

// f32 takes the SIMT kernel, with the largest tiles that fit.
// SM90A-LABEL: func.func @f32
// SM90A: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 64>
// SM80-LABEL: func.func @f32
// SM80: kernel = #attn.kernel<simt, q_tile = 64, kv_tile = 64>
func.func @f32(%q: tensor<?x8x?x64xf32>, %o: tensor<?x8x?x64xf32>)
    -> tensor<?x8x?x64xf32> {
  %r = attn.attention ins(%q, %q, %q : tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x8x?x64xf32>)
      outs(%o : tensor<?x8x?x64xf32>) -> tensor<?x8x?x64xf32>
  return %r : tensor<?x8x?x64xf32>
}

// -----

// Head dims 32 and 16 take wgmma in the 64- and 32-byte swizzle layouts;
// D = 16 without causal keeps mma.sync, measured faster there.
// SM90A-LABEL: func.func @small_head_dims
// SM90A: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128, query_buffers = 2, producer_registers = 40, consumer_registers = 232>
// SM90A: kernel = #attn.kernel<wgmma_ws, q_tile = 128, kv_tile = 128, query_buffers = 2, producer_registers = 40, consumer_registers = 232>
// SM90A: kernel = #attn.kernel<mma_sync,
func.func @small_head_dims(%q32: tensor<?x8x?x32xbf16>, %o32: tensor<?x8x?x32xbf16>,
                           %q16: tensor<?x8x?x16xf16>, %o16: tensor<?x8x?x16xf16>)
    -> (tensor<?x8x?x32xbf16>, tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>) {
  %a = attn.attention ins(%q32, %q32, %q32 : tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16>, tensor<?x8x?x32xbf16>)
      outs(%o32 : tensor<?x8x?x32xbf16>) -> tensor<?x8x?x32xbf16>
  %b = attn.attention ins(%q16, %q16, %q16 : tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>)
      outs(%o16 : tensor<?x8x?x16xf16>) {causal} -> tensor<?x8x?x16xf16>
  %c = attn.attention ins(%q16, %q16, %q16 : tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>)
      outs(%o16 : tensor<?x8x?x16xf16>) -> tensor<?x8x?x16xf16>
  return %a, %b, %c : tensor<?x8x?x32xbf16>, tensor<?x8x?x16xf16>, tensor<?x8x?x16xf16>
}
