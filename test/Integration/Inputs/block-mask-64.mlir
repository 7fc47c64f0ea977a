// Causal attention through an explicit block mask of 64 x 64 blocks.
func.func @attention(%q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>,
                     %v: tensor<?x?x?x32xf32>, %o: tensor<?x?x?x32xf32>)
    -> tensor<?x?x?x32xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<?x?x?x32xf32>
  %n = tensor.dim %k, %c2 : tensor<?x?x?x32xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n)
      : !attn.block_mask<q_block = 64, kv_block = 64> mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>)
      outs(%o : tensor<?x?x?x32xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 64, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      } -> tensor<?x?x?x32xf32>
  return %r : tensor<?x?x?x32xf32>
}
