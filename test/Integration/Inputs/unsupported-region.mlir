func.func @f(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x?x16xf32>,
             %v: tensor<?x?x?x16xf32>, %o: tensor<?x?x?x16xf32>) -> tensor<?x?x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>)
      outs(%o : tensor<?x?x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %e = math.erf %s : f32
        attn.yield %e : f32
      }
      -> tensor<?x?x?x16xf32>
  return %r : tensor<?x?x?x16xf32>
}
