// attn.attention_grad's verifier: shapes against the forward's, the
// logsumexp, the gradients' shapes, a score_mod with no derivative and
// the wrt tensors.
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
  // expected-error @+1 {{expected 3 outputs (dQ, dK, dV and one per wrt tensor), but got 2}}
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
  // expected-error @+1 {{needs the derivative of its score_mod with respect to the score, but 'arith.fptosi' on the path from it has none}}
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
  // expected-error @+1 {{needs the derivative of its score_mod with respect to the score, but 'math.floor' on the path from it has none}}
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

// -----

// wrt: the tensors whose gradients are asked for, each with an f32 output
// of its shape, read by the score_mod on a differentiable path.

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xf32>, %ds: tensor<2xf32>) {
  // expected-error @+1 {{expected 3 outputs (dQ, dK, dV and one per wrt tensor), but got 4}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<2xf32>
        %r = arith.addf %s, %slope : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xi32>, %ds: tensor<2xf32>) {
  // expected-error @+1 {{expected wrt #0 to be a tensor of f16, bf16 or f32, but got 'tensor<2xi32>'}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) wrt(%slopes : tensor<2xi32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>)
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xf32>, %ds: tensor<2xf16>) {
  // expected-error @+1 {{expected output #3 (the gradient of wrt #0) to be f32 of its shape, 'tensor<2xf32>', but got 'tensor<2xf16>'}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) wrt(%slopes : tensor<2xf32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<2xf32>
        %r = arith.addf %s, %slope : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf16>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xf32>, %ds: tensor<2xf32>) {
  // expected-error @+1 {{expected wrt #1 to be listed once, but it repeats an earlier one}}
  %r:5 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) wrt(%slopes, %slopes : tensor<2xf32>, tensor<2xf32>)
      outs(%dq, %dk, %dv, %ds, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<2xf32>
        %r = arith.addf %s, %slope : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xf32>, %ds: tensor<2xf32>, %c: i1) {
  // expected-error @+1 {{can differentiate only the score_mod's reads in its own block, but wrt #0 is read inside a nested region}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) wrt(%slopes : tensor<2xf32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %x = scf.if %c -> f32 {
          // expected-note @+1 {{here}}
          %slope = tensor.extract %slopes[%h] : tensor<2xf32>
          scf.yield %slope : f32
        } else {
          %z = arith.constant 0.0 : f32
          scf.yield %z : f32
        }
        %r = arith.addf %s, %x : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%q: tensor<1x2x16x64xf32>, %k: tensor<1x2x32x64xf32>, %v: tensor<1x2x32x64xf32>, %o: tensor<1x2x16x64xf32>, %do: tensor<1x2x16x64xf32>, %l: tensor<1x2x16xf32>, %dq: tensor<1x2x16x64xf32>, %dk: tensor<1x2x32x64xf32>, %dv: tensor<1x2x32x64xf32>, %slopes: tensor<2xf32>, %ds: tensor<2xf32>) {
  // expected-error @+1 {{needs the derivative of its score_mod with respect to what it reads of wrt #0, but 'math.floor' on the path from it has none}}
  %r:4 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16x64xf32>, tensor<1x2x16xf32>) wrt(%slopes : tensor<2xf32>)
      outs(%dq, %dk, %dv, %ds : tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %slope = tensor.extract %slopes[%h] : tensor<2xf32>
        // expected-note @+1 {{here; the derivative is known for}}
        %f = math.floor %slope : f32
        %r = arith.addf %s, %f : f32
        attn.yield %r : f32
      }
      -> tensor<1x2x16x64xf32>, tensor<1x2x32x64xf32>, tensor<1x2x32x64xf32>, tensor<2xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %do: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf32>, %dq: tensor<2x8x16x64xf32>, %dk: tensor<2x2x32x64xf32>, %dv: tensor<2x2x32x64xf32>, %bm: !attn.block_mask<q_block = 128, kv_block = 128>) {
  // expected-error @+1 {{has a block_mask but no mask_mod: partial blocks need the elementwise mask}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %l : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
      outs(%dq, %dk, %dv : tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      -> tensor<2x8x16x64xf32>, tensor<2x2x32x64xf32>, tensor<2x2x32x64xf32>
  return
}

// -----

func.func @f(%q: tensor<1x4x16x32xf32>, %k: tensor<1x1x8x32xf32>, %v: tensor<1x1x8x32xf32>, %l: tensor<1x4x16xf32>, %i: index) {
  // expected-error @+1 {{expected 2 offsets (b, h) or none, but got 4}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %q, %q, %l : tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16xf32>)
      outs(%q, %k, %v : tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>)
      offsets(%i, %i, %i, %i)
      -> tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>
  return
}

// -----

// The GPU kernels compute whole problems, not tiles.
func.func @f(%q: tensor<1x4x64x32xbf16>, %k: tensor<1x1x64x32xbf16>, %v: tensor<1x1x64x32xbf16>, %l: tensor<1x4x64xf32>, %i: index) {
  // expected-error @+1 {{cannot run on the mma_sync backward kernel: it computes whole problems, not a tile with offsets}}
  %r:3 = attn.attention_grad ins(%q, %k, %v, %q, %q, %l : tensor<1x4x64x32xbf16>, tensor<1x1x64x32xbf16>, tensor<1x1x64x32xbf16>, tensor<1x4x64x32xbf16>, tensor<1x4x64x32xbf16>, tensor<1x4x64xf32>)
      outs(%q, %k, %v : tensor<1x4x64x32xbf16>, tensor<1x1x64x32xbf16>, tensor<1x1x64x32xbf16>)
      offsets(%i, %i) {kernel = #attn.kernel<mma_sync, q_tile = 64, kv_tile = 64, stages = 2>}
      -> tensor<1x4x64x32xbf16>, tensor<1x1x64x32xbf16>, tensor<1x1x64x32xbf16>
  return
}
