// RUN: attn-opt %s --attn-extern-dynamic-shared-memory --split-input-file | FileCheck %s

// The zero-length shared global that convert-gpu-to-nvvm makes of
// gpu.dynamic_shared_memory becomes external (PTX `.extern .shared` array:
// the dynamic region, after all static shared memory) in a module with
// static shared memory; static shared buffers and other address spaces
// keep their linkage.
// CHECK-LABEL: gpu.module @with_static
// CHECK: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// CHECK: llvm.mlir.global internal @__wg_kernel_0() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<32 x f32>
// CHECK: llvm.mlir.global internal @global_zero() {addr_space = 1 : i32} : !llvm.array<0 x i8>
gpu.module @with_static {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global internal @__wg_kernel_0() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<32 x f32>
  llvm.mlir.global internal @global_zero() {addr_space = 1 : i32} : !llvm.array<0 x i8>
}

// -----

// Without static shared memory there is nothing to overlap: unchanged.
// CHECK-LABEL: gpu.module @dynamic_only
// CHECK: llvm.mlir.global internal @__dynamic_shmem__0()
gpu.module @dynamic_only {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
}
