// The gradient of a tensor the score_mod reads (ALiBi's per-head slopes,
// learnt): after each kv-tile's dS' = P (dP - Delta), every element with a
// nonzero dS' adds dS' * d score_mod / d slope (here q - kv) at the index
// read, in order, where that index is in bounds. A wrt tensor nothing
// reads (a read whose value was unused folds away) gets a zero gradient.
// RUN: attn-opt %s | attn-opt | FileCheck %s --check-prefix=ROUND
// RUN: attn-opt %s --attn-decompose="kv-tile=32" | FileCheck %s

// ROUND: attn.attention_grad ins(%{{.*}}) wrt(%arg9 : tensor<2xf32>) outs(%{{.*}}, %arg10 : {{.*}}, tensor<2xf32>)

// CHECK-LABEL: func.func @grad
// The slopes' gradient is the f32 output itself, zeroed.
// CHECK: %[[DSLOPES:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg10 : tensor<2xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[DSLOPES]])
// CHECK: scf.for {{.*}} step %c32
// dS' = P (dP - Delta), then one element at a time.
// CHECK: %[[G:.*]] = tensor.extract %{{.*}}[%[[I:.*]], %[[J:.*]]] : tensor<?x?xf32>
// CHECK: %[[USED:.*]] = arith.cmpf une, %[[G]]
// CHECK: scf.if %[[USED]]
// CHECK: tensor.extract %arg9[%[[H:.*]]] : tensor<2xf32>
// CHECK: %[[DIST:.*]] = arith.sitofp %{{.*}} : i64 to f32
// The tangent of slope * (q - kv) with respect to the slope: 1 * (q - kv).
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[SLOPE:.*]] = arith.mulf %[[ONE]], %[[DIST]] : f32
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[H]], %{{.*}} : index
// CHECK: scf.if %{{.*}} -> (tensor<2xf32>)
// CHECK: %[[OLD:.*]] = tensor.extract %{{.*}}[%[[H]]] : tensor<2xf32>
// CHECK: %[[ADD:.*]] = arith.mulf %[[G]], %[[SLOPE]] : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[OLD]], %[[ADD]] : f32
// CHECK: tensor.insert %[[SUM]] into %{{.*}}[%[[H]]] : tensor<2xf32>

func.func @grad(%q: tensor<1x2x?x64xf32>, %k: tensor<1x2x?x64xf32>,
                %v: tensor<1x2x?x64xf32>, %o: tensor<1x2x?x64xf32>,
                %do: tensor<1x2x?x64xf32>, %l: tensor<1x2x?xf32>,
                %dq: tensor<1x2x?x64xf32>, %dk: tensor<1x2x?x64xf32>,
                %dv: tensor<1x2x?x64xf32>, %slopes: tensor<2xf32>,
                %dslopes: tensor<2xf32>)
    -> (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
        tensor<2xf32>) {
  %r:4 = attn.attention_grad
      ins(%q, %k, %v, %o, %do, %l : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
          tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
          tensor<1x2x?xf32>)
      wrt(%slopes : tensor<2xf32>)
      outs(%dq, %dk, %dv, %dslopes : tensor<1x2x?x64xf32>,
           tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<2xf32>
        %qi = arith.index_cast %i : index to i64
        %ki = arith.index_cast %j : index to i64
        %d = arith.subi %qi, %ki : i64
        %df = arith.sitofp %d : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %r = arith.addf %s, %bias : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
         tensor<2xf32>
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
      tensor<1x2x?x64xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @unread
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg10 : tensor<2xf32>)
// CHECK: %[[LOOP:.*]]:4 = scf.for {{.*}}, %{{.*}} = %[[ZERO]])
// CHECK-NOT: scf.if
// CHECK: return {{.*}}, %[[LOOP]]#3 :

func.func @unread(%q: tensor<1x2x?x64xf32>, %k: tensor<1x2x?x64xf32>,
                  %v: tensor<1x2x?x64xf32>, %o: tensor<1x2x?x64xf32>,
                  %do: tensor<1x2x?x64xf32>, %l: tensor<1x2x?xf32>,
                  %dq: tensor<1x2x?x64xf32>, %dk: tensor<1x2x?x64xf32>,
                  %dv: tensor<1x2x?x64xf32>, %slopes: tensor<2xf32>,
                  %dslopes: tensor<2xf32>)
    -> (tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
        tensor<2xf32>) {
  %r:4 = attn.attention_grad
      ins(%q, %k, %v, %o, %do, %l : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
          tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
          tensor<1x2x?xf32>)
      wrt(%slopes : tensor<2xf32>)
      outs(%dq, %dk, %dv, %dslopes : tensor<1x2x?x64xf32>,
           tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 2.0 : f32
        %r = arith.mulf %s, %c : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
         tensor<2xf32>
  return %r#0, %r#1, %r#2, %r#3 : tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>,
      tensor<1x2x?x64xf32>, tensor<2xf32>
}
