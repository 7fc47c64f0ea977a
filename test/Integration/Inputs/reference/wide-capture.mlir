// A captured tensor with four dynamic dims: attn-run sizes each to cover any
// position, max(B, Hq, M, N), whose count overflows at M = 100000.
func.func @attention(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                     %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                     %table: tensor<?x?x?x?xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %x = tensor.extract %table[%b, %h, %qi, %kv] : tensor<?x?x?x?xf32>
        %y = arith.addf %s, %x : f32
        attn.yield %y : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
