// What the GPU pipeline cannot map yet fails with a diagnostic naming the op.
// RUN: not attn-opt %s --split-input-file --attn-lower-to-nvvm=chip=sm_90 2>&1 | FileCheck %s

// CHECK: nvvm-unsupported.mlir:[[@LINE+2]]:8: error: 'attn.softmax' op lowers to the GPU for rank 2 ([rows, N]) only, got rank 3; collapse the outer dims first
func.func @softmax3d(%x: tensor<2x?x?xf32>, %y: tensor<2x?x?xf32>) -> tensor<2x?x?xf32> {
  %r = attn.softmax ins(%x : tensor<2x?x?xf32>) outs(%y : tensor<2x?x?xf32>) -> tensor<2x?x?xf32>
  return %r : tensor<2x?x?xf32>
}

// -----

// Host-side linalg (a split-kv merge, say) is not mapped to the GPU.
// CHECK: nvvm-unsupported.mlir:[[@LINE+2]]:8: error: 'linalg.{{.*}}' op is outside every GPU grid: attn-lower-to-nvvm maps only attn.attention and attn.softmax to the GPU so far
func.func @host_linalg(%x: tensor<?xf32>, %c: f32) -> tensor<?xf32> {
  %r = linalg.fill ins(%c : f32) outs(%x : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}
