// RUN: rm -rf %t && mkdir -p %t
// RUN: attn-opt %s --attn-write-kernel-bundle=prefix=%t/ --split-input-file --verify-diagnostics -o /dev/null
// RUN: not ls %t/bundle.json

// Launch sizes must be expressions over the arguments' sizes that the
// runtime can evaluate; other host IR is an error naming the launch.
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX">]
  func.func @host(%x: memref<?xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %n = memref.dim %x, %c0 : memref<?xf32>
    %r = arith.remui %n, %c7 : index
    // expected-error @+1 {{has a launch size the bundle cannot describe in terms of the function's arguments}}
    gpu.launch_func @kernels::@kernel blocks in (%r, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32>)
    return
  }
}

// -----

// Arguments are dense buffers of a dtype the runtime knows.
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX">]
  // expected-error @+1 {{argument 0 has type 'memref<?xf32, strided<[2]>>', which a kernel bundle cannot pass (a memref of f16, bf16, f32, f64, i1, i8, i16, i32, i64 or index with the default layout and memory space)}}
  func.func @host(%x: memref<?xf32, strided<[2]>>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32, strided<[2]>>)
    return
  }
}
