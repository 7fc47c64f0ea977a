// attn-lower-to-nvvm sizes split softmax rows' tiles by the chip's shared
// memory per SM (attn-softmax-to-gpu's shared-memory-per-sm): 228 KiB on
// sm_90, 164 KiB on sm_80, 100 KiB on sm_86.
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=decompose" | FileCheck %s --check-prefix=SM90
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_80 until=decompose" | FileCheck %s --check-prefix=SM80
// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_86 until=decompose" | FileCheck %s --check-prefix=SM86

// SM90-LABEL: func.func @softmax
// SM90: arith.divui %c233472
// SM80-LABEL: func.func @softmax
// SM80: arith.divui %c167936
// SM86-LABEL: func.func @softmax
// SM86: arith.divui %c102400
func.func @softmax(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>) -> tensor<?x?xf16> {
  %r = attn.softmax ins(%x : tensor<?x?xf16>) outs(%y : tensor<?x?xf16>) -> tensor<?x?xf16>
  return %r : tensor<?x?xf16>
}
