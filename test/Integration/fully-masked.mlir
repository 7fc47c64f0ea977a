// Rows with nothing unmasked give 0 and a logsumexp of -inf, never NaN: here
// the first 5 query rows see no key, the rest see keys up to their own row.
// RUN: attn-run %s --heads=2:1 --q-len=1,7,70 --kv-len=3,70 --lse | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: attn-run: 6 of 6 cases pass

func.func @masked(%q: tensor<?x?x?x32xf32>, %k: tensor<?x?x?x32xf32>,
                  %v: tensor<?x?x?x32xf32>, %o: tensor<?x?x?x32xf32>,
                  %lse: tensor<?x?x?xf32>)
    -> (tensor<?x?x?x32xf32>, tensor<?x?x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>)
      outs(%o, %lse : tensor<?x?x?x32xf32>, tensor<?x?x?xf32>) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c5 = arith.constant 5 : index
        %keep = arith.cmpi uge, %qi, %c5 : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x32xf32>, tensor<?x?x?xf32>
  return %r#0, %r#1 : tensor<?x?x?x32xf32>, tensor<?x?x?xf32>
}
