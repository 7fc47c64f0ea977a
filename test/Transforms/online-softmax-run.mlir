// The decomposed online softmax computes the right numbers: lowered to LLVM
// on the CPU and run with upstream mlir-runner.
// RUN: attn-opt %s --attn-decompose-online-softmax \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries" \
// RUN:   --convert-linalg-to-loops --convert-scf-to-cf --expand-strided-metadata \
// RUN:   --lower-affine --convert-to-llvm --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_utils,%mlir_c_runner_utils \
// RUN: | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print2d(%t: tensor<2x4xf32>) {
  %u = tensor.cast %t : tensor<2x4xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @print1d(%t: tensor<2xf32>) {
  %u = tensor.cast %t : tensor<2xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  %ninf = arith.constant 0xFF800000 : f32
  // Row 0 continues a row whose running max is 2.5 and sum 1; row 1 has seen
  // only masked (-inf) scores and gets another all-masked tile.
  %s = arith.constant dense<[[1.0, 2.0, 3.0, 0xFF800000],
                             [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000]]> : tensor<2x4xf32>
  %m = arith.constant dense<[2.5, 0xFF800000]> : tensor<2xf32>
  %l = arith.constant dense<[1.0, 0.0]> : tensor<2xf32>
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<2x4xf32>, tensor<2xf32>
  // probs = exp(s - 3): e^-2, e^-1, 1, 0; the masked row gives zeros.
  // CHECK: [0.135335,   0.367879,   1,   0]
  // CHECK: [0,   0,   0,   0]
  call @print2d(%p) : (tensor<2x4xf32>) -> ()
  // CHECK: [3,  -inf]
  call @print1d(%m1) : (tensor<2xf32>) -> ()
  // new_sum = 1 * e^-0.5 + (e^-2 + e^-1 + 1) = 2.10975; the masked row 0.
  // CHECK: [2.10975,  0]
  call @print1d(%l1) : (tensor<2xf32>) -> ()
  // correction = e^(2.5 - 3); 1 for the masked row, never NaN.
  // CHECK: [0.606531,  1]
  call @print1d(%c) : (tensor<2xf32>) -> ()

  // The scale multiplies the scores: scale 0.5 on doubled scores gives the
  // same step.
  %s2 = arith.constant dense<[[2.0, 4.0, 6.0, 0xFF800000],
                              [0xFF800000, 0xFF800000, 0xFF800000, 0xFF800000]]> : tensor<2x4xf32>
  %p2, %m2, %l2, %c2 = attn.online_softmax %s2, %m, %l {scale = 0.5 : f32}
      : tensor<2x4xf32>, tensor<2xf32>
  // CHECK: [0.135335,   0.367879,   1,   0]
  // CHECK: [0,   0,   0,   0]
  call @print2d(%p2) : (tensor<2x4xf32>) -> ()
  // CHECK: [2.10975,  0]
  call @print1d(%l2) : (tensor<2xf32>) -> ()
  return
}
