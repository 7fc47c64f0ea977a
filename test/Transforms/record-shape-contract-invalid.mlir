// RUN: attn-opt %s --attn-record-shape-contract --split-input-file -verify-diagnostics

// A block mask built for other sizes than the attention's is refused where
// the sizes are fixed (FlexAttention refuses it too); the kernels would read
// lists the mask does not have.
func.func @heads(%q: tensor<1x3x?x64xf32>, %k: tensor<1x3x?x64xf32>, %v: tensor<1x3x?x64xf32>, %o: tensor<1x3x?x64xf32>) -> tensor<1x3x?x64xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<1x3x?x64xf32>
  %n = tensor.dim %k, %c2 : tensor<1x3x?x64xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%c2) q_len(%m) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  // expected-error @+1 {{expected the block mask's heads to be 1 or the query's heads (3), but it is 2}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>, tensor<1x3x?x64xf32>)
      outs(%o : tensor<1x3x?x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 16, kv_block = 16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
      -> tensor<1x3x?x64xf32>
  return %r : tensor<1x3x?x64xf32>
}

// -----

func.func @kv_len(%q: tensor<1x1x128x64xf32>, %k: tensor<1x1x256x64xf32>, %v: tensor<1x1x256x64xf32>, %o: tensor<1x1x128x64xf32>) -> tensor<1x1x128x64xf32> {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%c128) kv_len(%c128) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  // expected-error @+1 {{expected the block mask's kv_len to be the kv length (256), but it is 128}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x128x64xf32>, tensor<1x1x256x64xf32>, tensor<1x1x256x64xf32>)
      outs(%o : tensor<1x1x128x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 16, kv_block = 16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
      -> tensor<1x1x128x64xf32>
  return %r : tensor<1x1x128x64xf32>
}

// -----

// Lists of 2 rows of 64 cannot cover 200 query rows.
func.func @rows(%q: tensor<1x1x200x64xf16>, %k: tensor<1x1x?x64xf16>, %v: tensor<1x1x?x64xf16>, %o: tensor<1x1x200x64xf16>, %num: tensor<1x1x2xi32>, %idx: tensor<1x1x2x4xi32>) -> tensor<1x1x200x64xf16> {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x2xi32>, tensor<1x1x2x4xi32>) : !attn.block_mask<q_block = 64, kv_block = 64>
  // expected-error @+1 {{expected the block mask's rows to be at least the query length in blocks of 64 (4), but it is 2}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x200x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>)
      outs(%o : tensor<1x1x200x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 64, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
      -> tensor<1x1x200x64xf16>
  return %r : tensor<1x1x200x64xf16>
}

// -----

// A size computed from others: nothing could check it.
func.func @computed(%q: tensor<1x1x?x64xf32>, %k: tensor<1x1x?x64xf32>, %v: tensor<1x1x?x64xf32>, %o: tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : tensor<1x1x?x64xf32>
  %m1 = arith.addi %m, %c1 : index
  %n = tensor.dim %k, %c2 : tensor<1x1x?x64xf32>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m1) kv_len(%n) : !attn.block_mask<q_block = 16, kv_block = 16>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  // expected-error @+1 {{cannot check that the block mask's q_len is the query length: make each a constant or a tensor.dim of a function argument}}
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
      outs(%o : tensor<1x1x?x64xf32>)
      block_mask(%bm : !attn.block_mask<q_block = 16, kv_block = 16>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
      -> tensor<1x1x?x64xf32>
  return %r : tensor<1x1x?x64xf32>
}

// -----

// A field's static result type must be its mask's sizes.
func.func @field(%n: index) -> tensor<2x?x?x?xi32> {
  %c1 = arith.constant 1 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  // expected-error @+1 {{expected the result's dim 0 to be the mask's batch (1), but it is 2}}
  %f = attn.block_mask_field full_q_indices of %bm : !attn.block_mask<q_block = 128, kv_block = 128> -> tensor<2x?x?x?xi32>
  return %f : tensor<2x?x?x?xi32>
}

// -----

func.func @field_rows() -> tensor<1x1x3xi32> {
  %c1 = arith.constant 1 : index
  %c300 = arith.constant 300 : index
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%c300) kv_len(%c300) : !attn.block_mask<q_block = 128, kv_block = 64>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %ge = arith.cmpi uge, %qi, %kv : index
        attn.yield %ge : i1
      }
  // expected-error @+1 {{expected the result's dim 2 to be the mask's kv_len in blocks of 64 (5), but it is 3}}
  %f = attn.block_mask_field q_num_blocks of %bm : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<1x1x3xi32>
  return %f : tensor<1x1x3xi32>
}
