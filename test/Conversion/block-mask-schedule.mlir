// RUN: attn-opt %s --attn-lower-to-nvvm="chip=sm_90 until=tile" | FileCheck %s

// The tensor-core kernel's block-mask schedule: a block walks its q-block's
// full kv-blocks, then its partial ones, so that the partial blocks'
// softmax (with the mask_mod) runs while the step before's P V does.
// Step j reads the full list while j is below the full count (64-key
// blocks of one 64-key tile each), the partial list past it, and applies
// the masks from the full count on (or where a tile reaches past N).
// CHECK-LABEL: func.func @document
// CHECK:       gpu.launch
// CHECK:         tensor.extract %arg5
// CHECK:         tensor.extract %arg7
// CHECK:         %[[FULL:.*]] = arith.select %{{.*}}, %{{.*}}, %c0 : index
// CHECK:         %[[STEPS:.*]] = arith.addi %{{.*}}, %[[FULL]] : index
// CHECK:         scf.for %[[J:.*]] = %c0 to %[[STEPS]]
// CHECK:           arith.subi %[[J]], %[[FULL]] : index
// CHECK:           %[[PAT:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK:           tensor.extract %arg6[%c0, %c0, %{{.*}}, %[[PAT]]]
// CHECK:           %[[FAT:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK:           tensor.extract %arg8[%c0, %c0, %{{.*}}, %[[FAT]]]
// CHECK:           %[[IN_FULL:.*]] = arith.cmpi slt, %[[J]], %[[FULL]] : index
// CHECK:           arith.select %[[IN_FULL]], %{{.*}}, %{{.*}} : index
// CHECK:           %[[PARTIAL_STEP:.*]] = arith.cmpi uge, %[[J]], %[[FULL]] : index
// CHECK:           %[[MASKED:.*]] = arith.ori %[[PARTIAL_STEP]], %{{.*}} : i1
// CHECK:           scf.if %[[MASKED]]
func.func @document(%query: tensor<?x?x?x64xbf16>, %key: tensor<?x?x?x64xbf16>, %value: tensor<?x?x?x64xbf16>, %out: tensor<?x?x?x64xbf16>, %doc: tensor<?xi32>, %kv_num_blocks: tensor<1x1x?xi32>, %kv_indices: tensor<1x1x?x?xi32>, %full_kv_num_blocks: tensor<1x1x?xi32>, %full_kv_indices: tensor<1x1x?x?xi32>) -> (tensor<?x?x?x64xbf16>) {
  %bm = attn.make_block_mask kv(%kv_num_blocks, %kv_indices : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>)
      full_kv(%full_kv_num_blocks, %full_kv_indices : tensor<1x1x?xi32>, tensor<1x1x?x?xi32>) : !attn.block_mask<q_block = 64, kv_block = 64>
  %r = attn.attention ins(%query, %key, %value : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>)
      outs(%out : tensor<?x?x?x64xbf16>) block_mask(%bm : !attn.block_mask<q_block = 64, kv_block = 64>)
      mask_mod {
      ^bb0(%b: index, %h: index, %q: index, %kv: index):
        %dq = tensor.extract %doc[%q] : tensor<?xi32>
        %dk = tensor.extract %doc[%kv] : tensor<?xi32>
        %same = arith.cmpi eq, %dq, %dk : i32
        %causal = arith.cmpi uge, %q, %kv : index
        %keep = arith.andi %same, %causal : i1
        attn.yield %keep : i1
      }
      -> tensor<?x?x?x64xbf16>
  return %r : tensor<?x?x?x64xbf16>
}
