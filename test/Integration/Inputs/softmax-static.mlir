func.func @softmax(%x: tensor<8x300xf16>, %y: tensor<8x300xf32>) -> tensor<8x300xf32> {
  %r = attn.softmax ins(%x : tensor<8x300xf16>) outs(%y : tensor<8x300xf32>) -> tensor<8x300xf32>
  return %r : tensor<8x300xf32>
}
