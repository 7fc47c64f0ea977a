// Two learnt tensors: a per-head gain on the score and a relative-position
// bias per head, score * gain[h] + bias[h, |q - kv|]. Their gradients come
// back next to dQ, dK and dV; bias elements are read by many positions
// each, so their sums cancel (the check divides by the sum of |terms|).
func.func @attention_grad(%query: tensor<?x?x?x32xf16>, %key: tensor<?x?x?x32xf16>, %value: tensor<?x?x?x32xf16>, %out: tensor<?x?x?x32xf16>, %grad_out: tensor<?x?x?x32xf16>, %logsumexp: tensor<?x?x?xf32>, %grad_query: tensor<?x?x?x32xf32>, %grad_key: tensor<?x?x?x32xf32>, %grad_value: tensor<?x?x?x32xf32>, %grad_gain: tensor<?xf32>, %grad_bias: tensor<?x?xf32>, %gain: tensor<?xf32>, %bias: tensor<?x?xf32>) -> (tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?xf32>, tensor<?x?xf32>) {
  %r:5 = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : tensor<?x?x?x32xf16>, tensor<?x?x?x32xf16>, tensor<?x?x?x32xf16>, tensor<?x?x?x32xf16>, tensor<?x?x?x32xf16>, tensor<?x?x?xf32>)
      wrt(%gain, %bias : tensor<?xf32>, tensor<?x?xf32>)
      outs(%grad_query, %grad_key, %grad_value, %grad_gain, %grad_bias : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?xf32>, tensor<?x?xf32>)
      {causal}
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
        %g = tensor.extract %gain[%h] : tensor<?xf32>
        %gs = arith.mulf %s, %g : f32
        %d1 = arith.subi %q, %kv : index
        %d2 = arith.subi %kv, %q : index
        %d = arith.maxsi %d1, %d2 : index
        %bd = tensor.extract %bias[%h, %d] : tensor<?x?xf32>
        %r = arith.addf %gs, %bd : f32
        attn.yield %r : f32
      }
      -> tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?xf32>, tensor<?x?xf32>
  return %r#0, %r#1, %r#2, %r#3, %r#4 : tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?x?x?x32xf32>, tensor<?xf32>, tensor<?x?xf32>
}
