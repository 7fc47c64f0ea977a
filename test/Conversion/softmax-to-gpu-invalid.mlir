// RUN: attn-opt %s --attn-softmax-to-gpu="elements-per-thread=12" --verify-diagnostics

// 12 f16 elements are not whole 16-byte vectors (8 each).
func.func @ragged(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>) -> tensor<?x?xf16> {
  // expected-error @+1 {{cannot copy 12 elements per thread in 16-byte vectors of 8 (elements-per-thread must be a multiple of 8)}}
  %r = attn.softmax ins(%x : tensor<?x?xf16>) outs(%y : tensor<?x?xf16>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}
