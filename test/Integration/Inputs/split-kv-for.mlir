// Split-kv through upstream's tile_reduction_using_for: a loop over kv
// chunks of 48 carrying the running (output, logsumexp) of every row.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %a = transform.structured.match ops{["attn.attention"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %fill:2, %split, %merge, %for = transform.structured.tile_reduction_using_for %a
        by tile_sizes = [0, 0, 0, 0, 48]
        : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
}
