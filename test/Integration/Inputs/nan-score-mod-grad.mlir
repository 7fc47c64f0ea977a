// A score_mod that is NaN at (q, kv) = (0, 5): row 0's logsumexp is NaN,
// and so are its dQ and, through it, every dK and dV its keys get, in the
// kernel as in the reference.
func.func @attention_grad(%query: tensor<?x?x?x16xf32>, %key: tensor<?x?x?x16xf32>, %value: tensor<?x?x?x16xf32>, %out: tensor<?x?x?x16xf32>, %grad_out: tensor<?x?x?x16xf32>, %logsumexp: tensor<?x?x?xf32>, %grad_query: tensor<?x?x?x16xf32>, %grad_key: tensor<?x?x?x16xf32>, %grad_value: tensor<?x?x?x16xf32>) -> (tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>) {
  %r:3 = attn.attention_grad ins(%query, %key, %value, %out, %grad_out, %logsumexp : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?xf32>)
      outs(%grad_query, %grad_key, %grad_value : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %q: index, %kv: index):
        %c0 = arith.constant 0 : index
        %c5 = arith.constant 5 : index
        %p = arith.cmpi eq, %q, %c0 : index
        %k = arith.cmpi eq, %kv, %c5 : index
        %pk = arith.andi %p, %k : i1
        %z = arith.constant 0.0 : f32
        %n = arith.divf %z, %z : f32
        %y = arith.select %pk, %n, %s : f32
        attn.yield %y : f32
      }
      -> tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>
  return %r#0, %r#1, %r#2 : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>
}
