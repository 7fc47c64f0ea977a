// What the GPU pipeline cannot map yet fails with a diagnostic naming the op.
// RUN: not attn-opt %s --attn-lower-to-nvvm=chip=sm_90 2>&1 | FileCheck %s
// CHECK: nvvm-unsupported.mlir:[[@LINE+3]]:8: error: '{{.*}}' op is outside every GPU grid: attn-lower-to-nvvm maps only attn.attention to the GPU so far

func.func @softmax(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = attn.softmax ins(%x : tensor<?x?xf32>) outs(%y : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
