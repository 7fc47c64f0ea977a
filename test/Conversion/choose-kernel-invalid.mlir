// attn-choose-kernel refuses a kernel given in the IR that the chip cannot
// run, naming the op and why.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 --verify-diagnostics

// wgmma is sm_90a's alone.
func.func @given_wgmma(%q: tensor<?x8x?x64xf16>, %o: tensor<?x8x?x64xf16>)
    -> tensor<?x8x?x64xf16> {
  // expected-error @+1 {{has a wgmma kernel, which needs wgmma: only sm_90a has it, not sm_80}}
  %r = attn.attention ins(%q, %q, %q : tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>, tensor<?x8x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {kernel = #attn.kernel<wgmma, q_tile = 128, kv_tile = 128>} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}

// -----

// D = 256 in kv-tiles of 256, double-buffered, needs more shared memory
// than any chip has.
func.func @too_big(%q: tensor<?x8x?x256xf16>, %o: tensor<?x8x?x256xf16>)
    -> tensor<?x8x?x256xf16> {
  // expected-error @+1 {{bytes of shared memory, more than sm_80's 166912 per block}}
  %r = attn.attention ins(%q, %q, %q : tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>, tensor<?x8x?x256xf16>)
      outs(%o : tensor<?x8x?x256xf16>) {kernel = #attn.kernel<mma_sync, q_tile = 256, kv_tile = 256>} -> tensor<?x8x?x256xf16>
  return %r : tensor<?x8x?x256xf16>
}

