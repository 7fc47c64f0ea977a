// The backward through a given block mask of 128 x 128 blocks: a sliding
// window of 160 keys on even heads and 288 on odd ones, so that lines hold
// full and partial blocks and differ per head. The GPU kernels' 64-row
// tiles walk each listed block in two steps.
!t = tensor<?x?x?x64xbf16>
!bm = !attn.block_mask<q_block = 128, kv_block = 128>
func.func @attention_grad(%query: !t, %key: !t, %value: !t, %out: !t,
                          %grad_out: !t, %logsumexp: tensor<?x?x?xf32>,
                          %grad_query: !t, %grad_key: !t, %grad_value: !t)
    -> (!t, !t, !t) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %heads = tensor.dim %query, %c1 : !t
  %m = tensor.dim %query, %c2 : !t
  %n = tensor.dim %key, %c2 : !t
  %bm = attn.create_block_mask batch(%c1) heads(%heads) q_len(%m) kv_len(%n)
      : !bm mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c2_ = arith.constant 2 : index
        %c128 = arith.constant 128 : index
        %c160 = arith.constant 160 : index
        %odd = arith.remui %h, %c2_ : index
        %extra = arith.muli %odd, %c128 : index
        %window = arith.addi %extra, %c160 : index
        %past = arith.cmpi uge, %q, %kv : index
        %d = arith.subi %q, %kv : index
        %near = arith.cmpi ult, %d, %window : index
        %keep = arith.andi %past, %near : i1
        attn.yield %keep : i1
      }
  %r:3 = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : !t, !t, !t, !t, !t, tensor<?x?x?xf32>)
      outs(%grad_query, %grad_key, %grad_value : !t, !t, !t)
      block_mask(%bm : !bm)
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c2_ = arith.constant 2 : index
        %c128 = arith.constant 128 : index
        %c160 = arith.constant 160 : index
        %odd = arith.remui %h, %c2_ : index
        %extra = arith.muli %odd, %c128 : index
        %window = arith.addi %extra, %c160 : index
        %past = arith.cmpi uge, %q, %kv : index
        %d = arith.subi %q, %kv : index
        %near = arith.cmpi ult, %d, %window : index
        %keep = arith.andi %past, %near : i1
        attn.yield %keep : i1
      }
      -> !t, !t, !t
  return %r#0, %r#1, %r#2 : !t, !t, !t
}
