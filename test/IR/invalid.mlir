// Every malformed op gets a diagnostic at the op (or at the offending op in
// its region) naming the operand and what was expected.
// RUN: attn-opt %s -split-input-file -verify-diagnostics
//
// Generated cases are kept readable on purpose: one mistake per split.

func.func @f(%q: tensor<8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected query to have rank 4 ([B, Hq, M, D]), but got 'tensor<8x16x64xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64x1xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected key to have rank 4 ([B, Hkv, N, D]), but got 'tensor<2x2x32x64x1xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64x1xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected value to have rank 4 ([B, Hkv, N, Dv]), but got 'tensor<2x32x64xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16xf16>) {
  // expected-error @+1 {{expected output to have rank 4 ([B, Hq, M, Dv]), but got 'tensor<2x8x16xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16xf16>)
      -> tensor<2x8x16xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xi32>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected query element type to be f16, bf16 or f32, but got 'i32'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xi32>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf64>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected query element type to be f16, bf16 or f32, but got 'f64'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf64>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xbf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected key element type to equal the query's ('f16'), but got 'bf16'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xbf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf32>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected value element type to equal the query's ('f16'), but got 'f32'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf32>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xi8>) {
  // expected-error @+1 {{expected output element type to be f16, bf16 or f32, but got 'i8'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xi8>)
      -> tensor<2x8x16x64xi8>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x?xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected a static head dim (dim 3) in query, but got 'tensor<2x8x16x?xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x?xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x8xf16>, %k: tensor<2x2x32x8xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected the head dim of query to be a multiple of 8 from 16 to 256, but got 8}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x8xf16>, tensor<2x2x32x8xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x512xf16>, %k: tensor<2x2x32x512xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected the head dim of query to be a multiple of 8 from 16 to 256, but got 512}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x512xf16>, tensor<2x2x32x512xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x36xf16>, %o: tensor<2x8x16x36xf16>) {
  // expected-error @+1 {{expected the head dim of value to be a multiple of 8 from 16 to 256, but got 36}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x36xf16>)
      outs(%o : tensor<2x8x16x36xf16>)
      -> tensor<2x8x16x36xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x?xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected a static head dim (dim 3) in key, but got 'tensor<2x2x32x?xf16>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x?xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x128xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected key dim 3 (head dim D) to equal query dim 3 (64), but got 128}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x128xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<3x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected key dim 0 (batch) to equal query dim 0 (2), but got 3}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<3x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<1x8x16x64xf16>) {
  // expected-error @+1 {{expected output dim 0 (batch) to equal query dim 0 (2), but got 1}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<1x8x16x64xf16>)
      -> tensor<1x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x4x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected value dim 1 (kv heads) to equal key dim 1 (2), but got 4}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x4x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x31x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected value dim 2 (kv length N) to equal key dim 2 (32), but got 31}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x31x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x4x16x64xf16>) {
  // expected-error @+1 {{expected output dim 1 (query heads) to equal query dim 1 (8), but got 4}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x4x16x64xf16>)
      -> tensor<2x4x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x17x64xf16>) {
  // expected-error @+1 {{expected output dim 2 (query length M) to equal query dim 2 (16), but got 17}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x17x64xf16>)
      -> tensor<2x8x17x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x32xf16>) {
  // expected-error @+1 {{expected output dim 3 (value head dim Dv) to equal value dim 3 (64), but got 32}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x32xf16>)
      -> tensor<2x8x16x32xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x3x32x64xf16>, %v: tensor<2x3x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected query heads (8) to be a multiple of key/value heads (3)}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x3x32x64xf16>, tensor<2x3x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected scale to be a finite positive number, but got 0}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>) {scale = 0.0 : f32}
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected scale to be a finite positive number, but got -1}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>) {scale = -1.0 : f32}
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected scale to be a finite positive number, but got nan}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>) {scale = 0x7FC00000 : f32}
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected scale to be a finite positive number, but got INF}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>) {scale = 0x7F800000 : f32}
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf32>) {
  // expected-error @+1 {{expected 1 or 2 outputs (the output, then optionally the logsumexp), but got 3}}
  %r:3 = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o, %l, %l : tensor<2x8x16x64xf16>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
      -> tensor<2x8x16x64xf16>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %l: tensor<2x8xf32>) {
  // expected-error @+1 {{expected logsumexp to have rank 3 ([B, Hq, M]), but got 'tensor<2x8xf32>'}}
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o, %l : tensor<2x8x16x64xf16>, tensor<2x8xf32>)
      -> tensor<2x8x16x64xf16>, tensor<2x8xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf16>) {
  // expected-error @+1 {{expected logsumexp element type to be f32, but got 'f16'}}
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o, %l : tensor<2x8x16x64xf16>, tensor<2x8x16xf16>)
      -> tensor<2x8x16x64xf16>, tensor<2x8x16xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %l: tensor<2x8x32xf32>) {
  // expected-error @+1 {{expected logsumexp dim 2 (query length M) to equal query dim 2 (16), but got 32}}
  %r:2 = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o, %l : tensor<2x8x16x64xf16>, tensor<2x8x32xf32>)
      -> tensor<2x8x16x64xf16>, tensor<2x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %l: tensor<2x8x16xf32>) {
  // expected-error @+1 {{expected one result per output (2), but got 1}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o, %l : tensor<2x8x16x64xf16>, tensor<2x8x16xf32>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected result #0 type to equal output #0 type 'tensor<2x8x16x64xf16>', but got 'tensor<2x8x16x64xf32>'}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      -> tensor<2x8x16x64xf32>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected score_mod to take (f32, index, index, index, index) [score, b, h, q, kv], but it takes (f32, index)}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index):
        attn.yield %s : f32
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected score_mod to take (f32, index, index, index, index) [score, b, h, q, kv], but it takes (f16, index, index, index, index)}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      score_mod {
      ^bb0(%s: f16, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.0 : f32
        attn.yield %c : f32
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %t = arith.constant true
    // expected-error @+1 {{expected score_mod to yield one 'f32', but it yields (i1)}}
        attn.yield %t : i1
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  // expected-error @+1 {{expected mask_mod to take (index, index, index, index) [b, h, q, kv], but it takes (index, index, index)}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index):
        %t = arith.constant true
        attn.yield %t : i1
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.0 : f32
    // expected-error @+1 {{expected mask_mod to yield one 'i1', but it yields (f32, f32)}}
        attn.yield %c, %c : f32, f32
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %buf: memref<4xi32>) {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %z = arith.constant 0 : i32
    // expected-error @+1 {{has side effects, but mask_mod of 'attn.attention' must be free of side effects}}
        memref.store %z, %buf[%b] : memref<4xi32>
        %t = arith.constant true
        attn.yield %t : i1
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>) {
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{has side effects, but score_mod of 'attn.attention' must be free of side effects}}
        %r = func.call @opaque(%s) : (f32) -> f32
        attn.yield %r : f32
      }
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%q: tensor<2x8x16x64xf16>, %k: tensor<2x2x32x64xf16>, %v: tensor<2x2x32x64xf16>, %o: tensor<2x8x16x64xf16>, %bm: !attn.block_mask<q_block = 128, kv_block = 128>) {
  // expected-error @+1 {{has a block_mask but no mask_mod: partial blocks need the elementwise mask}}
  %r = attn.attention ins(%q, %k, %v : tensor<2x8x16x64xf16>, tensor<2x2x32x64xf16>, tensor<2x2x32x64xf16>)
      outs(%o : tensor<2x8x16x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      -> tensor<2x8x16x64xf16>
  return
}

// -----

func.func @f(%s: tensor<4x16xf32>, %m: tensor<8xf32>, %l: tensor<8xf32>) {
  // expected-error @+1 {{expected max dim 0 (rows) to equal scores dim 0 (4), but got 8}}
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<4x16xf32>, tensor<8xf32>
  return
}

// -----

func.func @f(%s: tensor<4x16xf32>, %m: tensor<4x16xf32>, %l: tensor<4x16xf32>) {
  // expected-error @+1 {{expected max and sum to have rank 1 (the scores' rank less the reduced last dim), but got 'tensor<4x16xf32>'}}
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<4x16xf32>, tensor<4x16xf32>
  return
}

// -----

func.func @f(%s: tensor<4x16xf16>, %m: tensor<4xf16>, %l: tensor<4xf16>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<4x16xf16>'}}
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<4x16xf16>, tensor<4xf16>
  return
}

// -----

func.func @f(%s: tensor<4x16xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>) {
  // expected-error @+1 {{expected scale to be a finite positive number, but got -2}}
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l {scale = -2.0 : f32} : tensor<4x16xf32>, tensor<4xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %y: tensor<f32>) {
  // expected-error @+1 {{expected input to have rank 1 or more, but got 'tensor<f32>'}}
  %r = attn.softmax ins(%x : tensor<f32>) outs(%y : tensor<f32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<4x16xi32>, %y: tensor<4x16xf32>) {
  // expected-error @+1 {{expected input element type to be f16, bf16 or f32, but got 'i32'}}
  %r = attn.softmax ins(%x : tensor<4x16xi32>) outs(%y : tensor<4x16xf32>) -> tensor<4x16xf32>
  return
}

// -----

func.func @f(%x: tensor<4x16xf32>, %y: tensor<4x32xf32>) {
  // expected-error @+1 {{expected output dim 1 (shape) to equal input dim 1 (16), but got 32}}
  %r = attn.softmax ins(%x : tensor<4x16xf32>) outs(%y : tensor<4x32xf32>) -> tensor<4x32xf32>
  return
}

// -----

func.func @f(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) {
  // expected-error @+1 {{expected result type to equal output type 'tensor<4x16xf32>', but got 'tensor<4x16xf16>'}}
  %r = attn.softmax ins(%x : tensor<4x16xf32>) outs(%y : tensor<4x16xf32>) -> tensor<4x16xf16>
  return
}

// -----

// expected-error @+1 {{expected q_block to be a power of two from 16 to 1024, but got 100}}
func.func @f(%bm: !attn.block_mask<q_block = 100, kv_block = 128>) {
  return
}

// -----

// expected-error @+1 {{expected kv_block to be a power of two from 16 to 1024, but got 2048}}
func.func @f(%bm: !attn.block_mask<q_block = 128, kv_block = 2048>) {
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{expected mask_mod to take (index, index, index, index) [b, h, q, kv], but it takes (i32, i32, i32, i32)}}
  %bm = attn.create_block_mask batch(%n) heads(%n) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: i32, %h: i32, %q: i32, %kv: i32):
        %t = arith.constant true
        attn.yield %t : i1
      }
  return
}

// -----

func.func @f(%n: index) {
  %bm = attn.create_block_mask batch(%n) heads(%n) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %t = arith.constant 1 : i32
        // expected-error @+1 {{expected mask_mod to yield one 'i1', but it yields (i32)}}
        attn.yield %t : i32
      }
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{region #0 ('mask_mod') failed to verify constraint: region with 1 blocks}}
  %bm = attn.create_block_mask batch(%n) heads(%n) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      }
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi64>, %idx: tensor<1x1x8x8xi32>) {
  // expected-error @+1 {{expected kv_num_blocks to be an i32 tensor of rank 3 [B, H, blocks], but got 'tensor<1x1x8xi64>'}}
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi64>, tensor<1x1x8x8xi32>) : !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x8x8xi32>) {
  // expected-error @+1 {{expected kv_indices to be an i32 tensor of rank 4 [B, H, blocks, blocks], but got 'tensor<1x8x8xi32>'}}
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x8x8xi32>) : !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x4x8xi32>) {
  // expected-error @+1 {{expected kv_indices dim 2 (leading dims) to equal kv_num_blocks dim 2 (8), but got 4}}
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x4x8xi32>) : !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>, %fnum: tensor<1x1x8xi32>) {
  // expected-error @+1 {{expected both full_kv_num_blocks and full_kv_indices, or neither}}
  %bm = "attn.make_block_mask"(%num, %idx, %fnum) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>}> : (tensor<1x1x8xi32>, tensor<1x1x8x8xi32>, tensor<1x1x8xi32>) -> !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>, %qnum: tensor<1x2x8xi32>, %qidx: tensor<1x2x8x8xi32>) {
  // expected-error @+1 {{expected q_indices dim 1 (batch and heads) to equal kv_indices dim 1 (1), but got 2}}
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      q(%qnum, %qidx : tensor<1x2x8xi32>, tensor<1x2x8x8xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>) {
  // expected-error @+1 {{has full q-side lists but no partial ones}}
  %bm = "attn.make_block_mask"(%num, %idx, %num, %idx) <{operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 1, 1>}> : (tensor<1x1x8xi32>, tensor<1x1x8x8xi32>, tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) -> !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>, %fnum: tensor<1x1x4xi32>, %fidx: tensor<1x1x8x8xi32>) {
  // expected-error @+1 {{expected full_kv_num_blocks type to equal kv_num_blocks type 'tensor<1x1x8xi32>', but got 'tensor<1x1x4xi32>'}}
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) full_kv(%fnum, %fidx : tensor<1x1x4xi32>, tensor<1x1x8x8xi32>) : !attn.block_mask<q_block = 128, kv_block = 128>
  return
}

// -----

func.func @f(%bm: !attn.block_mask<q_block = 128, kv_block = 128>) {
  // expected-error @+1 {{expected result for q_indices to be an i32 tensor of rank 4 [B, H, blocks, blocks], but got 'tensor<?x?x?xi32>'}}
  %x = attn.block_mask_field q_indices of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xi32>
  return
}

// -----

func.func @f(%bm: !attn.block_mask<q_block = 128, kv_block = 128>) {
  // expected-error @+1 {{expected result for full_kv_num_blocks to be an i32 tensor of rank 3 [B, H, blocks], but got 'tensor<?x?x?xf32>'}}
  %x = attn.block_mask_field full_kv_num_blocks of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<?x?x?xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.attention_grad, attn.create_block_mask'}}
  attn.yield
}

// -----

func.func private @opaque(f32) -> f32

// -----

func.func @f(%po: tensor<1x8x1x64xf32>, %pl: tensor<1x8x1x4xf32>, %o: tensor<1x8x1x64xf16>) {
  // expected-error @+1 {{'attn.merge_splits' op expected partial_out to have rank 5 ([B, H, M, Dv, S]), but got 'tensor<1x8x1x64xf32>'}}
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64xf32>, tensor<1x8x1x4xf32>) outs(%o : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
  return
}

// -----

func.func @f(%po: tensor<1x8x1x64x4xf32>, %pl: tensor<1x8x1x3xf32>, %o: tensor<1x8x1x64xf16>) {
  // expected-error @+1 {{'attn.merge_splits' op expected partial_lse dim 3 (splits S) to equal partial_out dim 4 (4), but got 3}}
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x3xf32>) outs(%o : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
  return
}

// -----

func.func @f(%po: tensor<1x8x1x64x4xf32>, %pl: tensor<1x8x1x4xf32>, %o: tensor<1x8x1x32xf16>) {
  // expected-error @+1 {{'attn.merge_splits' op expected output dim 3 (value head dim) to equal partial_out dim 3 (64), but got 32}}
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>) outs(%o : tensor<1x8x1x32xf16>) -> tensor<1x8x1x32xf16>
  return
}

// -----

func.func @f(%po: tensor<1x8x1x64x4xf32>, %pl: tensor<1x8x1x4xf32>, %o: tensor<1x8x1x64xi32>) {
  // expected-error @+1 {{'attn.merge_splits' op expected output element type to be f16, bf16 or f32, but got 'i32'}}
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>) outs(%o : tensor<1x8x1x64xi32>) -> tensor<1x8x1x64xi32>
  return
}

// -----

func.func @f(%po: tensor<1x8x1x64x4xf32>, %pl: tensor<1x8x1x4xf32>, %o: tensor<1x8x1x64xf16>, %l: tensor<1x8x1xf16>) {
  // expected-error @+1 {{'attn.merge_splits' op expected logsumexp element type to be f32, but got 'f16'}}
  %0:2 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>) outs(%o, %l : tensor<1x8x1x64xf16>, tensor<1x8x1xf16>) -> tensor<1x8x1x64xf16>, tensor<1x8x1xf16>
  return
}

// -----

func.func @f(%po: tensor<1x8x1x64x4xf16>, %pl: tensor<1x8x1x4xf32>, %o: tensor<1x8x1x64xf16>) {
  // expected-error @+1 {{'attn.merge_splits' op operand #0 must be ranked tensor of 32-bit float values, but got 'tensor<1x8x1x64x4xf16>'}}
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf16>, tensor<1x8x1x4xf32>) outs(%o : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{'attn.workspace' op must be a memref<?xi32> in the default memory space (its size is `words`), got 'memref<16xi32>'}}
  %ws = attn.workspace %n : memref<16xi32>
  return
}

// -----

func.func @f(%n: index) {
  // expected-error @+1 {{'attn.workspace' op result #0 must be 1D memref of 32-bit signless integer values, but got 'memref<?xf32>'}}
  %ws = attn.workspace %n : memref<?xf32>
  return
}

// -----

func.func @f() {
  // expected-error @+1 {{custom op 'attn.multiprocessor_count' invalid kind of type specified: expected builtin.index, but found 'i32'}}
  %n = attn.multiprocessor_count : i32
  return
}

// -----

func.func @f(%k: memref<?x2x?x128xbf16>) {
  // expected-error @+1 {{'attn.tensor_map' op the innermost box dim must be 32, 64 or 128 bytes (the swizzle of its rows), got 256}}
  %map = attn.tensor_map %k box [1, 1, 128, 128] : memref<?x2x?x128xbf16> -> !llvm.ptr
  return
}

// -----

func.func @f(%k: memref<?x2x?x128xbf16>) {
  // expected-error @+1 {{'attn.tensor_map' op needs a box of one size per dim of the source, 1 to 5 of them; got 2 for rank 4}}
  %map = attn.tensor_map %k box [128, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
  return
}

// -----

func.func @f(%k: memref<?x2x?x128xbf16>) {
  // expected-error @+1 {{'attn.tensor_map' op box sizes must be 1 to 256, got 512}}
  %map = attn.tensor_map %k box [1, 1, 512, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
  return
}

// -----

func.func @f(%k: memref<?x128xi32>) {
  // expected-error @+1 {{'attn.tensor_map' op maps f16, bf16 or f32 elements, got 'i32'}}
  %map = attn.tensor_map %k box [128, 32] : memref<?x128xi32> -> !llvm.ptr
  return
}

// -----

func.func @f(%k: memref<?x128xbf16, strided<[256, 1]>>) {
  // expected-error @+1 {{'attn.tensor_map' op needs a dense row-major memref in the default memory space, got 'memref<?x128xbf16, strided<[256, 1]>>'}}
  %map = attn.tensor_map %k box [128, 64] : memref<?x128xbf16, strided<[256, 1]>> -> !llvm.ptr
  return
}

// -----

// Sizes past the i32 lists and the launch grid, or below zero.
func.func @f() -> !attn.block_mask<q_block = 32, kv_block = 16> {
  %c1 = arith.constant 1 : index
  %m = arith.constant 300 : index
  %n = arith.constant -1 : index
  // expected-error @+1 {{'attn.create_block_mask' op expected kv_len to lie in [0, 2147483647], but it is -1}}
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n) : !attn.block_mask<q_block = 32, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  return %bm : !attn.block_mask<q_block = 32, kv_block = 16>
}

// -----

func.func @f(%n: index) -> !attn.block_mask<q_block = 16, kv_block = 16> {
  %c1 = arith.constant 1 : index
  %huge = arith.constant 9223372036854775807 : index
  // expected-error @+1 {{'attn.create_block_mask' op expected heads to lie in [0, 2147483647], but it is 9223372036854775807}}
  %bm = attn.create_block_mask batch(%c1) heads(%huge) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  return %bm : !attn.block_mask<q_block = 16, kv_block = 16>
}

// -----

// Regions compute in types every lowering has: not f8, not wider than i64.
func.func @f(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      outs(%o : tensor<1x2x?x64xbf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        // expected-error @+1 {{'arith.truncf' op computes with 'f8E4M3FN', but score_mod of 'attn.attention' may use only index, i1 to i64, f16, bf16, f32 and f64 values and ranked tensors of them}}
        %t = arith.truncf %s : f32 to f8E4M3FN
        %e = arith.extf %t : f8E4M3FN to f32
        attn.yield %e : f32
      }
      -> tensor<1x2x?x64xbf16>
  return %r : tensor<1x2x?x64xbf16>
}

// -----

func.func @f(%table: tensor<3xf8E4M3FN>, %q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      outs(%o : tensor<1x2x?x64xbf16>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        // expected-error @+1 {{'tensor.extract' op computes with 'tensor<3xf8E4M3FN>', but score_mod of 'attn.attention'}}
        %x = tensor.extract %table[%h] : tensor<3xf8E4M3FN>
        %e = arith.extf %x : f8E4M3FN to f32
        %y = arith.addf %s, %e : f32
        attn.yield %y : f32
      }
      -> tensor<1x2x?x64xbf16>
  return %r : tensor<1x2x?x64xbf16>
}

// -----

func.func @f(%n: index) -> !attn.block_mask<q_block = 16, kv_block = 16> {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        // expected-error @+1 {{'arith.index_cast' op computes with 'i128', but mask_mod of 'attn.create_block_mask'}}
        %w = arith.index_cast %qi : index to i128
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  return %bm : !attn.block_mask<q_block = 16, kv_block = 16>
}

// -----

// Tables come from the function's arguments, not from inside the region.
func.func @f(%q: tensor<1x2x?x64xbf16>, %k: tensor<1x2x?x64xbf16>, %v: tensor<1x2x?x64xbf16>, %o: tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>)
      outs(%o : tensor<1x2x?x64xbf16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c3 = arith.constant 3 : index
        %i = arith.remui %kv, %c3 : index
        // expected-error @+1 {{'arith.constant' op makes a 'tensor<3xf32>' inside mask_mod of 'attn.attention'; a region reads tensors only from the function's arguments (pass the table as one)}}
        %tab = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
        %x = tensor.extract %tab[%i] : tensor<3xf32>
        %c2 = arith.constant 2.0 : f32
        %keep = arith.cmpf olt, %x, %c2 : f32
        attn.yield %keep : i1
      }
      -> tensor<1x2x?x64xbf16>
  return %r : tensor<1x2x?x64xbf16>
}
