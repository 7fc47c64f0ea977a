// Lists given as arguments: attn-run cannot make lists that match the mask_mod.
func.func @attention(%q: tensor<2x?x1x64xbf16>, %k: tensor<2x1x?x64xbf16>, %v: tensor<2x1x?x64xbf16>, %o: tensor<2x?x1x64xbf16>, %l: tensor<2x?x1xf32>, %doc: tensor<?xi32>, %kvn: tensor<1x1x8xi32>, %kvi: tensor<1x1x8x2xi32>) -> (tensor<2x?x1x64xbf16>, tensor<2x?x1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %bm = attn.make_block_mask kv(%kvn, %kvi : tensor<1x1x8xi32>, tensor<1x1x8x2xi32>) : !attn.block_mask<q_block = 32, kv_block = 1024>
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x?x1x64xbf16>, tensor<2x1x?x64xbf16>, tensor<2x1x?x64xbf16>)
      outs(%o, %l : tensor<2x?x1x64xbf16>, tensor<2x?x1xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 32, kv_block = 1024>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %t = arith.constant true
        %keep = arith.andi %t, %t : i1
        attn.yield %keep : i1
      }
      -> tensor<2x?x1x64xbf16>, tensor<2x?x1xf32>
  return %r#0, %r#1 : tensor<2x?x1x64xbf16>, tensor<2x?x1xf32>
}
