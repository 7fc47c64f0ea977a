// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --attn-write-kernel-bundle=prefix=%t/ -o /dev/null
// RUN: FileCheck %s < %t/bundle.json
// RUN: test -s %t/kernels.ptx

// The host IR of each launch becomes expression trees over the arguments'
// sizes: memref.dim, arith (select and cmpi included), affine.apply maps
// expanded, the SM count; kernel operands by kind. What is written loads in
// the runtime's reader (the pass reads it back).
// CHECK: "format": "attn-kernel-bundle",
// CHECK-NEXT: "version": 2,
// CHECK: "name": "kernels",
// CHECK-NEXT: "file": "kernels.ptx",
// CHECK-NEXT: "format": "ptx",
// CHECK: "name": "host",
// CHECK: "args": [
// CHECK-NEXT: {
// CHECK-NEXT: "name": "argument 0",
// CHECK-NEXT: "dtype": "f16",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: null,
// CHECK-NEXT: 64
// CHECK: "name": "argument 1",
// CHECK-NEXT: "dtype": "i32",
// CHECK: "launches": [
// CHECK: "module": "kernels",
// CHECK-NEXT: "kernel": "kernel",
// CHECK-NEXT: "grid": [
// CHECK-NEXT: {"op": "add", "lhs": {"op": "floordiv", "lhs": {"dim": {"arg": "argument 0", "index": 0}}, "rhs": {"const": 4}}, "rhs": {"op": "mod", "lhs": {"dim": {"arg": "argument 0", "index": 0}}, "rhs": {"const": 3}}},
// CHECK-NEXT: {"op": "sm_count"},
// CHECK-NEXT: {"const": 1}
// CHECK: "block": [
// CHECK-NEXT: {"op": "select", "cond": {"op": "lt", "lhs": {"dim": {"arg": "argument 0", "index": 0}}, "rhs": {"const": 128}}, "then": {"const": 64}, "else": {"const": 256}},
// CHECK: "shared_memory_bytes": {"op": "mul", "lhs": {"dim": {"arg": "argument 1", "index": 0}}, "rhs": {"const": 4}},
// CHECK-NEXT: "workspace_bytes": {"op": "mul", "lhs": {"op": "max", "lhs": {"dim": {"arg": "argument 0", "index": 0}}, "rhs": {"const": 1}}, "rhs": {"const": 4}},
// CHECK-NEXT: "scratch_bytes": {"op": "mul", "lhs": {"dim": {"arg": "argument 1", "index": 0}}, "rhs": {"const": 4}},
// CHECK-NEXT: "operands": [
// CHECK-NEXT: {"kind": "buffer", "arg": "argument 0"},
// CHECK-NEXT: {"kind": "buffer", "arg": "argument 1"},
// CHECK-NEXT: {"kind": "workspace"},
// CHECK-NEXT: {"kind": "scratch"},
// CHECK-NEXT: {"kind": "tensor_map", "arg": "argument 0", "box": [128, 64]},
// CHECK-NEXT: {"kind": "f32", "value": 1.25E-1},
// CHECK-NEXT: {"kind": "f32", "value": "-inf"},
// CHECK-NEXT: {"kind": "int", "value": {"op": "ne", "lhs": {"dim": {"arg": "argument 1", "index": 0}}, "rhs": {"const": 0}}}
// CHECK-NEXT: ]
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX">]
  func.func @host(%x: memref<?x64xf16>, %ids: memref<?xi32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %c256 = arith.constant 256 : index
    %c4 = arith.constant 4 : index
    %rows = memref.dim %x, %c0 : memref<?x64xf16>
    %n = memref.dim %ids, %c0 : memref<?xi32>
    %gx = affine.apply affine_map<()[s0] -> (s0 floordiv 4 + s0 mod 3)>()[%rows]
    %sms = attn.multiprocessor_count : index
    %small = arith.cmpi ult, %rows, %c128 : index
    %threads = arith.select %small, %c64, %c256 : index
    %bytes = arith.muli %n, %c4 : index
    %smem = arith.index_cast %bytes : index to i32
    %words = arith.maxui %rows, %c1 : index
    %ws = attn.workspace %words : memref<?xi32>
    %scratch = attn.workspace %n scratch : memref<?xi32>
    %map = attn.tensor_map %x box [128, 64] : memref<?x64xf16> -> !llvm.ptr
    %scale = arith.constant 1.250000e-01 : f32
    %ninf = arith.constant 0xFF800000 : f32
    %any = arith.cmpi ne, %n, %c0 : index
    %flag = arith.index_cast %any : i1 to index
    gpu.launch_func @kernels::@kernel blocks in (%gx, %sms, %c1) threads in (%threads, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%x : memref<?x64xf16>, %ids : memref<?xi32>, %ws : memref<?xi32>, %scratch : memref<?xi32>, %map : !llvm.ptr, %scale : f32, %ninf : f32, %flag : index)
    return
  }
}
