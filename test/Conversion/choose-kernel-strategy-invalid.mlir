// RUN: attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90 strategy=mma-sync" --verify-diagnostics
// RUN: attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90a strategy=wgmma-ws" --verify-diagnostics=only-expected
// RUN: not attn-opt %s --split-input-file --attn-choose-kernel="chip=sm_90 strategy=wgmma" 2>&1 | FileCheck %s --check-prefix=NOWGMMA

// An explicit strategy serves every attention op or says why it cannot.
// NOWGMMA: attn-choose-kernel: strategy wgmma needs wgmma, which only sm_90a has, not sm_90

func.func @f32(%q: tensor<1x1x?x64xf32>, %k: tensor<1x1x?x64xf32>,
               %v: tensor<1x1x?x64xf32>, %o: tensor<1x1x?x64xf32>)
    -> tensor<1x1x?x64xf32> {
  // expected-error @+1 {{cannot run on strategy}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
       outs(%o : tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32>
  return %r : tensor<1x1x?x64xf32>
}

// -----

func.func @narrow(%q: tensor<1x1x?x24xf16>, %k: tensor<1x1x?x24xf16>,
                  %v: tensor<1x1x?x24xf16>, %o: tensor<1x1x?x24xf16>)
    -> tensor<1x1x?x24xf16> {
  // expected-error @+1 {{its head dims (24, 24) are not multiples of 16}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x24xf16>, tensor<1x1x?x24xf16>, tensor<1x1x?x24xf16>)
       outs(%o : tensor<1x1x?x24xf16>) -> tensor<1x1x?x24xf16>
  return %r : tensor<1x1x?x24xf16>
}
