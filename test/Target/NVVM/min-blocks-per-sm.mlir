// RUN: attn-opt %s --split-input-file --pass-pipeline="builtin.module(gpu.module(attn-min-blocks-per-sm))" --verify-diagnostics | FileCheck %s

// A kernel built for three blocks an SM asks ptxas for them; the mark is
// gone, and a kernel without one is left alone.
// CHECK-LABEL: gpu.func @three
// CHECK-SAME: nvvm.minctasm = 3 : i32
// CHECK-NOT: attn.min_blocks_per_sm
// CHECK-LABEL: gpu.func @unmarked
// CHECK-NOT: nvvm.minctasm
gpu.module @kernels {
  gpu.func @three() kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %shared = gpu.dynamic_shared_memory {attn.min_blocks_per_sm = 3 : i32} : memref<?xi8, #gpu.address_space<workgroup>>
    gpu.return
  }
  gpu.func @unmarked() kernel {
    %shared = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @twice() kernel {
    %a = gpu.dynamic_shared_memory {attn.min_blocks_per_sm = 3 : i32} : memref<?xi8, #gpu.address_space<workgroup>>
    // expected-error @+1 {{asks for 2 blocks per SM, but its kernel already asked for 3}}
    %b = gpu.dynamic_shared_memory {attn.min_blocks_per_sm = 2 : i32} : memref<?xi8, #gpu.address_space<workgroup>>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  // expected-error @+1 {{has attn.min_blocks_per_sm = 3, which needs a kernel and a positive count}}
  gpu.func @helper() {
    %a = gpu.dynamic_shared_memory {attn.min_blocks_per_sm = 3 : i32} : memref<?xi8, #gpu.address_space<workgroup>>
    gpu.return
  }
}
