// attn.softmax, attn.online_softmax and attn.merge_splits decompose through
// AggregatedOpInterface, so upstream transform.structured.decompose_interface
// drives them: the same IR as the attn-decompose-* passes. (The transform
// op hands back one handle per target, so it takes single-result ops only:
// attn.online_softmax's four results and a merge with logsumexp go through
// the passes, which call the same interface method.)
// RUN: attn-opt %s --transform-interpreter --split-input-file | FileCheck %s

// A softmax row that fits the default row tile: one online-softmax step,
// then the normalization.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: attn.softmax
// CHECK: attn.online_softmax %{{.*}} : tensor<4x100xf32>, tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.divf
func.func @softmax(%x: tensor<4x100xf16>, %y: tensor<4x100xf16>) -> tensor<4x100xf16> {
  %r = attn.softmax ins(%x : tensor<4x100xf16>) outs(%y : tensor<4x100xf16>) -> tensor<4x100xf16>
  return %r : tensor<4x100xf16>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.softmax"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %op
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}

// -----

// The split-kv merge: max and sum of the splits' logsumexps, then the
// weighted output, rounded to bf16.
// CHECK-LABEL: func.func @merge
// CHECK-NOT: attn.merge_splits
// CHECK: linalg.generic
// CHECK: math.exp2
// CHECK: arith.truncf {{.*}} to bf16
// CHECK: return
func.func @merge(%po: tensor<1x8x?x64x4xf32>, %pl: tensor<1x8x?x4xf32>,
                 %o: tensor<1x8x?x64xbf16>) -> tensor<1x8x?x64xbf16> {
  %r = attn.merge_splits ins(%po, %pl : tensor<1x8x?x64x4xf32>, tensor<1x8x?x4xf32>)
      outs(%o : tensor<1x8x?x64xbf16>) -> tensor<1x8x?x64xbf16>
  return %r : tensor<1x8x?x64xbf16>
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %op = transform.structured.match ops{["attn.merge_splits"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %op
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
