// attn.attention_grad's verifier: shapes against the forward's, the
// logsumexp, the gradients' shapes and a score_mod with no derivative.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf16>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x2x32x64xf32>, %dv: tensor<2x2x32x64xf32>) {
  // expected-error @+1 {{expected logsumexp element type to be f32, but got 'f16'}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16xf16>)
      outs(%dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>)
      -> tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x64xf16>, %l: tensor<2x8x15xf32>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x2x32x64xf32>, %dv: tensor<2x2x32x64xf32>) {
  // expected-error @+1 {{expected logsumexp dim 2 (query length M) to equal query dim 2 (16), but got 15}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x15xf32>)
      outs(%dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>)
      -> tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x32xf16>, %l: tensor<2x8x16xf32>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x2x32x64xf32>, %dv: tensor<2x2x32x64xf32>) {
  // expected-error @+1 {{expected grad_output dim 3 (value head dim Dv) to equal value dim 3 (64), but got 32}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x32xf16>, tensor<2x8x16xf32>)
      outs(%dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>)
      -> tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf32>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x8x32x64xf32>, %dv: tensor<2x2x32x64xf32>) {
  // expected-error @+1 {{expected dK (output #1) to have the shape of K 'tensor<2x2x32x64xf16>', but got 'tensor<2x8x32x64xf32>'}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
      outs(%dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x8x32x64xf32>, tensor<2x2x32x64xf32>)
      -> tensor<2x8x16x64xf32>, tensor<2x8x32x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf32>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x2x32x64xf32>) {
  // expected-error @+1 {{expected 3 outputs (dQ, dK, dV), but got 2}}
  %r:2 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
      outs(%dq, %dk : tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>)
      -> tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x6x16x64xf16>, %k: tensor<2x4x32x64xf16>, %v: tensor<2x4x32x64xf16>, %o: tensor<2x6x16x64xf16>, %do: tensor<2x6x16x64xf16>, %l: tensor<2x6x16xf32>, %dq: tensor<2x6x16x64xf32>, %dk: tensor<2x4x32x64xf32>, %dv: tensor<2x4x32x64xf32>) {
  // expected-error @+1 {{expected query heads (6) to be a multiple of key/value heads (4)}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x6x16x64xf16>, tensor<2x4x32x64xf16>, tensor<2x4x32x64xf16>, tensor<2x6x16x64xf16>, tensor<2x6x16x64xf16>, tensor<2x6x16xf32>)
      outs(%dq, %dk, %dv : tensor<2x6x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>)
      -> tensor<2x6x16x64xf32>, tensor<2x4x32x64xf32>, tensor<2x4x32x64xf32>
  return
}

// -----

// A cast to an integer on the score's path has no derivative.
func.func @f(%q: tensor<1x1x16x64xf32>, %k: tensor<1x1x32x64xf32>, %v: tensor<1x1x32x64xf32>, %o: tensor<1x1x16x64xf32>, %do: tensor<1x1x16x64xf32>, %l: tensor<1x1x16xf32>, %dq: tensor<1x1x16x64xf32>, %dk: tensor<1x1x32x64xf32>, %dv: tensor<1x1x32x64xf32>) {
  // expected-error @+1 {{needs the derivative of its score_mod with respect to the score, but 'arith.fptosi' on the score's path has none}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16xf32>)
      outs(%dq, %dk, %dv : tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        // expected-note @+1 {{here; the derivative is known for}}
        %i = arith.fptosi %s : f32 to i32
        %f = arith.sitofp %i : i32 to f32
        attn.yield %f : f32
      }
      -> tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<1x1x16x64xf32>, %k: tensor<1x1x32x64xf32>, %v: tensor<1x1x32x64xf32>, %o: tensor<1x1x16x64xf32>, %do: tensor<1x1x16x64xf32>, %l: tensor<1x1x16xf32>, %dq: tensor<1x1x16x64xf32>, %dk: tensor<1x1x32x64xf32>, %dv: tensor<1x1x32x64xf32>) {
  // expected-error @+1 {{needs the derivative of its score_mod with respect to the score, but 'math.floor' on the score's path has none}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16x64xf32>, tensor<1x1x16xf32>)
      outs(%dq, %dk, %dv : tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %t = math.tanh %s : f32
        // expected-note @+1 {{here}}
        %f = math.floor %t : f32
        attn.yield %f : f32
      }
      -> tensor<1x1x16x64xf32>, tensor<1x1x32x64xf32>, tensor<1x1x32x64xf32>
  return
}
