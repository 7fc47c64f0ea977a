// RUN: rm -rf %t && mkdir -p %t/out
// RUN: not attn-opt %s --attn-write-kernel-bundle=prefix=%t/out/ 2>&1 | FileCheck %s
// RUN: not ls %t/escaped_kernel.ptx
// RUN: not ls %t/out/bundle.json

// A binary's name becomes a file next to bundle.json: names that would
// leave the bundle's directory are refused, and no bundle.json is written.
// CHECK: error: 'gpu.binary' op has a name that cannot be a file name in the bundle
module attributes {gpu.container_module} {
  gpu.binary @"../escaped_kernel" [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// PTX">]
}
