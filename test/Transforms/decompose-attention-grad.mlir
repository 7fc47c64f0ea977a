// attn.attention_grad prints back as parsed; attn-decompose turns it into
// one kv-tile loop per batch and query head whose tiles recompute P from
// the logsumexp and take the score_mod's derivative by the chain rule
// (soft-capping: tanh' = 1 - tanh^2, times the scale); the GPU pipeline
// refuses it (f32) by name.
// RUN: attn-opt %s | attn-opt | FileCheck %s --check-prefix=ROUND
// RUN: attn-opt %s --attn-decompose="kv-tile=32" | FileCheck %s
// RUN: not attn-opt %s --attn-lower-to-nvvm="chip=sm_90a" 2>&1 | FileCheck %s --check-prefix=GPU

// ROUND: attn.attention_grad ins(%{{.*}}) outs(%{{.*}}) {causal}
// ROUND: score_mod
// ROUND: math.tanh

// CHECK-LABEL: func.func @grad
// CHECK: %[[DK:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%arg7
// CHECK: scf.for %[[B:.*]] = %{{.*}} iter_args(
// CHECK: scf.for %[[H:.*]] = %{{.*}} iter_args(
// Delta = rowsum(dO * O).
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: scf.for %[[KV:.*]] = %{{.*}} step %c32
// S = Q K^T, dP = dO V^T.
// CHECK-COUNT-2: iterator_types = ["parallel", "parallel", "reduction"]
// P and scale * d score_mod / d s.
// CHECK: %[[T:.*]] = math.tanh
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[T]],
// CHECK: %[[SQ:.*]] = arith.mulf %[[T]], %[[T]] : f32
// CHECK: arith.subf %{{.*}}, %[[SQ]] : f32
// CHECK: arith.cmpi uge
// CHECK: %[[SHIFTED:.*]] = arith.subf %[[CAPPED]], %{{.*}} : f32
// CHECK: math.exp %[[SHIFTED]]
// CHECK: linalg.yield %{{.*}}, %{{.*}} : f32, f32
// dS, then dQ += dS K, dK += dS^T Q, dV += P^T dO.
// CHECK: arith.cmpf oeq
// CHECK-COUNT-3: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: scf.yield
// dK and dV go to bf16 at the end.
// CHECK: arith.truncf %{{.*}} : f32 to bf16

// GPU: error: 'attn.attention_grad' op cannot run on the wgmma backward kernel: it needs f16 or bf16 inputs, not 'f32'

func.func @grad(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %o: tensor<?x8x?x64xbf16>, %do: tensor<?x8x?x64xbf16>, %l: tensor<?x8x?xf32>, %dq: tensor<?x8x?x64xf32>, %dk: tensor<?x2x?x64xf32>, %dv: tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xbf16>) {
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
      outs(%dq, %dk, %dv : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xbf16>) {causal}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %c = arith.constant 30.0 : f32
        %x = arith.divf %s, %c : f32
        %t = math.tanh %x : f32
        %r = arith.mulf %t, %c : f32
        attn.yield %r : f32
      }
      -> tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xbf16>
  return %r#0, %r#1, %r#2 : tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xbf16>
}

// maxnumf returns its first operand where the second is NaN, and its
// derivative follows: the first wins where a >= b or b is NaN.
// CHECK-LABEL: func.func @grad_maxnum
// CHECK: %[[ROOT:.*]] = math.sqrt
// CHECK: %[[GE:.*]] = arith.cmpf oge, %{{.*}}, %[[ROOT]] : f32
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[ROOT]], %[[ROOT]] : f32
// CHECK: %[[FIRST:.*]] = arith.ori %[[GE]], %[[NAN]] : i1
// CHECK: arith.select %[[FIRST]],
func.func @grad_maxnum(%q: tensor<?x1x?x16xf32>, %k: tensor<?x1x?x16xf32>, %v: tensor<?x1x?x16xf32>, %o: tensor<?x1x?x16xf32>, %do: tensor<?x1x?x16xf32>, %l: tensor<?x1x?xf32>, %dq: tensor<?x1x?x16xf32>, %dk: tensor<?x1x?x16xf32>, %dv: tensor<?x1x?x16xf32>) -> (tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>) {
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?xf32>)
      outs(%dq, %dk, %dv : tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %c = arith.constant -2.0 : f32
        %root = math.sqrt %s : f32
        %r = arith.maxnumf %c, %root : f32
        attn.yield %r : f32
      }
      -> tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>
  return %r#0, %r#1, %r#2 : tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x16xf32>
}
