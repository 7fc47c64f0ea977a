// What the GPU pipeline cannot map yet fails with a diagnostic naming the op.
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm=chip=sm_90 2>&1 | FileCheck %s

// CHECK: nvvm-unsupported.mlir:[[@LINE+2]]:8: error: 'attn.softmax' op lowers to the GPU for rank 2 ([rows, N]) only, got rank 3; collapse the outer dims first
func.func @softmax3d(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
  %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  return %r : tensor<2x?x?xf32>
}

// -----

// Host-side linalg with a reduction (a matmul, say) is not mapped to the
// GPU; elementwise ops (a fill) get a grid of their own.
// CHECK: nvvm-unsupported.mlir:[[@LINE+3]]:8: error: 'linalg.{{.*}}' op is outside every GPU grid: attn-lower-to-nvvm maps only attn.attention, attn.softmax and elementwise linalg ops to the GPU so far
func.func @host_linalg(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %x: tensor<?x?xf32>, %c: f32) -> tensor<?x?xf32> {
  %f = linalg.fill ins(%c : f32) outs(%x : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
