// RUN: attn-opt %s --attn-record-shape-contract --split-input-file | FileCheck %s

// A block mask must have been built for the attention that uses it. Sizes
// taken from the attention's arguments agree by construction; sizes of other
// arguments, or constants against dynamic dims, become constraints. A fixed
// right side is written [-1, size]; a fifth number counts it in blocks.

// Built from q's and k's own dims, for every batch (1): nothing to add.
// CHECK-LABEL: func.func @created_for_the_attention
// CHECK-SAME: attn.shape_contract = {constraints = [
// CHECK-NOT: block mask
// CHECK-SAME: names = ["q", "k", "v", "out"]
func.func @created_for_the_attention(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>,
    %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %h = tensor.dim %q, %c1 : tensor<?x?x?x64xf16>
  %m = tensor.dim %q, %c2 : tensor<?x?x?x64xf16>
  %n = tensor.dim %k, %c2 : tensor<?x?x?x64xf16>
  %bm = attn.create_block_mask batch(%c1) heads(%h) q_len(%m) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>)
      outs(%o : tensor<?x?x?x64xf16>) block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xf16>
  return %r : tensor<?x?x?x64xf16>
}

// -----

// Heads from k (1 or Hq at run time), a constant q_len against a dynamic M,
// a constant batch of 2 against a dynamic B.
// CHECK-LABEL: func.func @created_from_other_sizes
// CHECK-SAME: ["equal", array<i64: 0, 0, -1, 2>, "the query's batch, fixed by the block mask's batch"]
// CHECK-SAME: ["one_or_equal", array<i64: 1, 1, 0, 1>, "the block mask's heads"]
// CHECK-SAME: ["equal", array<i64: 0, 2, -1, 300>, "the query length, fixed by the block mask's q_len"]
func.func @created_from_other_sizes(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>,
    %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c300 = arith.constant 300 : index
  %hk = tensor.dim %k, %c1 : tensor<?x?x?x64xf16>
  %n = tensor.dim %k, %c2 : tensor<?x?x?x64xf16>
  %bm = attn.create_block_mask batch(%c2) heads(%hk) q_len(%c300) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>)
      outs(%o : tensor<?x?x?x64xf16>) block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xf16>
  return %r : tensor<?x?x?x64xf16>
}

// -----

// Given lists: batch and heads 1 or the query's, rows covering M's 64-row
// blocks, every list with the counts' leading dims.
// CHECK-LABEL: func.func @given_lists
// CHECK-SAME: ["equal", array<i64: 5, 0, 4, 0>, "a block-mask list's leading dim"]
// CHECK-SAME: ["equal", array<i64: 5, 2, 4, 2>, "a block-mask list's leading dim"]
// CHECK-SAME: ["one_or_equal", array<i64: 4, 0, 0, 0>, "the block mask's batch"]
// CHECK-SAME: ["one_or_equal", array<i64: 4, 1, 0, 1>, "the block mask's heads"]
// CHECK-SAME: ["at_least", array<i64: 4, 2, 0, 2, 64>, "the block mask's rows"]
func.func @given_lists(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>,
    %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16>,
    %num: tensor<?x?x?xi32>, %idx: tensor<?x?x?x?xi32>) -> tensor<?x?x?x64xf16> {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<?x?x?xi32>, tensor<?x?x?x?xi32>) : !attn.block_mask<q_block = 64, kv_block = 64>
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>)
      outs(%o : tensor<?x?x?x64xf16>) block_mask(%bm : !attn.block_mask<q_block = 64, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xf16>
  return %r : tensor<?x?x?x64xf16>
}

// -----

// Lists of a static 8 rows of 32: M at most 256.
// CHECK-LABEL: func.func @static_lists
// CHECK-SAME: ["at_most", array<i64: 0, 2, -1, 256>, "the query length, fixed by the block mask's rows"]
func.func @static_lists(%q: tensor<1x1x?x64xf16>, %k: tensor<1x1x?x64xf16>,
    %v: tensor<1x1x?x64xf16>, %o: tensor<1x1x?x64xf16>,
    %num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>) -> tensor<1x1x?x64xf16> {
  %bm = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) : !attn.block_mask<q_block = 32, kv_block = 32>
  %r = attn.attention ins(%q, %k, %v : tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x64xf16>)
      outs(%o : tensor<1x1x?x64xf16>) block_mask(%bm : !attn.block_mask<q_block = 32, kv_block = 32>)
      mask_mod {
      ^bb0(%b: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x1x?x64xf16>
  return %r : tensor<1x1x?x64xf16>
}

// -----

// A query computed in the function: no argument's dim to check, but a mask
// sized by that very query's dims agrees with it.
// CHECK-LABEL: func.func @computed_query
// CHECK-SAME: attn.shape_contract
func.func @computed_query(%qa: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>,
    %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %q = tensor.cast %qa : tensor<?x?x?x64xf16> to tensor<?x?x?x64xf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x?x?x64xf16>
  %m = tensor.dim %q, %c2 : tensor<?x?x?x64xf16>
  %n = tensor.dim %k, %c2 : tensor<?x?x?x64xf16>
  %bm = attn.create_block_mask batch(%b) heads(%c1) q_len(%m) kv_len(%n) : !attn.block_mask<q_block = 128, kv_block = 128>
      mask_mod {
      ^bb0(%bb: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>)
      outs(%o : tensor<?x?x?x64xf16>) block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%bb: index, %hh: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xf16>
  return %r : tensor<?x?x?x64xf16>
}

// -----

// Given lists, both sides (a backward's): the full index lists are as wide
// as their side's partial ones (the kernels bound both by one width), and
// the q side has a row for every kv-block.
// CHECK-LABEL: func.func @given_both_sides
// CHECK-SAME: ["equal", array<i64: 9, 3, 7, 3>, "a full index list's width"]
// CHECK-SAME: ["equal", array<i64: 13, 3, 11, 3>, "a full index list's width"]
// CHECK-SAME: ["at_least", array<i64: 10, 2, 1, 2, 128>, "the block mask's q-side rows"]
func.func @given_both_sides(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>,
    %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16>, %do: tensor<?x?x?x64xf16>,
    %lse: tensor<?x?x?xf32>, %kvn: tensor<1x1x?xi32>, %kvi: tensor<1x1x?x?xi32>,
    %fkvn: tensor<1x1x?xi32>, %fkvi: tensor<1x1x?x?xi32>, %qn: tensor<1x1x?xi32>,
    %qi: tensor<1x1x?x?xi32>, %fqn: tensor<1x1x?xi32>, %fqi: tensor<1x1x?x?xi32>)
    -> (tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>) {
  %bm = attn.make_block_mask kv(%kvn, %kvi : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      full_kv(%fkvn, %fkvi : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      q(%qn, %qi : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      full_q(%fqn, %fqi : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  %r:3 = attn.attention_grad ins(%q, %k, %v, %o, %do, %lse : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?xf32>)
      outs(%q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 128>)
      mask_mod {
      ^bb0(%b: index, %hh: index, %i: index, %j: index):
        %keep = arith.cmpi uge, %i, %j : index
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>
  return %r#0, %r#1, %r#2 : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>
}
