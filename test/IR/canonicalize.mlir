// RUN: attn-opt %s --canonicalize --split-input-file | FileCheck %s

// Casts that only hide static sizes fold into attn.attention (what tiling a
// static problem leaves behind); the results are cast back. Ops with empty
// optional regions and with regions both fold (upstream's clone-based
// folder crashes on the former).
// CHECK-LABEL: func.func @fold_casts
// CHECK-SAME: (%[[Q:.*]]: tensor<1x1x16x64xf32>, %{{.*}}, %{{.*}}, %[[O:.*]]: tensor<1x1x16x64xf32>)
// CHECK-NOT: tensor.cast %[[Q]]
// CHECK: %[[R:.*]] = attn.attention ins(%[[Q]], {{.*}} : tensor<1x1x16x64xf32>, tensor<1x1x24x64xf32>, tensor<1x1x24x64xf32>) outs(%[[O]] : tensor<1x1x16x64xf32>) -> tensor<1x1x16x64xf32>
// CHECK: %[[C:.*]] = tensor.cast %[[R]] : tensor<1x1x16x64xf32> to tensor<1x1x?x64xf32>
// CHECK: return %[[C]]
func.func @fold_casts(%q: tensor<1x1x16x64xf32>, %k: tensor<1x1x24x64xf32>, %v: tensor<1x1x24x64xf32>, %o: tensor<1x1x16x64xf32>) -> tensor<1x1x?x64xf32> {
  %qc = tensor.cast %q : tensor<1x1x16x64xf32> to tensor<1x1x?x64xf32>
  %oc = tensor.cast %o : tensor<1x1x16x64xf32> to tensor<1x1x?x64xf32>
  %r = attn.attention ins(%qc, %k, %v : tensor<1x1x?x64xf32>, tensor<1x1x24x64xf32>, tensor<1x1x24x64xf32>) outs(%oc : tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32>
  return %r : tensor<1x1x?x64xf32>
}

// -----

// CHECK-LABEL: func.func @fold_casts_with_mask_mod
// CHECK: attn.attention {{.*}} outs(%{{.*}} : tensor<1x1x16x64xf32>) {causal}
// CHECK: mask_mod
// CHECK: arith.cmpi ult
// CHECK: -> tensor<1x1x16x64xf32>
func.func @fold_casts_with_mask_mod(%q: tensor<1x1x16x64xf32>, %k: tensor<1x1x24x64xf32>, %v: tensor<1x1x24x64xf32>, %o: tensor<1x1x16x64xf32>) -> tensor<1x1x?x64xf32> {
  %oc = tensor.cast %o : tensor<1x1x16x64xf32> to tensor<1x1x?x64xf32>
  %qc = tensor.cast %q : tensor<1x1x16x64xf32> to tensor<1x1x?x64xf32>
  %r = attn.attention ins(%qc, %k, %v : tensor<1x1x?x64xf32>, tensor<1x1x24x64xf32>, tensor<1x1x24x64xf32>) outs(%oc : tensor<1x1x?x64xf32>) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %d = arith.subi %i, %j : index
        %c8 = arith.constant 8 : index
        %near = arith.cmpi ult, %d, %c8 : index
        attn.yield %near : i1
      } -> tensor<1x1x?x64xf32>
  return %r : tensor<1x1x?x64xf32>
}

// -----

// attn.attention_grad folds casts the same way, each operand on its own
// (upstream's folder crashed on it): dQ stays as dynamic as it was, which
// a static Q is compatible with; a wrt tensor read through a cast keeps
// its gradient.
// CHECK-LABEL: func.func @fold_casts_into_grad
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x1x16x16xf32>
// CHECK: %[[R:.*]]:4 = attn.attention_grad ins(%[[Q]], {{.*}}) wrt(%[[S:.*]] : tensor<2xf32>) outs({{.*}} : tensor<1x1x?x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<2xf32>)
// CHECK: tensor.extract %[[S]][%{{.*}}] : tensor<2xf32>
// CHECK: tensor.cast %[[R]]#3 : tensor<2xf32> to tensor<?xf32>
func.func @fold_casts_into_grad(%q: tensor<1x1x16x16xf32>, %k: tensor<1x1x16x16xf32>, %v: tensor<1x1x16x16xf32>, %o: tensor<1x1x?x16xf32>, %do: tensor<1x1x?x16xf32>, %l: tensor<1x1x?xf32>, %dq: tensor<1x1x?x16xf32>, %dk: tensor<1x1x16x16xf32>, %dv: tensor<1x1x16x16xf32>, %s: tensor<2xf32>, %ds0: tensor<2xf32>) -> (tensor<1x1x?x16xf32>, tensor<?xf32>) {
  %qc = tensor.cast %q : tensor<1x1x16x16xf32> to tensor<1x1x?x16xf32>
  %sc = tensor.cast %s : tensor<2xf32> to tensor<?xf32>
  %ds = tensor.cast %ds0 : tensor<2xf32> to tensor<?xf32>
  %r:4 = attn.attention_grad ins(%qc, %k, %v, %o, %do, %l : tensor<1x1x?x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?xf32>)
      wrt(%sc : tensor<?xf32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x1x?x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<?xf32>)
      score_mod {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %sc[%h] : tensor<?xf32>
        %y = arith.addf %x, %slope : f32
        attn.yield %y : f32
      }
      -> tensor<1x1x?x16xf32>, tensor<1x1x16x16xf32>, tensor<1x1x16x16xf32>, tensor<?xf32>
  return %r#0, %r#3 : tensor<1x1x?x16xf32>, tensor<?xf32>
}
