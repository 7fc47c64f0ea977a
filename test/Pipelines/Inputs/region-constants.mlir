// f32 region ops whose operand is a constant that does not fold (the square
// root of -inf) or a clamp against a constant.
func.func @attention(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      outs(%o : tensor<1x2x?x64xbf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %inf = arith.constant 0xFF800000 : f32
        %root = math.sqrt %inf : f32
        %floor = arith.constant -8.0 : f32
        %ceiling = arith.constant 8.0 : f32
        %low = arith.maxnumf %s, %floor : f32
        %clamped = arith.minnumf %low, %ceiling : f32
        %y = arith.addf %clamped, %root : f32
        attn.yield %y : f32
      }
      -> tensor<1x2x?x64xbf16>
  return %r : tensor<1x2x?x64xbf16>
}
