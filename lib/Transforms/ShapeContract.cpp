//===- ShapeContract.cpp - ties between argument sizes of attn functions --===//

#include "AttnDialect/Transforms/ShapeContract.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::attn;
using attn_runtime::ShapeConstraint;
using attn_runtime::ShapeContract;

namespace {

/// Builds a contract for one function, naming arguments by their first role.
class ContractBuilder {
public:
  explicit ContractBuilder(func::FuncOp func) : func(func) {
    contract.argNames.resize(func.getNumArguments());
  }

  /// The argument number of `value`, or -1 when it is not an argument of
  /// the function.
  int64_t argOf(Value value) {
    auto arg = dyn_cast_or_null<BlockArgument>(value);
    if (!arg || arg.getOwner() != &func.getBody().front())
      return -1;
    return arg.getArgNumber();
  }

  void name(Value value, StringRef role) {
    int64_t arg = argOf(value);
    if (arg >= 0 && contract.argNames[arg].empty())
      contract.argNames[arg] = role.str();
  }

  void tie(ShapeConstraint::Kind kind, Value lhs, int64_t lhsDim, Value rhs,
           int64_t rhsDim, StringRef what) {
    int64_t a = argOf(lhs), b = argOf(rhs);
    if (a < 0 || b < 0 || (a == b && lhsDim == rhsDim))
      return;
    ShapeConstraint constraint;
    constraint.kind = kind;
    constraint.lhs = {a, lhsDim};
    constraint.rhs = {b, rhsDim};
    constraint.what = what.str();
    for (const ShapeConstraint &known : contract.constraints)
      if (known.kind == kind && known.lhs == constraint.lhs &&
          known.rhs == constraint.rhs)
        return;
    contract.constraints.push_back(constraint);
  }
  void equal(Value lhs, int64_t lhsDim, Value rhs, int64_t rhsDim,
             StringRef what) {
    tie(ShapeConstraint::Kind::Equal, lhs, lhsDim, rhs, rhsDim, what);
  }

  void addAttention(AttentionOp op) {
    if (!op.getOffsets().empty())
      return; // A tile of a larger problem: its operands are slices.
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value out = op.getOutputs()[0], lse = op.getLogsumexpInit();
    name(q, "q");
    name(k, "k");
    name(v, "v");
    name(out, "out");
    if (lse)
      name(lse, "lse");
    for (Value operand : {k, v, out})
      equal(operand, 0, q, 0, "batch");
    equal(v, 1, k, 1, "kv heads");
    tie(ShapeConstraint::Kind::MultipleOf, q, 1, k, 1, "query heads");
    equal(out, 1, q, 1, "query heads");
    equal(v, 2, k, 2, "kv length");
    equal(out, 2, q, 2, "query length");
    equal(k, 3, q, 3, "head dim");
    equal(out, 3, v, 3, "value head dim");
    if (lse) {
      equal(lse, 0, q, 0, "batch");
      equal(lse, 1, q, 1, "query heads");
      equal(lse, 2, q, 2, "query length");
    }

    // A captured tensor indexed by a position must cover that dimension:
    // the region's (b, h, q, kv) arguments range over q's batch, q's heads,
    // q's length and k's length.
    struct Position {
      Value tensor;
      int64_t dim;
      const char *what;
    };
    const Position positions[] = {{q, 0, "batch"},
                                  {q, 1, "query heads"},
                                  {q, 2, "query length"},
                                  {k, 2, "kv length"}};
    for (Region *region : {&op.getScoreMod(), &op.getMaskMod()}) {
      if (region->empty())
        continue;
      Block &block = region->front();
      // score_mod's first argument is the score.
      unsigned first = block.getNumArguments() == 5 ? 1 : 0;
      region->walk([&](tensor::ExtractOp extract) {
        for (auto [dim, index] : llvm::enumerate(extract.getIndices())) {
          auto arg = dyn_cast<BlockArgument>(index);
          if (!arg || arg.getOwner() != &block || arg.getArgNumber() < first)
            continue;
          const Position &position = positions[arg.getArgNumber() - first];
          tie(ShapeConstraint::Kind::AtLeast, extract.getTensor(), dim,
              position.tensor, position.dim,
              (llvm::Twine("indexed by ") + position.what).str());
        }
      });
    }
  }

  void addSoftmax(SoftmaxOp op) {
    name(op.getInput(), "input");
    name(op.getOutput(), "out");
    int64_t rank = op.getInput().getType().getRank();
    for (int64_t dim = 0; dim < rank; ++dim)
      equal(op.getOutput(), dim, op.getInput(), dim,
            dim + 1 == rank ? "row length" : "rows");
  }

  ShapeContract finish() {
    for (auto [arg, name] : llvm::enumerate(contract.argNames))
      if (name.empty())
        name = "argument " + std::to_string(arg);
    if (auto dims = argumentDims(func); succeeded(dims))
      contract.argDims = *dims;
    return std::move(contract);
  }

private:
  func::FuncOp func;
  ShapeContract contract;
};

} // namespace

FailureOr<std::vector<std::vector<int64_t>>>
mlir::attn::argumentDims(func::FuncOp func) {
  std::vector<std::vector<int64_t>> dims;
  for (Type type : func.getArgumentTypes()) {
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasRank() ||
        !(isa<RankedTensorType>(type) || isa<MemRefType>(type)))
      return failure();
    std::vector<int64_t> shape;
    for (int64_t size : shaped.getShape())
      shape.push_back(ShapedType::isDynamic(size) ? -1 : size);
    dims.push_back(std::move(shape));
  }
  return dims;
}

ShapeContract mlir::attn::computeShapeContract(func::FuncOp func) {
  ContractBuilder builder(func);
  if (!func.isExternal())
    func.walk([&](Operation *op) {
      if (auto attention = dyn_cast<AttentionOp>(op))
        builder.addAttention(attention);
      else if (auto softmax = dyn_cast<SoftmaxOp>(op))
        builder.addSoftmax(softmax);
    });
  return builder.finish();
}

DictionaryAttr mlir::attn::shapeContractToAttr(MLIRContext *context,
                                               const ShapeContract &contract) {
  Builder b(context);
  SmallVector<Attribute> names, constraints;
  for (const std::string &name : contract.argNames)
    names.push_back(b.getStringAttr(name));
  for (const ShapeConstraint &c : contract.constraints)
    constraints.push_back(b.getArrayAttr(
        {b.getStringAttr(ShapeConstraint::kindName(c.kind)),
         b.getDenseI64ArrayAttr({c.lhs.arg, c.lhs.dim, c.rhs.arg, c.rhs.dim}),
         b.getStringAttr(c.what)}));
  return b.getDictionaryAttr(
      {b.getNamedAttr("names", b.getArrayAttr(names)),
       b.getNamedAttr("constraints", b.getArrayAttr(constraints))});
}

FailureOr<ShapeContract>
mlir::attn::shapeContractFromAttr(func::FuncOp func, DictionaryAttr attr) {
  ShapeContract contract;
  FailureOr<std::vector<std::vector<int64_t>>> dims = argumentDims(func);
  if (failed(dims))
    return failure();
  contract.argDims = *dims;
  auto names = attr.getAs<ArrayAttr>("names");
  auto constraints = attr.getAs<ArrayAttr>("constraints");
  if (!names || !constraints || names.size() != contract.argDims.size())
    return failure();
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text)
      return failure();
    contract.argNames.push_back(text.str());
  }
  auto inRange = [&](int64_t arg, int64_t dim) {
    return arg >= 0 && arg < static_cast<int64_t>(contract.argDims.size()) &&
           dim >= 0 && dim < static_cast<int64_t>(contract.argDims[arg].size());
  };
  for (Attribute entry : constraints) {
    auto fields = dyn_cast<ArrayAttr>(entry);
    if (!fields || fields.size() != 3)
      return failure();
    auto kind = dyn_cast<StringAttr>(fields[0]);
    auto refs = dyn_cast<DenseI64ArrayAttr>(fields[1]);
    auto what = dyn_cast<StringAttr>(fields[2]);
    ShapeConstraint c;
    if (!kind || !refs || refs.size() != 4 || !what ||
        !ShapeConstraint::parseKind(kind.str(), c.kind) ||
        !inRange(refs[0], refs[1]) || !inRange(refs[2], refs[3]))
      return failure();
    c.lhs = {refs[0], refs[1]};
    c.rhs = {refs[2], refs[3]};
    c.what = what.str();
    contract.constraints.push_back(c);
  }
  return contract;
}
