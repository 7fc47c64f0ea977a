// FlashDecoding through upstream's tile_reduction_using_forall: the kv
// length split four ways, merged by attn.merge_splits.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %fill:2, %split, %merge, %forall = transform.structured.tile_reduction_using_forall %a
        by num_threads = [0, 0, 0, 0, 4]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
