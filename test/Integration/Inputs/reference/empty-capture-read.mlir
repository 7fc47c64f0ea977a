// Found by fuzzing: a score_mod reading a zero-size captured tensor.
func.func @attention(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                     %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                     %c: tensor<0xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %x = tensor.extract %c[%kv] : tensor<0xf32>
        attn.yield %x : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
