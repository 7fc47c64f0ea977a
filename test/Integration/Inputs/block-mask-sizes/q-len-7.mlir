// A block mask built for 7 query rows, whatever M is: only M = 7 may run.
func.func @attention(%q: tensor<1x3x?x64xf32>, %k: tensor<1x3x?x64xf32>, %v: tensor<1x3x?x64xf32>, %o: tensor<1x3x?x64xf32>) -> tensor<1x3x?x64xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c7 = arith.constant 7 : index
  %n = tensor.dim %k, %c2 : tensor<1x3x?x64xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%c7) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>)
      outs(%o : tensor<1x3x?x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 16, kv_block = 16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
      -> tensor<1x3x?x64xf32>
  return %r : tensor<1x3x?x64xf32>
}
