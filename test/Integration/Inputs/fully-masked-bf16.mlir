// Rows with nothing unmasked give 0 and a logsumexp of -inf, never NaN (bf16:
// the tensor-core kernel on the GPU): the first 5 query rows see no key.

func.func @masked(%q: tensor<?x?x?x32xbf16>, %k: tensor<?x?x?x32xbf16>,
                  %v: tensor<?x?x?x32xbf16>, %o: tensor<?x?x?x32xbf16>,
                  %lse: tensor<?x?x?xf32>)
    -> (tensor<?x?x?x32xbf16>, tensor<?x?x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x?x?x32xbf16>, tensor<?x?x?x32xbf16>, tensor<?x?x?x32xbf16>)
      outs(%o, %lse : tensor<?x?x?x32xbf16>, tensor<?x?x?xf32>) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c5 = arith.constant 5 : index
        %keep = arith.cmpi uge, %qi, %c5 : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x32xbf16>, tensor<?x?x?xf32>
  return %r#0, %r#1 : tensor<?x?x?x32xbf16>, tensor<?x?x?xf32>
}
