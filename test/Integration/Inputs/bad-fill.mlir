// attn.fill = "run-starts" needs an integer capture before it to take the
// runs of (here the only integer capture carries it).
func.func @attention(%q: tensor<?x?x?x64xf32>, %k: tensor<?x?x?x64xf32>,
                     %v: tensor<?x?x?x64xf32>, %o: tensor<?x?x?x64xf32>,
                     %starts: tensor<?xi32> {attn.fill = "run-starts"})
    -> tensor<?x?x?x64xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf32>,
                          tensor<?x?x?x64xf32>, tensor<?x?x?x64xf32>)
      outs(%o : tensor<?x?x?x64xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %s = tensor.extract %starts[%j] : tensor<?xi32>
        %si = arith.index_cast %s : i32 to index
        %keep = arith.cmpi ule, %si, %i : index
        attn.yield %keep : i1
      } -> tensor<?x?x?x64xf32>
  return %r : tensor<?x?x?x64xf32>
}
