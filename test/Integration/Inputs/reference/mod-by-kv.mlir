// Found by fuzzing: a mask_mod taking q mod kv, which divides by zero at kv = 0.
func.func @attention(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                     %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %r0 = arith.remui %qi, %kv : index
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi eq, %r0, %c0 : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
