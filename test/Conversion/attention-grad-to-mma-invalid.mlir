// attn-attention-grad-to-mma refuses, naming why, a block mask whose lists
// its kernels cannot all read: the dK/dV kernel walks the q side.
// RUN: attn-opt %s --split-input-file --attn-choose-kernel=chip=sm_80 --attn-attention-grad-to-mma --verify-diagnostics

func.func @kv_side_only(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>,
                        %num: tensor<1x1x?xi32>, %idx: tensor<1x1x?x?xi32>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      full_kv(%num, %idx : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  // expected-error @+1 {{has a block mask made without q_num_blocks: the backward's kernels walk both sides' partial and full lists}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}

// -----

func.func @argument(%q: tensor<?x4x?x64xf16>, %l: tensor<?x4x?xf32>,
                    %bm: !attn.block_mask<q_block = 128, kv_block = 128>)
    -> (tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>) {
  // expected-error @+1 {{has a block mask that is neither an attn.create_block_mask nor an attn.make_block_mask in its function}}
  %r:3 = attn.attention_grad ins(%q, %q, %q, %q, %q, %l : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?xf32>)
      outs(%q, %q, %q : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>, tensor<?x4x?x64xf16>
}
