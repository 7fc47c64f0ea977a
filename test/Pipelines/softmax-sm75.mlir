// attn.softmax's kernel stages its tiles with cp.async, which sm_75 does
// not have: the pipeline stops at the op with a diagnostic (before, LLVM's
// instruction selection aborted on the cp.async intrinsic).
// RUN: attn-opt %s --attn-lower-to-nvvm=chip=sm_75 --verify-diagnostics
// RUN: attn-opt %s --attn-softmax-to-gpu=async-copy=false --verify-diagnostics

func.func @softmax(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>) -> tensor<?x?xf16> {
  // expected-error @+1 {{lowers to the GPU with cp.async, which the target does not have (sm_80 or newer)}}
  %r = attn.softmax ins(%x : tensor<?x?xf16>) outs(%y : tensor<?x?xf16>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}
