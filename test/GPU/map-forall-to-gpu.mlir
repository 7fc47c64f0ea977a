// RUN: attn-opt %s --attn-map-forall-to-gpu="threads=256" --split-input-file --verify-diagnostics | FileCheck %s

// A block-mapped forall with a dynamic bound becomes the grid (computed on
// the host); the nested thread loop, whose trip count is at most 64, runs on
// 64 threads guarded by its real trip count.
// CHECK-LABEL: func.func @grid
// CHECK-SAME: (%[[BUF:.*]]: memref<?x128xf32>, %[[M:.*]]: index)
// CHECK: %[[GX:.*]] = affine.apply {{.*}}()[%[[M]]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %c4, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: %[[ROW0:.*]] = affine.apply {{.*}}()[%[[BX]]]
// CHECK: %[[ROWS:.*]] = affine.min {{.*}}(%[[ROW0]])[%[[M]]]
// CHECK: %[[ACTIVE:.*]] = arith.cmpi ult, %[[TX]], %[[ROWS]]
// CHECK: scf.if %[[ACTIVE]]
// CHECK: %[[ROW:.*]] = affine.apply {{.*}}(%[[TX]], %[[ROW0]])
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[ROW]], %{{.*}}]
// CHECK: gpu.terminator
func.func @grid(%buf: memref<?x128xf32>, %m: index) {
  %x = arith.constant 1.0 : f32
  scf.forall (%i, %j) = (0, 0) to (%m, 4) step (64, 1) {
    %rows = affine.min affine_map<(d0)[s0] -> (64, s0 - d0)>(%i)[%m]
    scf.forall (%t) in (%rows) {
      %row = affine.apply affine_map<(d0, d1) -> (d0 + d1)>(%t, %i)
      memref.store %x, %buf[%row, %j] : memref<?x128xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>, #gpu.block<y>]}
  return
}

// -----

func.func @unbounded_threads(%buf: memref<?xf32>, %n: index) {
  %x = arith.constant 1.0 : f32
  scf.forall (%i) in (4) {
    // expected-error @+1 {{has a trip count with no constant upper bound; it cannot size a GPU thread block}}
    scf.forall (%t) in (%n) {
      memref.store %x, %buf[%t] : memref<?xf32>
    } {mapping = [#gpu.thread<x>]}
  } {mapping = [#gpu.block<x>]}
  return
}

// -----

func.func @on_tensors(%t: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{must be bufferized before it is mapped to a GPU grid}}
  %r = scf.forall (%i) in (4) shared_outs(%o = %t) -> (tensor<4xf32>) {
    scf.forall.in_parallel {
    }
  } {mapping = [#gpu.block<x>]}
  return %r : tensor<4xf32>
}

// -----

// A grid without thread loops gets `threads` threads; its workgroup buffers
// become views of dynamic shared memory, sized on the launch. Buffers of
// sibling loops share bytes: the second loop's buffer starts where the
// first loop's did (after the 4096 bytes of the block's own buffer).
// CHECK-LABEL: func.func @shared_buffers
// CHECK: %[[BYTES:.*]] = arith.constant 12288 : i32
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{.*}}) dynamic_shared_memory_size %[[BYTES]]
// CHECK: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: memref.view %[[SHARED]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1024xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK:   memref.view %[[SHARED]][%c4096{{.*}}][] : {{.*}} to memref<2048xf32, #gpu.address_space<workgroup>>
// CHECK: scf.for
// CHECK:   memref.view %[[SHARED]][%c4096{{.*}}][] : {{.*}} to memref<512xf32, #gpu.address_space<workgroup>>
// CHECK-NOT: memref.alloc
func.func @shared_buffers(%n: index, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.forall (%b) in (%n) {
    %a = memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
    memref.store %x, %a[%c0] : memref<1024xf32, #gpu.address_space<workgroup>>
    scf.for %i = %c0 to %n step %c1 {
      %s = memref.alloc() : memref<2048xf32, #gpu.address_space<workgroup>>
      memref.store %x, %s[%i] : memref<2048xf32, #gpu.address_space<workgroup>>
    }
    scf.for %i = %c0 to %n step %c1 {
      %t = memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
      memref.store %x, %t[%i] : memref<512xf32, #gpu.address_space<workgroup>>
    }
  } {mapping = [#gpu.block<x>]}
  return
}
