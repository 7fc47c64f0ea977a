func.func @bad(%q: tensor<1x6x?x64xf16>, %k: tensor<1x4x?x64xf16>,
               %v: tensor<1x4x?x64xf16>, %o: tensor<1x6x?x64xf16>)
    -> tensor<1x6x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x6x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x6x?x64xf16>) -> tensor<1x6x?x64xf16>
  return %r : tensor<1x6x?x64xf16>
}
