// A backward whose regions read the batch and the query head: keys up to
// 5 * b past the diagonal are kept, and each score is shifted by
// 0.25 * b - 0.125 * h. A tile of it sees its batch and heads only through
// its offsets (test/Integration/tiled-backward.test).
!t = tensor<?x?x?x32xf32>
func.func @attention_grad(%query: !t, %key: !t, %value: !t, %out: !t,
                          %grad_out: !t, %logsumexp: tensor<?x?x?xf32>,
                          %grad_query: !t, %grad_key: !t, %grad_value: !t)
    -> (!t, !t, !t) {
  %r:3 = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : !t, !t, !t, !t, !t, tensor<?x?x?xf32>)
      outs(%grad_query, %grad_key, %grad_value : !t, !t, !t)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
        %bi = arith.index_cast %b : index to i32
        %hi = arith.index_cast %h : index to i32
        %bf = arith.sitofp %bi : i32 to f32
        %hf = arith.sitofp %hi : i32 to f32
        %quarter = arith.constant 0.25 : f32
        %eighth = arith.constant 0.125 : f32
        %up = arith.mulf %bf, %quarter : f32
        %down = arith.mulf %hf, %eighth : f32
        %shift = arith.subf %up, %down : f32
        %r = arith.addf %s, %shift : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %c5 = arith.constant 5 : index
        %ahead = arith.muli %b, %c5 : index
        %limit = arith.addi %q, %ahead : index
        %keep = arith.cmpi ule, %kv, %limit : index
        attn.yield %keep : i1
      }
      -> !t, !t, !t
  return %r#0, %r#1, %r#2 : !t, !t, !t
}
