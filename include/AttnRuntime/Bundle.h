//===- Bundle.h - kernel bundles written by attn-write-kernel-bundle -*- C++
//-*-===//
//
// A bundle is PTX or cubin files plus bundle.json, which says, per host
// function, how to launch its kernels: grid, block and kernel operands as
// expressions over the function's arguments. This reads it and evaluates
// the expressions for concrete arguments; it needs neither MLIR nor CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_BUNDLE_H
#define ATTNRUNTIME_BUNDLE_H

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn_runtime {

/// A launch expression: an integer, an f32 constant, a function argument
/// (%argN), dim(E, k), add/sub/mul/div/ceildiv/min/max(E, E), an affine map
/// over symbols applied to expressions, the GPU's SM count (sm_count) or
/// the runtime's workspace (workspace, a memref<?xi32> operand).
struct Expr {
  enum class Kind {
    Int,
    F32,
    Arg,
    Dim,
    Binary,
    Affine,
    SmCount,
    Workspace
  } kind = Kind::Int;
  int64_t value = 0;  // Int; Arg: the argument number; Dim: the dim
  float f32 = 0;      // F32
  std::string op;     // Binary: add, sub, mul, div, ceildiv, min, max
  std::string affine; // Affine: the map's result expression
  std::vector<std::string> symbols; // Affine: s0, s1, ...
  std::vector<Expr> operands;

  /// Parses the text form the bundle writer prints.
  static bool parse(const std::string &text, Expr &expr, std::string &error);
};

/// A host argument: a dense row-major buffer (its device address) and its
/// shape. Scalars are not host arguments of attn functions.
struct Argument {
  uint64_t address = 0;
  std::vector<int64_t> shape;
};

/// One kernel parameter, as cuLaunchKernel takes it.
struct Param {
  enum class Kind { I64, F32, Pointer } kind = Kind::I64;
  int64_t i64 = 0;
  float f32 = 0;
  uint64_t pointer = 0;
};

/// What launch expressions may use besides the arguments: the GPU's SM
/// count, and the workspace: a zeroed device buffer of `workspaceBytes`
/// that kernels leave zeroed (see attn.workspace).
struct Environment {
  int64_t smCount = 0;
  uint64_t workspace = 0;
  int64_t workspaceBytes = 0;
};

/// Integer value of `expr` for `args`; false with `error` if it is not an
/// integer or refers to something missing (sm_count without `environment`).
bool evaluateIndex(const Expr &expr, const std::vector<Argument> &args,
                   int64_t &value, std::string &error,
                   const Environment *environment = nullptr);

struct Launch {
  std::string module, kernel;
  Expr grid[3], block[3];
  /// Dynamic shared memory bytes per block ("shared_memory_bytes"; 0 when a
  /// bundle leaves it out).
  Expr sharedMemoryBytes;
  /// Bytes of the workspace the launch needs ("workspace_bytes"; 0 when a
  /// bundle leaves it out).
  Expr workspaceBytes;
  std::vector<Expr> operands;

  /// The kernel parameters for `args`: memrefs expand to MLIR descriptors
  /// (allocated pointer, aligned pointer, offset, sizes, strides).
  bool params(const std::vector<Argument> &args, std::vector<Param> &out,
              std::string &error,
              const Environment *environment = nullptr) const;
};

struct Function {
  std::string name;
  std::vector<std::string> argTypes; // MLIR types, e.g. memref<?x8x?x64xf16>
  std::vector<Launch> launches;
};

struct Binary {
  std::string name, format, target; // format: ptx or cubin
  std::string image;                // the file's contents
};

struct Bundle {
  std::vector<Binary> binaries;
  std::vector<Function> functions;

  /// Reads `<dir>/<prefix>bundle.json` and the files it names. Errors name
  /// the file and what is wrong with it (missing, truncated, malformed).
  static bool load(const std::string &jsonPath, Bundle &bundle,
                   std::string &error);

  const Function *function(const std::string &name) const;
  const Binary *binary(const std::string &name) const;
};

} // namespace attn_runtime

#endif // ATTNRUNTIME_BUNDLE_H
