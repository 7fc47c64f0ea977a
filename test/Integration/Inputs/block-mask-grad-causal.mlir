// The backward of a causal op given the block mask of a symmetric window
// (|q - kv| < 200, blocks of 128 x 128): full blocks straddle the
// diagonal, where the kernels must still apply the causal mask.
!t = tensor<?x?x?x64xbf16>
!bm = !attn.block_mask<q_block = 128, kv_block = 128>
func.func @attention_grad(%query: !t, %key: !t, %value: !t, %out: !t,
                          %grad_out: !t, %logsumexp: tensor<?x?x?xf32>,
                          %grad_query: !t, %grad_key: !t, %grad_value: !t)
    -> (!t, !t, !t) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %query, %c2 : !t
  %n = tensor.dim %key, %c2 : !t
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n)
      : !bm mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c200 = arith.constant 200 : index
        %d1 = arith.subi %q, %kv : index
        %d2 = arith.subi %kv, %q : index
        %d = arith.maxsi %d1, %d2 : index
        %near = arith.cmpi slt, %d, %c200 : index
        attn.yield %near : i1
      }
  %r:3 = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : !t, !t, !t, !t, !t, tensor<?x?x?xf32>)
      outs(%grad_query, %grad_key, %grad_value : !t, !t, !t)
      block_mask(%bm : !bm) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c200 = arith.constant 200 : index
        %d1 = arith.subi %q, %kv : index
        %d2 = arith.subi %kv, %q : index
        %d = arith.maxsi %d1, %d2 : index
        %near = arith.cmpi slt, %d, %c200 : index
        attn.yield %near : i1
      }
      -> !t, !t, !t
  return %r#0, %r#1, %r#2 : !t, !t, !t
}
