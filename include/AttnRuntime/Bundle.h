//===- Bundle.h - kernel bundles of attn-write-kernel-bundle ----*- C++ -*-===//
//
// A bundle is PTX or cubin files plus bundle.json (docs/Bundles.md), which
// says, per host function, what its arguments are (names, element types,
// shapes), what it computes, and how to launch its kernels: grid, block,
// shared memory, workspace and kernel operands as expression trees over the
// arguments' sizes. This is the one reader of that format: it validates a
// bundle when loading it, so that a bundle that loads can be launched, and
// evaluates its expressions for concrete arguments. It needs neither MLIR
// nor CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_BUNDLE_H
#define ATTNRUNTIME_BUNDLE_H

#include "AttnRuntime/Region.h"
#include "AttnRuntime/ShapeCheck.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attn_runtime {

struct ArgumentType;
struct JsonValue;

/// The "format" and "version" members every bundle.json starts with; the
/// reader refuses any other version.
constexpr const char *kBundleFormat = "attn-kernel-bundle";
constexpr int kBundleVersion = 2;

// Limits on what a bundle may hold, so that a malformed or hostile bundle is
// an error instead of a crash or an exhausted machine (generated bundles stay
// far below them). The JSON reader bounds the number of values, and so the
// number of expression nodes.

/// bundle.json itself.
constexpr int64_t kMaxBundleJsonBytes = int64_t(16) << 20;
/// Each PTX or cubin file.
constexpr int64_t kMaxBinaryBytes = int64_t(256) << 20;
/// The nesting of a launch expression (reading and evaluation recurse once
/// per level).
constexpr int kMaxExprDepth = 64;

/// The element types a bundle's arguments may have ("f16", "bf16", "f32",
/// "f64", "i1", "i8", "i16", "i32", "i64", "index"): their bytes, or 0 for
/// a name that is not one of them.
int64_t dtypeBytes(const std::string &dtype);

/// An integer launch expression over a function's argument sizes: a
/// constant, a dim of an argument, the GPU's SM count, a binary operation
/// (arithmetic, or a comparison that is 1 or 0) or a select. Division is
/// integer division rounding toward zero (div), up (ceildiv) or down
/// (floordiv); mod is non-negative.
struct Expr {
  enum class Kind { Const, Dim, SmCount, Binary, Select } kind = Kind::Const;
  enum class Op {
    Add,
    Sub,
    Mul,
    Div,
    CeilDiv,
    FloorDiv,
    Mod,
    Min,
    Max,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne
  } op = Op::Add;
  int64_t value = 0; // Const; Dim: the dim
  int64_t arg = 0;   // Dim: the argument's number
  /// Binary: lhs, rhs; Select: cond, then, else.
  std::vector<Expr> operands;

  /// The spelling of `op` in bundle.json ("add", "ceildiv", "lt", ...).
  static const char *opName(Op op);
  /// Reads `json`, an expression of a function with arguments `args`;
  /// false with `error` (a phrase to follow where the expression is, e.g.
  /// "names argument 'kk', which the function does not have") for an unknown
  /// op, a missing or malformed member, an argument `args` does not have, a
  /// dim past its rank, or nesting deeper than kMaxExprDepth.
  static bool fromJson(const JsonValue &json,
                       const std::vector<ArgumentType> &args, Expr &expr,
                       std::string &error);
  /// The expression as text, e.g. "ceildiv(dim(q, 2), 64)"; arguments by
  /// name when `args` are given, else by number.
  std::string str(const std::vector<ArgumentType> *args = nullptr) const;
};

/// A host argument: a dense row-major buffer (its device address) and its
/// shape. Scalars are not host arguments of attn functions.
struct Argument {
  uint64_t address = 0;
  std::vector<int64_t> shape;
};

/// One kernel parameter, as cuLaunchKernel takes it.
struct Param {
  enum class Kind { I64, F32, Pointer, TensorMap } kind = Kind::I64;
  int64_t i64 = 0;
  float f32 = 0;
  uint64_t pointer = 0;
  /// TensorMap: the driver's CUtensorMap, passed by value.
  alignas(64) unsigned char tensorMap[128] = {};
};

/// What a TMA tensor map describes: a dense row-major argument (its address,
/// dtype and shape) and the box a copy moves (one size per dim, outermost
/// first), with rows swizzled by their size (32, 64 or 128 bytes) and zeros
/// outside the argument.
struct TensorMapRequest {
  uint64_t address = 0;
  std::string dtype;
  std::vector<int64_t> shape, box;
};

/// Encodes `request` into `map` (128 bytes); false with `error` if the
/// driver refuses it.
using TensorMapEncoder = std::function<bool(
    const TensorMapRequest &request, unsigned char *map, std::string &error)>;

/// What launch expressions may use besides the arguments: the GPU's SM
/// count, the workspace (a zeroed device buffer of `workspaceBytes` that
/// kernels leave zeroed) and the scratch buffer (`scratchBytes` that
/// kernels may leave dirty); see attn.workspace.
struct Environment {
  int64_t smCount = 0;
  uint64_t workspace = 0;
  int64_t workspaceBytes = 0;
  uint64_t scratch = 0;
  int64_t scratchBytes = 0;
  /// Makes the tensor maps of `tensor_map` operands (the CUDA driver's).
  TensorMapEncoder encodeTensorMap;
};

/// Value of `expr` for `args`; false with `error` if it refers to something
/// missing (sm_count without `environment`, a dim the argument does not
/// have), divides by zero or overflows int64 (the error names the
/// operation). A select evaluates its condition and then only the branch
/// it takes.
bool evaluateIndex(const Expr &expr, const std::vector<Argument> &args,
                   int64_t &value, std::string &error,
                   const Environment *environment = nullptr);

/// A kernel operand: what each parameter group of the kernel is.
struct Operand {
  enum class Kind {
    /// An argument's buffer, as an MLIR memref descriptor (allocated
    /// pointer, aligned pointer, offset, sizes, strides).
    Buffer,
    /// The runtime's workspace, a memref<?xi32> descriptor.
    Workspace,
    /// The runtime's scratch buffer, a memref<?xi32> descriptor.
    Scratch,
    /// An integer (`value`), passed as 64 bits.
    Int,
    /// An f32 constant.
    F32,
    /// A TMA tensor map of an argument (`arg`) with boxes of `box`,
    /// passed by value (128 bytes).
    TensorMap
  } kind = Kind::Int;
  int64_t arg = 0;          // Buffer, TensorMap: the argument's number
  float f32 = 0;            // F32
  Expr value;               // Int
  std::vector<int64_t> box; // TensorMap: sizes, outermost dim first
  std::string dtype;        // TensorMap: the argument's element type
};

struct Launch {
  std::string module, kernel;
  Expr grid[3], block[3];
  /// Dynamic shared memory bytes per block.
  Expr sharedMemoryBytes;
  /// Bytes of the workspace and of the scratch buffer the launch needs.
  Expr workspaceBytes, scratchBytes;
  std::vector<Operand> operands;

  /// The kernel parameters for `args`: buffers expand to MLIR descriptors.
  bool params(const std::vector<Argument> &args, std::vector<Param> &out,
              std::string &error,
              const Environment *environment = nullptr) const;
};

/// A function argument: a dense row-major buffer.
struct ArgumentType {
  /// Unique within the function: "q", "out", "argument 5"...
  std::string name;
  /// The element type ("f16", "i32", ...; see dtypeBytes) and its bytes.
  std::string dtype;
  int64_t elementBytes = 0;
  /// Static sizes, -1 for dynamic ones.
  std::vector<int64_t> shape;

  /// The type as MLIR spells it, for messages: "memref<?x8x?x64xf16>".
  std::string str() const;
};

/// What a function computes: the attn op it was compiled from, as the
/// compiler recorded it before lowering (attn.computes).
struct Computation {
  /// "attention", "attention_grad" (its gradients) or "softmax".
  std::string op;
  /// The element type of the inputs (attention: q, k and v).
  std::string dtype;
  /// Attention and its gradients only from here on (the gradients record
  /// no logsumexp or block mask).
  int64_t headDim = 0, valueHeadDim = 0;
  float scale = 0;
  bool causal = false, logsumexp = false, blockMask = false;
  /// The block mask's q-block and kv-block sizes (0 without one).
  int64_t qBlock = 0, kvBlock = 0;
  /// A mask_mod or score_mod region: its built-in name (attn-run's
  /// --mask/--score-mod and Python's mask=/score_mod=, e.g.
  /// "sliding-window:32"; empty when the region was written by hand), a
  /// digest of its IR, and its ops (absent when the bundle does not record
  /// them), which a reference evaluates.
  struct Region {
    bool present = false, hasProgram = false;
    std::string name, digest;
    RegionProgram program;
  } maskMod, scoreMod;
  /// attention_grad: the tensors whose gradients it computes (wrt), each
  /// as the numbers of the function arguments that hold it and its
  /// gradient (-1 where the compiler saw no argument).
  struct Wrt {
    int64_t tensor = -1, grad = -1;
  };
  std::vector<Wrt> wrt;
};

struct Function {
  std::string name;
  std::vector<ArgumentType> args;
  /// What the argument shapes must satisfy: names and static sizes from
  /// `args`, constraints from the bundle's "shape_contract" (none without
  /// it).
  ShapeContract contract;
  /// One per attn op of the function (none when the bundle does not say).
  std::vector<Computation> computes;
  std::vector<Launch> launches;

  /// The number of the argument called `name`, or -1.
  int64_t argIndex(const std::string &name) const;
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
  /// in the bundle's directory, another format or version, and anything
  /// that names what does not exist: an argument, a dim, a binary, an op or
  /// an element type).
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
