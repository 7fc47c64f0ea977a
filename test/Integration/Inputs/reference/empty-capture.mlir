// Reads a size-0 captured tensor (in a dead op): an error, not SIGSEGV.
func.func @attention(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                     %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>,
                     %c: tensor<0xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %unused = tensor.extract %c[%kv] : tensor<0xf32>
        attn.yield %s : f32
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
