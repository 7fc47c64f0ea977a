// Causal grouped-query attention: 8 query heads share 2 kv heads; batch,
// sequence lengths dynamic; head dim 64; f16 in and out, f32 logsumexp.
func.func @causal_gqa(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                      %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>,
                      %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {
  %out, %logsumexp = attn.attention
      ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o, %lse : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>) {causal}
      -> tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
  return %out, %logsumexp : tensor<?x8x?x64xf16>, tensor<?x8x?xf32>
}

// Sliding-window causal attention (window 256) as a mask_mod, with a
// block mask listing the kv-blocks inside the window, and
// Gemma 2's tanh soft-capping as a score_mod.
func.func @sliding_window_softcap(%q: tensor<1x4x?x128xbf16>, %k: tensor<1x4x?x128xbf16>,
                                  %v: tensor<1x4x?x128xbf16>, %o: tensor<1x4x?x128xbf16>)
    -> tensor<1x4x?x128xbf16> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<1x4x?x128xbf16>
  %n = tensor.dim %k, %c2 : tensor<1x4x?x128xbf16>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c256 = arith.constant 256 : index
        %causal = arith.cmpi uge, %qi, %kv : index
        %d = arith.subi %qi, %kv : index
        %near = arith.cmpi ult, %d, %c256 : index
        %keep = arith.andi %causal, %near : i1
        attn.yield %keep : i1
      }
  %out = attn.attention
      ins(%q, %k, %v : tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>)
      outs(%o : tensor<1x4x?x128xbf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      {scale = 0.0883883461 : f32}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %cap = arith.constant 50.0 : f32
        %x = arith.divf %s, %cap : f32
        %t = math.tanh %x : f32
        %y = arith.mulf %t, %cap : f32
        attn.yield %y : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c256 = arith.constant 256 : index
        %causal = arith.cmpi uge, %qi, %kv : index
        %d = arith.subi %qi, %kv : index
        %near = arith.cmpi ult, %d, %c256 : index
        %keep = arith.andi %causal, %near : i1
        attn.yield %keep : i1
      }
      -> tensor<1x4x?x128xbf16>
  return %out : tensor<1x4x?x128xbf16>
}
