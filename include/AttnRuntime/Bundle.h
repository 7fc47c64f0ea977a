//===- Bundle.h - kernel bundles of attn-write-kernel-bundle ----*- C++ -*-===//
//
// A bundle is PTX or cubin files plus bundle.json, which says, per host
// function, how to launch its kernels: grid, block and kernel operands as
// expressions over the function's arguments. This reads it and evaluates
// the expressions for concrete arguments; it needs neither MLIR nor CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_BUNDLE_H
#define ATTNRUNTIME_BUNDLE_H

#include "AttnRuntime/ShapeCheck.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attn_runtime {

// Limits on what a bundle may hold, so that a malformed or hostile bundle is
// an error instead of a crash or an exhausted machine (generated bundles stay
// far below them).

/// bundle.json itself.
constexpr int64_t kMaxBundleJsonBytes = int64_t(16) << 20;
/// Each PTX or cubin file.
constexpr int64_t kMaxBinaryBytes = int64_t(256) << 20;
/// The text of one launch expression.
constexpr size_t kMaxExprBytes = size_t(64) << 10;
/// The nesting of a launch expression: calls, affine operands, and the
/// parentheses and unary minus signs inside an affine map's expression
/// (parsing and evaluation recurse once per level).
constexpr int kMaxExprDepth = 64;
/// The terms (integers, arguments, calls...) of all launch expressions of a
/// bundle together: each takes about 150 bytes.
constexpr int64_t kMaxBundleExprTerms = int64_t(1) << 20;

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

  /// Parses the text form the bundle writer prints; fails with `error` on
  /// anything else, on text longer than kMaxExprBytes and on nesting deeper
  /// than kMaxExprDepth.
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
/// integer, refers to something missing (sm_count without `environment`),
/// divides by zero or overflows int64 (the error names the operation).
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

/// The sizes (-1 for ?) and element type ("f16", "i32", "index", ...) of a
/// memref type as the bundle writer prints it, e.g. memref<?x8x?x64xf16>;
/// false with `error` for any other type (a tensor, a layout or memory
/// space, an element type the runtime does not know).
bool parseMemRefType(const std::string &type, std::vector<int64_t> &dims,
                     std::string &elementType, int64_t &elementBytes,
                     std::string &error);

struct Function {
  std::string name;
  std::vector<std::string> argTypes; // MLIR types, e.g. memref<?x8x?x64xf16>
  /// Each argument's element type ("f16") and its bytes, from argTypes.
  std::vector<std::string> argElementTypes;
  std::vector<int64_t> argElementBytes;
  /// What the argument shapes must satisfy: argDims from argTypes, names and
  /// constraints from the bundle's "shape_contract" (none without it).
  ShapeContract contract;
  std::vector<Launch> launches;

  /// Checks the shapes of the arguments (one per argument) against the
  /// contract; an empty string when they agree, else a message naming the
  /// function, both arguments and both sizes. Call it before every launch:
  /// kernels do not check bounds.
  std::string
  checkArguments(const std::vector<std::vector<int64_t>> &shapes) const;
};

struct Binary {
  std::string name, format, target; // format: ptx or cubin
  std::string image;                // the file's contents
};

struct Bundle {
  std::vector<Binary> binaries;
  std::vector<Function> functions;

  /// Reads `<dir>/<prefix>bundle.json` and the files it names. Errors name
  /// the file and what is wrong with it (missing, truncated, malformed, too
  /// large, not a regular file, a binary's "file" that is not a plain name
  /// in the bundle's directory).
  static bool load(const std::string &jsonPath, Bundle &bundle,
                   std::string &error);
  /// The same for the text of a bundle.json whose binaries lie in
  /// `directory` ("" for the working directory); `name` is the bundle's name
  /// in errors.
  static bool parse(const std::string &json, const std::string &directory,
                    Bundle &bundle, std::string &error,
                    const std::string &name = "bundle.json");

  const Function *function(const std::string &name) const;
  const Binary *binary(const std::string &name) const;
};

} // namespace attn_runtime

#endif // ATTNRUNTIME_BUNDLE_H
