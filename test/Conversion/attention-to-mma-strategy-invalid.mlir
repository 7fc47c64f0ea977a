// RUN: attn-opt %s --split-input-file --attn-attention-to-mma="strategy=mma-sync" --verify-diagnostics
// RUN: attn-opt %s --split-input-file --attn-attention-to-mma="wgmma=true strategy=wgmma-ws" --verify-diagnostics=only-expected
// RUN: not attn-opt %s --split-input-file --attn-attention-to-mma="strategy=wgmma" 2>&1 | FileCheck %s --check-prefix=NOWGMMA

// An explicit strategy serves every attention op or says why it cannot.
// NOWGMMA: attn-attention-to-mma: strategy wgmma needs a chip with wgmma (sm_90a; wgmma=true)

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
