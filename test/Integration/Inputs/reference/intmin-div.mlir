// Divides INT64_MIN by -1 (in a dead op): an error, not SIGFPE.
func.func @attention(%q: tensor<1x1x?x16xf32>, %k: tensor<1x1x?x16xf32>,
                     %v: tensor<1x1x?x16xf32>, %o: tensor<1x1x?x16xf32>) -> tensor<1x1x?x16xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>, tensor<1x1x?x16xf32>)
      outs(%o : tensor<1x1x?x16xf32>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %min = arith.constant -9223372036854775808 : i64
        %m1 = arith.constant -1 : i64
        %d = arith.divsi %min, %m1 : i64
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x16xf32>
  return %r : tensor<1x1x?x16xf32>
}
