// Every op parses, prints and re-parses to the same IR, through the custom
// and the generic form.
// RUN: attn-opt %s | attn-opt | FileCheck %s
// RUN: attn-opt %s --mlir-print-op-generic | attn-opt | FileCheck %s
// RUN: attn-opt %s | attn-opt > %t.1 && attn-opt %s --mlir-print-op-generic | attn-opt > %t.2 && diff %t.1 %t.2

// CHECK-LABEL: func.func @plain
// CHECK: attn.attention ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x128x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>) outs(%{{.*}} : tensor<2x4x128x64xf32>) -> tensor<2x4x128x64xf32>
func.func @plain(%q: tensor<2x4x128x64xf32>, %k: tensor<2x4x256x64xf32>,
                 %v: tensor<2x4x256x64xf32>, %o: tensor<2x4x128x64xf32>)
    -> tensor<2x4x128x64xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<2x4x128x64xf32>, tensor<2x4x256x64xf32>, tensor<2x4x256x64xf32>)
      outs(%o : tensor<2x4x128x64xf32>) -> tensor<2x4x128x64xf32>
  return %r : tensor<2x4x128x64xf32>
}

// GQA with dynamic sizes, a scale, causal and the logsumexp.
// CHECK-LABEL: func.func @gqa_causal_lse
// CHECK: %{{.*}}:2 = attn.attention
// CHECK-SAME: outs(%{{.*}}, %{{.*}} : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>)
// CHECK-SAME: {causal, scale = 1.250000e-01 : f32}
// CHECK-SAME: -> tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
func.func @gqa_causal_lse(%q: tensor<?x8x?x128xbf16>, %k: tensor<?x2x?x128xbf16>,
                          %v: tensor<?x2x?x128xbf16>, %o: tensor<?x8x?x128xbf16>,
                          %lse: tensor<?x8x?xf32>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {
  %r:2 = attn.attention ins(%q, %k, %v : tensor<?x8x?x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16>)
      outs(%o, %lse : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>) {causal, scale = 0.125 : f32}
      -> tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
  return %r#0, %r#1 : tensor<?x8x?x128xbf16>, tensor<?x8x?xf32>
}

// MQA, f16 in, f32 out, Dv != D, ALiBi score_mod reading a captured tensor
// of per-head slopes.
// CHECK-LABEL: func.func @alibi
// CHECK: attn.attention
// CHECK-SAME: outs(%{{.*}} : tensor<1x8x?x32xf32>)
// CHECK: score_mod {
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: tensor.extract %{{.*}}[%[[H]]] : tensor<8xf32>
// CHECK: attn.yield %{{.*}} : f32
// CHECK: } mask_mod {
// CHECK: attn.yield %{{.*}} : i1
// CHECK: } -> tensor<1x8x?x32xf32>
func.func @alibi(%q: tensor<1x8x?x64xf16>, %k: tensor<1x1x?x64xf16>,
                 %v: tensor<1x1x?x32xf16>, %o: tensor<1x8x?x32xf32>,
                 %slopes: tensor<8xf32>) -> tensor<1x8x?x32xf32> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x?x64xf16>, tensor<1x1x?x64xf16>, tensor<1x1x?x32xf16>)
      outs(%o : tensor<1x8x?x32xf32>)
      score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
        %slope = tensor.extract %slopes[%h] : tensor<8xf32>
        %qi64 = arith.index_cast %qi : index to i64
        %kv64 = arith.index_cast %kv : index to i64
        %d = arith.subi %kv64, %qi64 : i64
        %df = arith.sitofp %d : i64 to f32
        %bias = arith.mulf %slope, %df : f32
        %r = arith.addf %s, %bias : f32
        attn.yield %r : f32
      }
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %keep = arith.cmpi uge, %qi, %kv : index
        attn.yield %keep : i1
      }
      -> tensor<1x8x?x32xf32>
  return %r : tensor<1x8x?x32xf32>
}

// Document masking through a block mask built from a captured tensor of
// document ids, then read back field by field.
// CHECK-LABEL: func.func @document_mask
// CHECK: %[[BM:.*]] = attn.create_block_mask batch(%[[C1:.*]]) heads(%[[C1]]) q_len(%[[N:.*]]) kv_len(%[[N]]) : <q_block = 128, kv_block = 64> mask_mod {
// CHECK: attn.yield %{{.*}} : i1
// CHECK: attn.attention
// CHECK-SAME: block_mask(%[[BM]] : !attn.block_mask<q_block = 128, kv_block = 64>)
// CHECK: attn.block_mask_field kv_num_blocks of %[[BM]] : <q_block = 128, kv_block = 64> -> tensor<?x?x?xi32>
// CHECK: attn.block_mask_field full_q_indices of %[[BM]] : <q_block = 128, kv_block = 64> -> tensor<1x1x?x?xi32>
func.func @document_mask(%q: tensor<1x4x?x64xf16>, %k: tensor<1x4x?x64xf16>,
                         %v: tensor<1x4x?x64xf16>, %o: tensor<1x4x?x64xf16>,
                         %doc: tensor<?xi32>)
    -> (tensor<1x4x?x64xf16>, tensor<?x?x?xi32>, tensor<1x1x?x?xi32>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %n = tensor.dim %doc, %c0 : tensor<?xi32>
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%n) kv_len(%n)
      : !attn.block_mask<q_block = 128, kv_block = 64>
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %dq = tensor.extract %doc[%qi] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        %causal = arith.cmpi uge, %qi, %kv : index
        %keep = arith.andi %same, %causal : i1
        attn.yield %keep : i1
      }
  %r = attn.attention ins(%q, %k, %v : tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?x64xf16>)
      outs(%o : tensor<1x4x?x64xf16>)
      block_mask(%bm : !attn.block_mask<q_block = 128, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %dq = tensor.extract %doc[%qi] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        %causal = arith.cmpi uge, %qi, %kv : index
        %keep = arith.andi %same, %causal : i1
        attn.yield %keep : i1
      }
      -> tensor<1x4x?x64xf16>
  %num = attn.block_mask_field kv_num_blocks of %bm
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<?x?x?xi32>
  %fqi = attn.block_mask_field full_q_indices of %bm
      : !attn.block_mask<q_block = 128, kv_block = 64> -> tensor<1x1x?x?xi32>
  return %r, %num, %fqi : tensor<1x4x?x64xf16>, tensor<?x?x?xi32>, tensor<1x1x?x?xi32>
}

// A block mask from precomputed tensors (PyTorch's create_block_mask), with
// and without the full-block lists, and with the q side a backward walks.
// CHECK-LABEL: func.func @make_block_mask
// CHECK: attn.make_block_mask kv(%{{.*}}, %{{.*}} : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) : <q_block = 128, kv_block = 128>
// CHECK: attn.make_block_mask kv(%{{.*}}, %{{.*}} : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) full_kv(%{{.*}}, %{{.*}} : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) : <q_block = 64, kv_block = 16>
// CHECK: attn.make_block_mask kv({{.*}}) full_kv({{.*}}) q(%{{.*}}, %{{.*}} : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) full_q(%{{.*}}, %{{.*}} : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>) : <q_block = 64, kv_block = 16>
func.func @make_block_mask(%num: tensor<1x1x8xi32>, %idx: tensor<1x1x8x8xi32>,
                           %fnum: tensor<1x1x8xi32>, %fidx: tensor<1x1x8x8xi32>)
    -> (!attn.block_mask<q_block = 128, kv_block = 128>, !attn.block_mask<q_block = 64, kv_block = 16>,
        !attn.block_mask<q_block = 64, kv_block = 16>) {
  %a = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      : !attn.block_mask<q_block = 128, kv_block = 128>
  %b = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      full_kv(%fnum, %fidx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      : !attn.block_mask<q_block = 64, kv_block = 16>
  %c = attn.make_block_mask kv(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      full_kv(%fnum, %fidx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      q(%num, %idx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      full_q(%fnum, %fidx : tensor<1x1x8xi32>, tensor<1x1x8x8xi32>)
      : !attn.block_mask<q_block = 64, kv_block = 16>
  return %a, %b, %c : !attn.block_mask<q_block = 128, kv_block = 128>, !attn.block_mask<q_block = 64, kv_block = 16>,
                      !attn.block_mask<q_block = 64, kv_block = 16>
}

// CHECK-LABEL: func.func @online_softmax
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = attn.online_softmax %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : tensor<64x128xf32>, tensor<64xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = attn.online_softmax %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x?x?xf32>, tensor<2x?xf32>
func.func @online_softmax(%s: tensor<64x128xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>,
                          %s2: tensor<2x?x?xf32>, %m2: tensor<2x?xf32>, %l2: tensor<2x?xf32>)
    -> (tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<2x?x?xf32>) {
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l {scale = 0.125 : f32}
      : tensor<64x128xf32>, tensor<64xf32>
  %p2, %m3, %l3, %c2 = attn.online_softmax %s2, %m2, %l2 : tensor<2x?x?xf32>, tensor<2x?xf32>
  return %p, %m1, %l1, %c, %p2 : tensor<64x128xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<2x?x?xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK: attn.softmax ins(%{{.*}} : tensor<?x4096xf16>) outs(%{{.*}} : tensor<?x4096xf16>) -> tensor<?x4096xf16>
// CHECK: attn.softmax ins(%{{.*}} : tensor<1048576xf32>) outs(%{{.*}} : tensor<1048576xbf16>) -> tensor<1048576xbf16>
func.func @softmax(%x: tensor<?x4096xf16>, %y: tensor<?x4096xf16>,
                   %a: tensor<1048576xf32>, %b: tensor<1048576xbf16>)
    -> (tensor<?x4096xf16>, tensor<1048576xbf16>) {
  %r = attn.softmax ins(%x : tensor<?x4096xf16>) outs(%y : tensor<?x4096xf16>) -> tensor<?x4096xf16>
  %s = attn.softmax ins(%a : tensor<1048576xf32>) outs(%b : tensor<1048576xbf16>) -> tensor<1048576xbf16>
  return %r, %s : tensor<?x4096xf16>, tensor<1048576xbf16>
}

// CHECK-LABEL: func.func @merge_splits
// CHECK: attn.merge_splits ins(%{{.*}}, %{{.*}} : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>) outs(%{{.*}} : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
// CHECK: attn.merge_splits ins(%{{.*}}, %{{.*}} : tensor<?x?x?x128x?xf32>, tensor<?x?x?x?xf32>) outs(%{{.*}}, %{{.*}} : tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>) -> tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
func.func @merge_splits(%po: tensor<1x8x1x64x4xf32>, %pl: tensor<1x8x1x4xf32>,
                        %o: tensor<1x8x1x64xf16>, %dpo: tensor<?x?x?x128x?xf32>,
                        %dpl: tensor<?x?x?x?xf32>, %do: tensor<?x?x?x128xbf16>,
                        %dl: tensor<?x?x?xf32>)
    -> (tensor<1x8x1x64xf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>) {
  %0 = attn.merge_splits ins(%po, %pl : tensor<1x8x1x64x4xf32>, tensor<1x8x1x4xf32>)
      outs(%o : tensor<1x8x1x64xf16>) -> tensor<1x8x1x64xf16>
  %1:2 = attn.merge_splits ins(%dpo, %dpl : tensor<?x?x?x128x?xf32>, tensor<?x?x?x?xf32>)
      outs(%do, %dl : tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>) -> tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
  return %0, %1#0, %1#1 : tensor<1x8x1x64xf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
}

// CHECK-LABEL: func.func @runtime_values
// CHECK: %[[SMS:.*]] = attn.multiprocessor_count : index
// CHECK: attn.workspace %[[SMS]] : memref<?xi32>
// CHECK: attn.workspace %[[SMS]] scratch : memref<?xi32>
func.func @runtime_values() -> memref<?xi32> {
  %sms = attn.multiprocessor_count : index
  %ws = attn.workspace %sms : memref<?xi32>
  %scratch = attn.workspace %sms scratch : memref<?xi32>
  return %ws : memref<?xi32>
}

// CHECK-LABEL: func.func @tensor_map
// CHECK: attn.tensor_map %{{.*}} box [1, 1, 128, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
func.func @tensor_map(%k: memref<?x2x?x128xbf16>) -> !llvm.ptr {
  %map = attn.tensor_map %k box [1, 1, 128, 64] : memref<?x2x?x128xbf16> -> !llvm.ptr
  return %map : !llvm.ptr
}

// A tile of a backward: its whole-problem batch and query head.
// CHECK-LABEL: func.func @attention_grad_tile
// CHECK: attn.attention_grad ins({{.*}}) outs({{.*}}) offsets(%{{.*}}, %{{.*}}) {causal} mask_mod
func.func @attention_grad_tile(%q: tensor<1x4x16x32xf32>, %k: tensor<1x1x8x32xf32>,
                               %v: tensor<1x1x8x32xf32>, %l: tensor<1x4x16xf32>,
                               %b0: index, %h0: index)
    -> (tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>) {
  %r:3 = attn.attention_grad ins(%q, %k, %v, %q, %q, %l : tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>,
          tensor<1x1x8x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16x32xf32>, tensor<1x4x16xf32>)
      outs(%q, %k, %v : tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>)
      offsets(%b0, %h0) {causal}
      mask_mod {
      ^bb0(%b: index, %h: index, %i: index, %j: index):
        %c2 = arith.constant 2 : index
        %keep = arith.cmpi ult, %h, %c2 : index
        attn.yield %keep : i1
      } -> tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>
  return %r#0, %r#1, %r#2 : tensor<1x4x16x32xf32>, tensor<1x1x8x32xf32>, tensor<1x1x8x32xf32>
}
