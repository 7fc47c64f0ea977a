//===- HostOps.td - values the runtime supplies ------------*- tablegen -*-===//

#ifndef ATTN_HOSTOPS_TD
#define ATTN_HOSTOPS_TD

include "AttnDialect/IR/AttnDialect.td"
include "AttnDialect/IR/AttnTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/Dialect/LLVMIR/LLVMTypes.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Host-side values the runtime supplies
//===----------------------------------------------------------------------===//

def Attn_WorkspaceOp : Attn_Op<"workspace", [
    MemoryEffects<[MemAlloc<DefaultResource>]>]> {
  let summary = "a device buffer the runtime keeps between launches";
  let description = [{
    Host code: `words` 32-bit words of device memory that the runtime
    allocates once per stream and passes to every launch on that stream
    that takes it.

    Without `scratch`, the runtime's workspace: zeroed when allocated; a
    kernel may use it for counters and partial results shared between its
    blocks but must leave it zeroed when it ends, so the next launch needs
    no memset. With `scratch`, the runtime's scratch buffer: what it holds
    when a function starts is undefined, and kernels may leave anything in
    it, so a function's launches can pass each other results (lists, say)
    without clearing them afterwards.

    Launches on one stream share its buffers and run one after another;
    each stream has buffers of its own, so launches on different streams
    may run at the same time. The kernel bundle names them `workspace` and
    `scratch` and records `workspace_bytes` and `scratch_bytes` per launch.

    ```mlir
    %ws = attn.workspace %words : memref<?xi32>
    %lists = attn.workspace %words scratch : memref<?xi32>
    ```
  }];
  let arguments = (ins Index:$words, UnitAttr:$scratch);
  let results = (outs MemRefRankOf<[I32], [1]>:$buffer);
  let assemblyFormat = "$words (`scratch` $scratch^)? attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

def Attn_TensorMapOp : Attn_Op<"tensor_map", [Pure]> {
  let summary = "a TMA tensor map of an argument, passed to a kernel by value";
  let description = [{
    Host code: the tensor map (the driver's 128-byte `CUtensorMap`) that
    lets a kernel copy boxes of `source` into shared memory with TMA
    (`cp.async.bulk.tensor`). `source` is a dense row-major argument of the
    function; `box` is the box's size in each of its dims, outermost first.
    The map swizzles each box's rows by their size, which must be 32, 64
    or 128 bytes (the innermost box dim: the 32-, 64- and 128-byte
    swizzles), and fills positions outside `source` with zeros.

    The runtime encodes the map for each call's argument and passes its
    bytes as the kernel parameter (`.param .align 64 .b8 [128]`, a
    `__grid_constant__` in CUDA terms); the kernel sees the parameter's
    address, the `!llvm.ptr` result. The kernel bundle records it as a
    `tensor_map` operand.

    ```mlir
    %map = attn.tensor_map %key box [1, 1, 128, 64]
        : memref<?x2x?x128xbf16> -> !llvm.ptr
    ```
  }];
  let arguments = (ins AnyMemRef:$source, DenseI64ArrayAttr:$box);
  let results = (outs LLVM_AnyPointer:$map);
  let assemblyFormat =
      "$source `box` $box attr-dict `:` type($source) `->` type($map)";
  let hasVerifier = 1;
}

def Attn_MultiprocessorCountOp : Attn_Op<"multiprocessor_count", [Pure]> {
  let summary = "the number of streaming multiprocessors of the GPU";
  let description = [{
    Host code: how many SMs the GPU that runs the function has, supplied by
    the runtime at launch (`sm_count` in a kernel bundle). Lowerings use it
    to bound how many blocks must be resident at once, for instance blocks
    that wait on each other through an `attn.workspace`: every GPU keeps at
    least one block of a launchable kernel on each SM.

    ```mlir
    %sms = attn.multiprocessor_count : index
    ```
  }];
  let results = (outs Index:$count);
  let assemblyFormat = "attr-dict `:` type($count)";
}

#endif // ATTN_HOSTOPS_TD
