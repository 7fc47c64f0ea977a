// attn-lower-to-cpu, stopped after each stage.
// RUN: attn-opt %s --attn-lower-to-cpu="until=tile q-tile=32" | FileCheck %s --check-prefix=TILE
// RUN: attn-opt %s --attn-lower-to-cpu="until=decompose kv-tile=32" | FileCheck %s --check-prefix=DECOMPOSE
// RUN: attn-opt %s --attn-lower-to-cpu="until=bufferize" | FileCheck %s --check-prefix=BUFFERIZE
// RUN: attn-opt %s --attn-lower-to-cpu="until=loops" | FileCheck %s --check-prefix=LOOPS
// RUN: attn-opt %s --attn-lower-to-cpu | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --attn-lower-to-cpu | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR
// RUN: not attn-opt %s --attn-lower-to-cpu="until=ptx" 2>&1 | FileCheck %s --check-prefix=BADSTAGE
// RUN: not attn-opt %s --attn-lower-to-cpu="kv-tile=0" 2>&1 | FileCheck %s --check-prefix=BADTILE

// TILE: scf.forall {{.*}} step (1, 1, 32)
// TILE: attn.attention {{.*}} offsets(
// TILE: attn.softmax

// DECOMPOSE-NOT: attn.attention
// DECOMPOSE-NOT: attn.online_softmax
// DECOMPOSE-NOT: attn.softmax
// DECOMPOSE: scf.forall
// DECOMPOSE: scf.for {{.*}} step %c32
// DECOMPOSE: math.exp2

// BUFFERIZE-LABEL: func.func @attention(
// BUFFERIZE-SAME: memref<?x8x?x64xf16>
// BUFFERIZE-NOT: tensor<
// BUFFERIZE: scf.forall

// LOOPS-NOT: linalg.
// LOOPS-NOT: scf.forall
// LOOPS: scf.for

// LLVM-NOT: func.func
// LLVM-NOT: bufferization.
// LLVM: llvm.func @attention(
// LLVM: llvm.intr.exp2
// LLVM: llvm.func @_mlir_ciface_attention(
// LLVM: llvm.func @_mlir_ciface_softmax(

// LLVMIR: define {{.*}} @attention(
// LLVMIR: define void @_mlir_ciface_softmax(

// BADSTAGE: attn-lower-to-cpu: unknown stage 'ptx' (expected tile, decompose, bufferize, loops or llvm)
// BADTILE: attn-lower-to-cpu: q-tile, kv-tile and row-tile must be positive

func.func @attention(%q: tensor<?x8x?x64xf16>, %k: tensor<?x2x?x64xf16>,
                     %v: tensor<?x2x?x64xf16>, %o: tensor<?x8x?x64xf16>) -> tensor<?x8x?x64xf16> {
  %r = attn.attention ins(%q, %k, %v : tensor<?x8x?x64xf16>, tensor<?x2x?x64xf16>, tensor<?x2x?x64xf16>)
      outs(%o : tensor<?x8x?x64xf16>) {causal} -> tensor<?x8x?x64xf16>
  return %r : tensor<?x8x?x64xf16>
}

func.func @softmax(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = attn.softmax ins(%x : tensor<?x?xf32>) outs(%y : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
