func.func @f(%q: tensor<?x4x?x16xf32>, %k: tensor<?x4x?x16xf32>,
             %v: tensor<?x4x?x16xf32>, %o: tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32>)
      outs(%o : tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %r : tensor<?x4x?x16xf32>
}
