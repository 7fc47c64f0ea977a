//===- Passes.td - the kernel bundle writer ----------------*- tablegen -*-===//

#ifndef ATTN_TARGET_KERNELBUNDLE_PASSES_TD
#define ATTN_TARGET_KERNELBUNDLE_PASSES_TD

include "mlir/Pass/PassBase.td"

def WriteKernelBundle : Pass<"attn-write-kernel-bundle", "::mlir::ModuleOp"> {
  let summary = "write the GPU kernels and their launch metadata to files";
  let description = [{
    For every `gpu.binary`, writes `<prefix><binary>.ptx` (or `.cubin`) and
    one `<prefix>bundle.json` describing how to launch what is in them, so
    that a runtime without MLIR can: per host function, its arguments; per
    `gpu.launch_func`, the kernel name, the block size, and the grid and each
    kernel operand as expressions over the host function's arguments
    (`dim(%arg0, 2)`, `ceildiv(a, 64)`, constants...). Memref operands are
    passed to the kernel as MLIR memref descriptors (allocated pointer,
    aligned pointer, offset, sizes, strides). A function's
    `attn.shape_contract` (from `attn-record-shape-contract`) becomes its
    `shape_contract`, which the runtime checks before every launch.

    A binary's name becomes a file name next to bundle.json, so names that
    are not plain file names (`../x`, `a/b`) are an error.
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "path prefix of the files (e.g. out/attention-)">
  ];
}

#endif // ATTN_TARGET_KERNELBUNDLE_PASSES_TD
