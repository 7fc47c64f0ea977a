// A score_mod that ignores the score (a constant per batch): every visible
// key of a row weighs the same, so an FA2-class float32 kernel can round
// every f16 output exactly and leave a correct kernel only the peer
// criterion's floor (the random program 1407 of seed 11, on sm_80).
func.func @attention(%q: tensor<?x?x?x16xf16>, %k: tensor<?x?x?x16xf16>, %v: tensor<?x?x?x16xf16>, %o: tensor<?x?x?x16xf16>, %l: tensor<?x?x?xf32>) -> (tensor<?x?x?x16xf16>, tensor<?x?x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x?x?x16xf16>, tensor<?x?x?x16xf16>, tensor<?x?x?x16xf16>)
      outs(%o, %l : tensor<?x?x?x16xf16>, tensor<?x?x?xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %v1 = arith.constant -1.904493e-01 : f32
        %v2 = arith.constant -9.103607e-02 : f32
        %v3 = math.tanh %v2 : f32
        %v4 = arith.mulf %v1, %v3 : f32
        %v5 = arith.index_cast %b : index to i64
        %v6 = arith.sitofp %v5 : i64 to f32
        %v7 = arith.constant 1.250000e-01 : f32
        %v8 = arith.mulf %v6, %v7 : f32
        %v9 = arith.constant -1.115331e+00 : f32
        %v10 = arith.subf %v8, %v9 : f32
        %v11 = math.tanh %v10 : f32
        %v12 = arith.mulf %v4, %v11 : f32
        attn.yield %v12 : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %v1 = arith.subi %qi, %kv : index
        %v2 = arith.constant 100 : index
        %v3 = arith.cmpi ule, %v1, %v2 : index
        %v4 = arith.constant true
        %v5 = arith.xori %v3, %v4 : i1
        attn.yield %v5 : i1
      }
      -> tensor<?x?x?x16xf16>, tensor<?x?x?xf32>
  return %r#0, %r#1 : tensor<?x?x?x16xf16>, tensor<?x?x?xf32>
}
