// A block mask with one head per kv head: right only where that is 1 or Hq.
func.func @attention(%q: tensor<1x?x?x64xf32>, %k: tensor<1x?x?x64xf32>, %v: tensor<1x?x?x64xf32>, %o: tensor<1x?x?x64xf32>) -> tensor<1x?x?x64xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %hk = tensor.dim %k, %c1 : tensor<1x?x?x64xf32>
  %m = tensor.dim %q, %c2 : tensor<1x?x?x64xf32>
  %n = tensor.dim %k, %c2 : tensor<1x?x?x64xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%hk) q_len(%m) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %d = arith.subi %qi, %kv : index
        %c8 = arith.constant 8 : index
        %near = arith.cmpi ult, %d, %c8 : index
        attn.yield %near : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>)
      outs(%o : tensor<1x?x?x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 16, kv_block = 16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %d = arith.subi %qi, %kv : index
        %c8 = arith.constant 8 : index
        %near = arith.cmpi ult, %d, %c8 : index
        attn.yield %near : i1
      }
      -> tensor<1x?x?x64xf32>
  return %r : tensor<1x?x?x64xf32>
}
