// RUN: attn-opt %s --attn-bound-temporaries --split-input-file --verify-diagnostics | FileCheck %s

// A thread's temporary clipped by affine.min gets storage of the bound (64)
// and a slice of the used size; each use gets its own.
// CHECK-LABEL: func.func @bounded
// CHECK: scf.forall
// CHECK: %[[N:.*]] = affine.min
// CHECK: %[[A:.*]] = tensor.empty() : tensor<1x64xf32>
// CHECK: tensor.extract_slice %[[A]][0, 0] [1, %[[N]]] [1, 1] : tensor<1x64xf32> to tensor<1x?xf32>
// CHECK: %[[B:.*]] = tensor.empty() : tensor<1x64xf32>
// CHECK: tensor.extract_slice %[[B]][0, 0] [1, %[[N]]] [1, 1] : tensor<1x64xf32> to tensor<1x?xf32>
// Outside GPU threads nothing changes.
// CHECK: tensor.empty(%{{.*}}) : tensor<1x?xf32>
func.func @bounded(%n: index, %t: tensor<8x1x?xf32>, %x: f32) -> (tensor<8x1x?xf32>, tensor<1x?xf32>) {
  %c0 = arith.constant 0 : index
  %r = scf.forall (%i) in (8) shared_outs(%o = %t) -> (tensor<8x1x?xf32>) {
    %len = affine.min affine_map<(d0)[s0] -> (64, s0 - d0)>(%i)[%n]
    %e = tensor.empty(%len) : tensor<1x?xf32>
    %a = linalg.fill ins(%x : f32) outs(%e : tensor<1x?xf32>) -> tensor<1x?xf32>
    %b = linalg.fill ins(%x : f32) outs(%e : tensor<1x?xf32>) -> tensor<1x?xf32>
    %s = arith.addf %x, %x : f32
    %c = linalg.add ins(%a, %b : tensor<1x?xf32>, tensor<1x?xf32>) outs(%a : tensor<1x?xf32>) -> tensor<1x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %c into %o[%i, 0, 0] [1, 1, %len] [1, 1, 1] : tensor<1x?xf32> into tensor<8x1x?xf32>
    }
  } {mapping = [#gpu.thread<x>]}
  %host = tensor.empty(%n) : tensor<1x?xf32>
  return %r, %host : tensor<8x1x?xf32>, tensor<1x?xf32>
}

// -----

func.func @unbounded(%n: index, %t: tensor<8x1x?xf32>, %x: f32) -> tensor<8x1x?xf32> {
  %r = scf.forall (%i) in (8) shared_outs(%o = %t) -> (tensor<8x1x?xf32>) {
    // expected-error @+1 {{is a temporary of a GPU kernel whose dim 1 has no constant upper bound; kernels cannot allocate}}
    %e = tensor.empty(%n) : tensor<1x?xf32>
    %a = linalg.fill ins(%x : f32) outs(%e : tensor<1x?xf32>) -> tensor<1x?xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %a into %o[%i, 0, 0] [1, 1, %n] [1, 1, 1] : tensor<1x?xf32> into tensor<8x1x?xf32>
    }
  } {mapping = [#gpu.thread<x>]}
  return %r : tensor<8x1x?xf32>
}

// -----

// A block's temporaries (inside the #gpu.block grid, outside thread loops)
// go to workgroup memory, static ones too; the used part is a slice.
// CHECK-LABEL: func.func @block_temporaries
// CHECK: scf.forall
// CHECK: %[[N:.*]] = affine.min
// CHECK: %[[S:.*]] = bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<64x32xf32>
// CHECK: tensor.extract_slice %[[S]][0, 0] [%[[N]], 32] [1, 1] : tensor<64x32xf32> to tensor<?x32xf32>
// CHECK: bufferization.alloc_tensor() {memory_space = #gpu.address_space<workgroup>} : tensor<16xf32>
// CHECK-NOT: tensor.empty
func.func @block_temporaries(%n: index, %x: f32) {
  scf.forall (%i) in (8) {
    %len = affine.min affine_map<(d0)[s0] -> (64, s0 - d0)>(%i)[%n]
    %e = tensor.empty(%len) : tensor<?x32xf32>
    %a = linalg.fill ins(%x : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
    %s = tensor.empty() : tensor<16xf32>
    %b = linalg.fill ins(%x : f32) outs(%s : tensor<16xf32>) -> tensor<16xf32>
  } {mapping = [#gpu.block<x>]}
  return
}
