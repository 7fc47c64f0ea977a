// A score_mod that yields NaN: every row's softmax is NaN, in the kernel
// and in the reference, as in PyTorch.
func.func @attention(%q: tensor<1x1x128x64xbf16>, %k: tensor<1x1x300x64xbf16>, %v: tensor<1x1x300x16xbf16>, %o: tensor<1x1x128x16xf32>, %l: tensor<1x1x128xf32>, %cap0: tensor<0xf32>) -> (tensor<1x1x128x16xf32>, tensor<1x1x128xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<1x1x128x64xbf16>, tensor<1x1x300x64xbf16>, tensor<1x1x300x16xbf16>)
      outs(%o, %l : tensor<1x1x128x16xf32>, tensor<1x1x128xf32>) {causal}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %v1 = arith.constant false
        %v2 = arith.select %v1, %s, %s : f32
        %v3 = arith.xori %v1, %v1 : i1
        %v4 = arith.constant -1 : i64
        %v5 = arith.constant 4294967296 : i64
        %v6 = arith.remsi %v4, %v5 : i64
        %v7 = arith.constant -1.0 : f32
        %v8 = arith.constant 1.0e-45 : f32
        %v9 = math.fma %v7, %v8, %v7 : f32
        %v10 = arith.constant 0x7FC00000 : f32
        attn.yield %v10 : f32
      }
      -> tensor<1x1x128x16xf32>, tensor<1x1x128xf32>
  return %r#0, %r#1 : tensor<1x1x128x16xf32>, tensor<1x1x128xf32>
}
