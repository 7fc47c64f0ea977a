//===- Region.h - score_mod and mask_mod regions as data --------*- C++ -*-===//
//
// A score_mod or mask_mod region as a flat list of scalar ops (arith, math
// and tensor.extract of captured arguments), which the compiler records in
// kernel bundles and the runtime evaluates without MLIR: any bundle's
// output can then be checked against a float64 reference where it runs.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNRUNTIME_REGION_H
#define ATTNRUNTIME_REGION_H

#include <cstdint>
#include <string>
#include <vector>

namespace attn_runtime {

struct JsonValue;
class HostTensor;

/// A value of a region: an integer (i1 to i64, index) as the sign-extended
/// two's complement of its width, or a float as a double (the reference
/// computes every float type in double precision).
struct Scalar {
  int64_t i = 0;
  double f = 0;

  static Scalar ofInt(int64_t value) { return {value, 0}; }
  static Scalar ofFloat(double value) { return {0, value}; }
};

/// The type of a region value: "i1" to "i64", "index" (64 bits), or
/// "f16", "bf16", "f32", "f64".
struct ScalarType {
  std::string name;
  bool isFloat = false;
  unsigned width = 0;

  /// False when `text` is none of the above.
  static bool parse(const std::string &text, ScalarType &type);
};

struct RegionOp {
  enum class Kind {
    Constant,
    AddI,
    SubI,
    MulI,
    DivSI,
    DivUI,
    RemSI,
    RemUI,
    FloorDivSI,
    CeilDivSI,
    CeilDivUI,
    MinSI,
    MaxSI,
    MinUI,
    MaxUI,
    AndI,
    OrI,
    XOrI,
    ShLI,
    ShRUI,
    ShRSI,
    CmpI,
    CmpF,
    Select,
    IndexCast,
    IndexCastUI,
    ExtSI,
    ExtUI,
    TruncI,
    SIToFP,
    UIToFP,
    FPToSI,
    FPToUI,
    ExtF,
    TruncF,
    AddF,
    SubF,
    MulF,
    DivF,
    NegF,
    MaximumF,
    MinimumF,
    MaxNumF,
    MinNumF,
    Tanh,
    Exp,
    Exp2,
    Log,
    AbsF,
    Sqrt,
    AbsI,
    Fma,
    Extract,
  };

  Kind kind = Kind::Constant;
  /// The result's type.
  ScalarType type;
  /// Value numbers: the region's arguments first, then each op's result.
  /// tensor.extract's are its indices.
  std::vector<int64_t> operands;
  /// arith.cmpi / cmpf: the predicate's MLIR keyword ("slt", "oeq", ...).
  std::string predicate;
  /// arith.constant: its value.
  Scalar constant;
  /// tensor.extract: the function argument it reads.
  int64_t tensor = -1;
  /// Overflow flags (nsw, nuw), `exact`, and fastmath's nnan and ninf:
  /// what makes a result poison.
  bool nsw = false, nuw = false, exact = false, nnan = false, ninf = false;
  /// "FILE:LINE:COL" of the op in the source, for messages; may be empty.
  std::string location;

  /// The MLIR name of `kind` ("arith.addi").
  static const char *name(Kind kind);
  /// The kind named `name`; false for an op regions cannot hold.
  static bool kindOf(const std::string &name, Kind &kind);
  /// 'arith.divsi' at FILE:LINE:COL.
  std::string describe() const;
};

/// A region of one block: argument types (score_mod: the score, b, h, q,
/// kv; mask_mod: b, h, q, kv), ops in order, and the value it yields.
struct RegionProgram {
  std::vector<ScalarType> args;
  std::vector<RegionOp> ops;
  int64_t result = -1;

  const ScalarType &typeOf(int64_t value) const {
    return value < static_cast<int64_t>(args.size())
               ? args[value]
               : ops[value - args.size()].type;
  }

  /// Why the program is malformed (an operand used before it is defined,
  /// operands of the wrong count or type, an unknown predicate), or "".
  std::string validate() const;
  /// Reads {"args": [TYPE...], "ops": [{...}], "yield": VALUE} (the kernel
  /// bundle's "program", docs/Bundles.md) and validates it.
  static bool fromJson(const JsonValue &json, RegionProgram &program,
                       std::string &error);
};

/// What an evaluation may change and report (a derivative by differences):
/// the float result of op #`op` (none: -1) moves by `by`, and `values`, when
/// set, receives every value (the arguments, then each op's result).
struct RegionNudge {
  int64_t op = -1;
  double by = 0;
  std::vector<Scalar> *values = nullptr;
};

/// Evaluates `program` for `args` (one per region argument); `arguments`
/// are the function's arguments by number, which tensor.extract reads
/// (null where not given). Integers are exact and wrap as MLIR defines;
/// what MLIR leaves undefined (division by zero, signed division overflow,
/// out-of-bounds reads, shifts past the width, poison from overflow flags,
/// `exact` or out-of-range conversions, NaN or infinity under fastmath) is
/// an error naming the op, not a made-up value.
bool evaluateRegion(const RegionProgram &program,
                    const std::vector<Scalar> &args,
                    const std::vector<const HostTensor *> &arguments,
                    Scalar &result, std::string &error,
                    const RegionNudge &nudge = {});

} // namespace attn_runtime

#endif // ATTNRUNTIME_REGION_H
