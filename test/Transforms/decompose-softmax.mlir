// RUN: attn-opt %s --attn-decompose-softmax="row-tile=256" --canonicalize --split-input-file | FileCheck %s
// RUN: not attn-opt %s --attn-decompose-softmax="row-tile=0" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: attn-decompose-softmax: row-tile must be positive, got 0

// A row that fits the tile: f16 widened, one online-softmax step over the
// whole row, then probs / sum rounded back to f16 (0 where sum is 0).
// CHECK-LABEL: func.func @short_rows
// CHECK-NOT: scf.for
// CHECK: arith.extf
// CHECK: %{{.*}}, %[[MAX:.*]], %[[SUM:.*]], %{{.*}} = attn.online_softmax %{{.*}} : tensor<4x100xf32>, tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[MAX]], %[[SUM]] : tensor<4x100xf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: math.exp2
// CHECK: arith.divf
// CHECK: arith.truncf
func.func @short_rows(%x: tensor<4x100xf16>, %y: tensor<4x100xf16>) -> tensor<4x100xf16> {
  %r = attn.softmax ins(%x : tensor<4x100xf16>) outs(%y : tensor<4x100xf16>) -> tensor<4x100xf16>
  return %r : tensor<4x100xf16>
}

// -----

// Long (here dynamic) rows: a loop of online-softmax steps for (max, sum),
// then a loop that normalizes 256 elements at a time.
// CHECK-LABEL: func.func @long_rows
// CHECK: %[[STATS:.*]]:2 = scf.for %{{.*}} step %c256 iter_args
// CHECK: tensor.extract_slice
// CHECK: attn.online_softmax
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} step %c256 iter_args
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[STATS]]#0, %[[STATS]]#1
// CHECK: tensor.insert_slice
func.func @long_rows(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = attn.softmax ins(%x : tensor<?x?xf32>) outs(%y : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// One-dimensional input: a single row, rank-0 statistics.
// CHECK-LABEL: func.func @one_row
// CHECK: attn.online_softmax %{{.*}} : tensor<200xf32>, tensor<f32>
func.func @one_row(%x: tensor<200xf32>, %y: tensor<200xbf16>) -> tensor<200xbf16> {
  %c = attn.softmax ins(%x : tensor<200xf32>) outs(%y : tensor<200xbf16>) -> tensor<200xbf16>
  return %c : tensor<200xbf16>
}
