//===- Passes.td - the kernel bundle writer ----------------*- tablegen -*-===//

#ifndef ATTN_TARGET_KERNELBUNDLE_PASSES_TD
#define ATTN_TARGET_KERNELBUNDLE_PASSES_TD

include "mlir/Pass/PassBase.td"

def WriteKernelBundle : Pass<"attn-write-kernel-bundle", "::mlir::ModuleOp"> {
  let summary = "write the GPU kernels and their launch metadata to files";
  let description = [{
    For every `gpu.binary`, writes `<prefix><binary>.ptx` (or `.cubin`) and
    one `<prefix>bundle.json` (format `attn-kernel-bundle`, version 2; see
    docs/Bundles.md) describing how to launch what is in them, so that a
    runtime without MLIR can: per host function, its arguments (name, dtype,
    shape); per `gpu.launch_func`, the kernel name, and the grid, block,
    dynamic shared memory, workspace and each kernel operand as JSON
    expression trees over the host function's argument sizes
    (`{"dim": {"arg": "q", "index": 2}}`, `{"op": "ceildiv", ...}`,
    `{"op": "select", ...}`, constants...), translated from the host IR
    (arith, `affine.apply`, `memref.dim`). Buffer operands are passed to the
    kernel as MLIR memref descriptors (allocated pointer, aligned pointer,
    offset, sizes, strides). A function's `attn.shape_contract` and
    `attn.computes` (from `attn-record-shape-contract`) become its
    `shape_contract`, which the runtime checks before every launch, and its
    `computes`. The bundle is read back with the runtime's reader before
    `bundle.json` is written: a bundle the runtime would refuse is an error
    here.

    A binary's name becomes a file name next to bundle.json, so names that
    are not plain file names (`../x`, `a/b`) are an error.
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "path prefix of the files (e.g. out/attention-)">
  ];
}

#endif // ATTN_TARGET_KERNELBUNDLE_PASSES_TD
