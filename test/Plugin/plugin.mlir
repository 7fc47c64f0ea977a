// Debian's own mlir-opt (not attn-opt) loads the dialect and the passes from
// the plugin module and runs an attn pass.
// RUN: mlir-opt --version | FileCheck %s --check-prefix=VERSION
// RUN: mlir-opt %s --load-dialect-plugin=%attn_libs/AttnPlugin%shlibext \
// RUN:   --load-pass-plugin=%attn_libs/AttnPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(attn-decompose-online-softmax)" \
// RUN: | FileCheck %s
// The plugin offers the named pipelines too: the whole CPU lowering runs in
// upstream mlir-opt.
// RUN: mlir-opt %s --load-dialect-plugin=%attn_libs/AttnPlugin%shlibext \
// RUN:   --load-pass-plugin=%attn_libs/AttnPlugin%shlibext \
// RUN:   --pass-pipeline="builtin.module(attn-lower-to-cpu)" \
// RUN: | FileCheck %s --check-prefix=CPU
// Without the plugin the same mlir-opt rejects the dialect.
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// The plugin's verifiers run inside mlir-opt too.
// RUN: not mlir-opt %S/Inputs/bad.mlir --load-dialect-plugin=%attn_libs/AttnPlugin%shlibext 2>&1 \
// RUN: | FileCheck %s --check-prefix=BAD

// VERSION: LLVM version 22
// CPU-NOT: attn.
// CPU: llvm.func @attention(
// CPU: llvm.func @_mlir_ciface_attention(
// CPU: llvm.func @step(
// NOPLUGIN: Dialect `attn' not found
// BAD: error: 'attn.attention' op expected query heads (6) to be a multiple of key/value heads (4)

// CHECK-LABEL: func.func @attention
// CHECK: attn.attention
// CHECK-SAME: {causal}
func.func @attention(%q: tensor<1x8x?x64xf16>, %k: tensor<1x2x?x64xf16>,
                     %v: tensor<1x2x?x64xf16>, %o: tensor<1x8x?x64xf16>)
    -> tensor<1x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<1x8x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>)
      outs(%o : tensor<1x8x?x64xf16>) {causal} -> tensor<1x8x?x64xf16>
  return %r : tensor<1x8x?x64xf16>
}

// CHECK-LABEL: func.func @step
// CHECK-NOT: attn.online_softmax
// CHECK: math.exp2
func.func @step(%s: tensor<4x16xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>) -> tensor<4x16xf32> {
  %p, %m1, %l1, %c = attn.online_softmax %s, %m, %l : tensor<4x16xf32>, tensor<4xf32>
  return %p : tensor<4x16xf32>
}
