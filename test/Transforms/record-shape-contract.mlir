// RUN: attn-opt %s --attn-record-shape-contract --split-input-file | FileCheck %s

// Arguments are named by their role; sizes that the op ties are recorded as
// [kind, [lhs arg, lhs dim, rhs arg, rhs dim], what]. Document ids indexed
// by kv must cover the kv length; ALiBi slopes indexed by h the heads.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: attn.shape_contract = {constraints = [
// CHECK-SAME: ["equal", array<i64: 1, 0, 0, 0>, "batch"]
// CHECK-SAME: ["equal", array<i64: 2, 1, 1, 1>, "kv heads"]
// CHECK-SAME: ["multiple_of", array<i64: 0, 1, 1, 1>, "query heads"]
// CHECK-SAME: ["equal", array<i64: 2, 2, 1, 2>, "kv length"]
// CHECK-SAME: ["equal", array<i64: 3, 2, 0, 2>, "query length"]
// CHECK-SAME: ["equal", array<i64: 4, 2, 0, 2>, "query length"]
// CHECK-SAME: ["at_least", array<i64: 6, 0, 0, 1>, "indexed by query heads"]
// CHECK-SAME: ["at_least", array<i64: 5, 0, 0, 2>, "indexed by query length"]
// CHECK-SAME: ["at_least", array<i64: 5, 0, 1, 2>, "indexed by kv length"]
// CHECK-SAME: names = ["q", "k", "v", "out", "lse", "argument 5", "argument 6"]
func.func @attention(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                     %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>,
                     %lse: tensor<?x8x?xf32>, %doc: tensor<?xi32>,
                     %slopes: tensor<?xf32>)
    -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %slope = tensor.extract %slopes[%h] : tensor<?xf32>
        %r = arith.addf %s, %slope : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %dq = tensor.extract %doc[%qi] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        attn.yield %same : i1
      }
      -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}

// -----

// A softmax ties every dim of its output to its input.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: attn.shape_contract = {constraints = [
// CHECK-SAME: ["equal", array<i64: 1, 0, 0, 0>, "rows"], ["equal", array<i64: 1, 1, 0, 1>, "row length"]]
// CHECK-SAME: names = ["input", "out"]
func.func @softmax(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = attn.softmax ins(%x : tensor<?x?xf32>) outs(%y : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// Functions without attn ops get nothing.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: attn.shape_contract
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
