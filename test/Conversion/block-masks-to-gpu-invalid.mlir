// RUN: attn-opt %s --attn-block-masks-to-gpu --verify-diagnostics

// The GPU's lists live in the function's scratch buffer until it returns:
// a block mask made inside a region has no function-wide place there.
func.func @nested(%n: index, %c: i1) {
  %c1 = arith.constant 1 : index
  scf.if %c {
    // expected-error @+1 {{must be at the top level of a function to be built on the GPU}}
    %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
        : !attn.block_mask<q_block = 128, kv_block = 64>
        mask_mod {
        ^bb0(%b: index, %h: index, %q: index, %kv: index):
          %keep = arith.cmpi uge, %q, %kv : index
          attn.yield %keep : i1
        }
  }
  return
}
