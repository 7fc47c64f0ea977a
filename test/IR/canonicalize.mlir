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
