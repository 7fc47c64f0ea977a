// RUN: attn-opt %s --attn-record-shape-contract --split-input-file | FileCheck %s

// Arguments are named by their role; sizes that the op ties are recorded as
// [kind, [lhs arg, lhs dim, rhs arg, rhs dim], what]. Document ids indexed
// by kv must cover the kv length; ALiBi slopes indexed by h the heads.
// What the op computes is recorded too: regions by the digest of their IR
// (and by name, below, when the op says which built-in they are) and as
// programs: argument types, ops whose operands number the arguments and
// then the ops' results, tensor.extract reading a function argument, and
// the value yielded.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: attn.computes = [{block_mask = false, causal = false, dtype = "f16", head_dim = 64 : i64, logsumexp = true,
// CHECK-SAME: mask_mod = {digest = "[[MASK:[0-9a-f]+]]", program = {args = ["index", "index", "index", "index"],
// CHECK-SAME: ops = [{loc = "{{.*}}record-shape-contract.mlir:{{[0-9]+}}:15", op = "tensor.extract", operands = [2], tensor = 5 : i64, type = "i32"},
// CHECK-SAME: {loc = "{{[^"]*}}", op = "tensor.extract", operands = [3], tensor = 5 : i64, type = "i32"},
// CHECK-SAME: {loc = "{{[^"]*}}", op = "arith.cmpi", operands = [4, 5], predicate = "eq", type = "i1"}], yield = 6 : i64}},
// CHECK-SAME: op = "attention", scale = 1.250000e-01 : f32,
// CHECK-SAME: score_mod = {digest = "{{[0-9a-f]+}}", program = {args = ["f32", "index", "index", "index", "index"],
// CHECK-SAME: ops = [{loc = "{{[^"]*}}", op = "tensor.extract", operands = [2], tensor = 6 : i64, type = "f32"},
// CHECK-SAME: {loc = "{{[^"]*}}", op = "arith.addf", operands = [0, 5], type = "f32"}], yield = 6 : i64}}, value_head_dim = 64 : i64}]
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

// The same mask region with a name (as attn-run and Python's built-ins
// have): the same digest, and the name.
// CHECK-LABEL: func.func @named
// CHECK-SAME: attn.computes = [{block_mask = false, causal = true, dtype = "f32", head_dim = 16 : i64, logsumexp = false,
// CHECK-SAME: mask_mod = {digest = "[[MASK]]", name = "document", program = {args = [{{.*}}], yield = 6 : i64}}, op = "attention", scale = 5.000000e-01 : f32, value_head_dim = 16 : i64}]
func.func @named(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                 %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                 %doc: tensor<?xi32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>) {causal, scale = 5.000000e-01 : f32, attn.mask_mod_name = "document"}
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %dq = tensor.extract %doc[%qi] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        attn.yield %same : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}

// -----

// A softmax ties every dim of its output to its input.
// CHECK-LABEL: func.func @softmax
// CHECK-SAME: attn.computes = [{dtype = "f32", op = "softmax"}]
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
// CHECK-NOT: attn.computes
// CHECK-NOT: attn.shape_contract
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
