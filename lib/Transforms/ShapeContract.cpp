//===- ShapeContract.cpp - ties between argument sizes of attn functions --===//

#include "AttnDialect/Transforms/ShapeContract.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::attn;
using attn_runtime::DimRef;
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

  /// A size the contract can state: a static size or a constant ("fixed"),
  /// a dimension of an argument, or neither (unknown).
  struct Size {
    enum class Kind { Unknown, Fixed, Dim } kind = Kind::Unknown;
    int64_t value = 0;
    DimRef dim;
    /// An unknown size that is a dim of some tensor: equal to itself.
    Value tensor;
    int64_t tensorDim = -1;
  };
  static Size fixed(int64_t value) {
    Size size;
    size.kind = Size::Kind::Fixed;
    size.value = value;
    return size;
  }

  Size sizeOfDim(Value tensor, int64_t d) {
    auto type = cast<ShapedType>(tensor.getType());
    if (!type.isDynamicDim(d))
      return fixed(type.getDimSize(d));
    if (int64_t arg = argOf(tensor); arg >= 0) {
      Size size;
      size.kind = Size::Kind::Dim;
      size.dim = {arg, d};
      return size;
    }
    Size unknown;
    unknown.tensor = tensor;
    unknown.tensorDim = d;
    return unknown;
  }
  Size sizeOfIndex(Value index) {
    APInt constant;
    if (matchPattern(index, m_ConstantInt(&constant)))
      return fixed(constant.getSExtValue());
    if (auto dim = index.getDefiningOp<tensor::DimOp>())
      if (std::optional<int64_t> d = dim.getConstantIndex())
        return sizeOfDim(dim.getSource(), *d);
    return {};
  }

  /// Requires `lhs kind ceil(rhs / rhsBlock)`: checked now where both sizes
  /// are fixed, recorded for the runtime where one is an argument's dim,
  /// refused where either is unknown (nothing could check it).
  LogicalResult require(Operation *op, ShapeConstraint::Kind kind, Size lhs,
                        Size rhs, int64_t rhsBlock, StringRef lhsWhat,
                        StringRef rhsWhat) {
    using Kind = ShapeConstraint::Kind;
    auto ceilDiv = [&](int64_t size) {
      return size / rhsBlock + (size % rhsBlock != 0);
    };
    auto rhsText = [&]() {
      std::string text = rhsWhat.str();
      if (rhsBlock > 1)
        text += " in blocks of " + std::to_string(rhsBlock);
      return text;
    };
    // The same dim of the same tensor agrees with itself, known or not.
    bool sameDim =
        lhs.kind == rhs.kind &&
        (lhs.kind == Size::Kind::Dim ? lhs.dim == rhs.dim
                                     : lhs.tensor && lhs.tensor == rhs.tensor &&
                                           lhs.tensorDim == rhs.tensorDim);
    if (sameDim && rhsBlock == 1 && kind != Kind::MultipleOf)
      return success();
    // A block mask of extent 1 serves every batch (head), known or not.
    if (kind == Kind::OneOrEqual && lhs.kind == Size::Kind::Fixed &&
        lhs.value == 1)
      return success();
    if (lhs.kind == Size::Kind::Unknown || rhs.kind == Size::Kind::Unknown)
      return op->emitOpError()
             << "cannot check that " << lhsWhat << " is "
             << ShapeConstraint::relationText(kind) << rhsText()
             << ": make each a constant or a tensor.dim of a function "
                "argument";
    if (lhs.kind == Size::Kind::Fixed && rhs.kind == Size::Kind::Fixed) {
      int64_t r = ceilDiv(rhs.value);
      if (ShapeConstraint::holds(kind, lhs.value, r))
        return success();
      return op->emitOpError()
             << "expected " << lhsWhat << " to be "
             << ShapeConstraint::relationText(kind) << rhsText() << " (" << r
             << "), but it is " << lhs.value;
    }
    ShapeConstraint c;
    c.kind = kind;
    c.rhsBlock = rhsBlock;
    c.what = lhsWhat.str();
    if (lhs.kind == Size::Kind::Dim) {
      c.lhs = lhs.dim;
      if (rhs.kind == Size::Kind::Dim)
        c.rhs = rhs.dim;
      else
        c.rhsValue = rhs.value;
    } else {
      // A fixed left side: state the same requirement on the right's dim.
      c.lhs = rhs.dim;
      c.rhsBlock = 1;
      c.what = (rhsWhat + ", fixed by " + lhsWhat).str();
      int64_t l = lhs.value;
      if (kind == Kind::AtLeast) { // l >= ceil(r / block) iff r <= l * block
        c.kind = Kind::AtMost;
        c.rhsValue = l * rhsBlock;
      } else if ((kind == Kind::Equal || kind == Kind::OneOrEqual) &&
                 rhsBlock == 1) {
        c.kind = Kind::Equal;
        c.rhsValue = l;
      } else {
        return op->emitOpError()
               << "cannot check that " << lhsWhat << " (" << l << ") is "
               << ShapeConstraint::relationText(kind) << rhsText()
               << " at run time: give it a dynamic size too";
      }
    }
    for (const ShapeConstraint &known : contract.constraints)
      if (known.kind == c.kind && known.lhs == c.lhs && known.rhs == c.rhs &&
          known.rhsValue == c.rhsValue && known.rhsBlock == c.rhsBlock)
        return success();
    contract.constraints.push_back(c);
    return success();
  }

  /// The extents a block mask was built for: batch, heads and, per side,
  /// its rows (q-blocks of the kv-side lists, kv-blocks of the q-side ones).
  struct MaskExtents {
    Size batch, heads;
    /// q_len and kv_len of create_block_mask (unknown for given lists).
    Size qLen, kvLen;
    /// The kv-side (q-side) lists' rows of make_block_mask (unknown for
    /// create_block_mask, whose rows follow from q_len and kv_len, or
    /// without q-side lists).
    Size kvSideRows, qSideRows;
  };
  std::optional<MaskExtents> extentsOf(Value blockMask) {
    if (auto create = blockMask.getDefiningOp<CreateBlockMaskOp>()) {
      MaskExtents e;
      e.batch = sizeOfIndex(create.getBatch());
      e.heads = sizeOfIndex(create.getHeads());
      e.qLen = sizeOfIndex(create.getQLen());
      e.kvLen = sizeOfIndex(create.getKvLen());
      return e;
    }
    if (auto make = blockMask.getDefiningOp<MakeBlockMaskOp>()) {
      MaskExtents e;
      Value counts = make.getKvNumBlocks();
      for (int64_t i = 0; i < 8; ++i) {
        auto field = static_cast<BlockMaskField>(i);
        if (Value list = make.getList(field))
          name(list, stringifyBlockMaskField(field));
      }
      e.batch = sizeOfDim(counts, 0);
      e.heads = sizeOfDim(counts, 1);
      e.kvSideRows = sizeOfDim(counts, 2);
      if (Value qCounts = make.getQNumBlocks())
        e.qSideRows = sizeOfDim(qCounts, 2);
      // Every list of the mask has the counts' batch and heads, and a
      // side's lists have their counts' rows.
      for (int64_t i = 1; i < 8; ++i) {
        Value list = make.getList(static_cast<BlockMaskField>(i));
        if (!list)
          continue;
        Value sideCounts = i < 4 ? counts : make.getQNumBlocks();
        for (int64_t d = 0; d < 3; ++d)
          if (Size at = sizeOfDim(list, d); at.kind == Size::Kind::Dim)
            if (Size of = sizeOfDim(d < 2 ? counts : sideCounts, d);
                of.kind != Size::Kind::Unknown)
              (void)require(make, ShapeConstraint::Kind::Equal, at, of, 1,
                            "a block-mask list's leading dim",
                            d < 2 || i < 4 ? "kv_num_blocks'"
                                           : "q_num_blocks'");
        // Full index lists are as wide as the partial ones of their side:
        // the forward's kernels read both within the partial list's width.
        if (i % 4 == 3)
          if (Size at = sizeOfDim(list, 3); at.kind == Size::Kind::Dim)
            if (Size of = sizeOfDim(
                    make.getList(static_cast<BlockMaskField>(i - 2)), 3);
                of.kind != Size::Kind::Unknown)
              (void)require(make, ShapeConstraint::Kind::Equal, at, of, 1,
                            "a full index list's width",
                            "its side's partial list's");
      }
      return e;
    }
    return std::nullopt;
  }

  /// A block mask must have been built for the attention that uses it:
  /// FlexAttention's rule, and the kernels index its lists by the
  /// attention's batch, head and q-block.
  LogicalResult addBlockMaskUse(Operation *op, Value blockMask, Value q,
                                Value k) {
    std::optional<MaskExtents> mask = extentsOf(blockMask);
    if (!mask)
      return op->emitOpError()
             << "cannot check the block mask's sizes against the attention: "
                "it must come from attn.create_block_mask or "
                "attn.make_block_mask";
    auto type = cast<BlockMaskType>(blockMask.getType());
    using Kind = ShapeConstraint::Kind;
    if (failed(require(op, Kind::OneOrEqual, mask->batch, sizeOfDim(q, 0), 1,
                       "the block mask's batch", "the query's batch")) ||
        failed(require(op, Kind::OneOrEqual, mask->heads, sizeOfDim(q, 1), 1,
                       "the block mask's heads", "the query's heads")))
      return failure();
    if (mask->qSideRows.kind != Size::Kind::Unknown &&
        failed(require(op, Kind::AtLeast, mask->qSideRows, sizeOfDim(k, 2),
                       type.getKvBlock(), "the block mask's q-side rows",
                       "the kv length")))
      return failure();
    if (mask->kvSideRows.kind != Size::Kind::Unknown)
      return require(op, Kind::AtLeast, mask->kvSideRows, sizeOfDim(q, 2),
                     type.getQBlock(), "the block mask's rows",
                     "the query length");
    if (failed(require(op, Kind::Equal, mask->qLen, sizeOfDim(q, 2), 1,
                       "the block mask's q_len", "the query length")) ||
        failed(require(op, Kind::Equal, mask->kvLen, sizeOfDim(k, 2), 1,
                       "the block mask's kv_len", "the kv length")))
      return failure();
    return success();
  }

  /// A block_mask_field result's static sizes must be the mask's.
  LogicalResult addField(BlockMaskFieldOp op) {
    auto create = op.getBlockMask().getDefiningOp<CreateBlockMaskOp>();
    if (!create)
      return success();
    auto type = cast<BlockMaskType>(op.getBlockMask().getType());
    auto result = cast<RankedTensorType>(op.getResult().getType());
    bool kvSide = op.getField() == BlockMaskField::kv_num_blocks ||
                  op.getField() == BlockMaskField::kv_indices ||
                  op.getField() == BlockMaskField::full_kv_num_blocks ||
                  op.getField() == BlockMaskField::full_kv_indices;
    struct Extent {
      Value size;
      int64_t block;
      const char *what;
    };
    Extent q = {create.getQLen(), type.getQBlock(), "q_len"};
    Extent kv = {create.getKvLen(), type.getKvBlock(), "kv_len"};
    Extent extents[] = {{create.getBatch(), 1, "batch"},
                        {create.getHeads(), 1, "heads"},
                        kvSide ? q : kv,
                        kvSide ? kv : q};
    for (int64_t d = 0; d < result.getRank() && d < 4; ++d) {
      if (result.isDynamicDim(d))
        continue;
      if (failed(require(op, ShapeConstraint::Kind::Equal,
                         fixed(result.getDimSize(d)),
                         sizeOfIndex(extents[d].size), extents[d].block,
                         "the result's dim " + std::to_string(d),
                         (llvm::Twine("the mask's ") + extents[d].what).str())))
        return failure();
    }
    return success();
  }

  LogicalResult addAttention(AttentionOp op) {
    if (!op.getOffsets().empty())
      return success(); // A tile of a larger problem: its operands are slices.
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

    addCapturedReads({&op.getScoreMod(), &op.getMaskMod()}, q, k);
    if (Value blockMask = op.getBlockMask())
      return addBlockMaskUse(op, blockMask, q, k);
    return success();
  }

  /// A captured tensor indexed by a position must cover that dimension:
  /// the regions' (b, h, q, kv) arguments range over q's batch, q's heads,
  /// q's length and k's length.
  void addCapturedReads(ArrayRef<Region *> regions, Value q, Value k) {
    struct Position {
      Value tensor;
      int64_t dim;
      const char *what;
    };
    const Position positions[] = {{q, 0, "batch"},
                                  {q, 1, "query heads"},
                                  {q, 2, "query length"},
                                  {k, 2, "kv length"}};
    for (Region *region : regions) {
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

  LogicalResult addAttentionGrad(AttentionGradOp op) {
    if (!op.getOffsets().empty())
      return success(); // A tile of a larger problem: its operands are slices.
    Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
    Value o = op.getOutput(), dO = op.getGradOutput(), lse = op.getLogsumexp();
    Value dq = op.getOutputs()[0], dk = op.getOutputs()[1],
          dv = op.getOutputs()[2];
    const std::pair<Value, const char *> names[] = {
        {q, "q"},   {k, "k"},   {v, "v"},   {o, "out"}, {dO, "grad_out"},
        {lse, "lse"}, {dq, "dq"}, {dk, "dk"}, {dv, "dv"}};
    for (const auto &[value, label] : names)
      name(value, label);
    for (Value operand : {k, v, o, dO, lse, dq, dk, dv})
      equal(operand, 0, q, 0, "batch");
    tie(ShapeConstraint::Kind::MultipleOf, q, 1, k, 1, "query heads");
    for (Value operand : {v, dk, dv}) {
      equal(operand, 1, k, 1, "kv heads");
      equal(operand, 2, k, 2, "kv length");
    }
    for (Value operand : {o, dO, lse, dq}) {
      equal(operand, 1, q, 1, "query heads");
      equal(operand, 2, q, 2, "query length");
    }
    for (Value operand : {k, dq, dk})
      equal(operand, 3, q, 3, "head dim");
    for (Value operand : {o, dO, dv})
      equal(operand, 3, v, 3, "value head dim");
    // Each wrt tensor's gradient has its shape.
    for (auto [wrt, grad] :
         llvm::zip(op.getWrt(), op.getOutputs().drop_front(3)))
      for (int64_t d = 0; d < cast<RankedTensorType>(wrt.getType()).getRank();
           ++d)
        equal(grad, d, wrt, d, "wrt tensor's dims");
    addCapturedReads({&op.getScoreMod(), &op.getMaskMod()}, q, k);
    if (Value blockMask = op.getBlockMask())
      return addBlockMaskUse(op, blockMask, q, k);
    return success();
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

FailureOr<ShapeContract> mlir::attn::computeShapeContract(func::FuncOp func) {
  ContractBuilder builder(func);
  if (!func.isExternal()) {
    WalkResult walk = func.walk([&](Operation *op) {
      LogicalResult added = success();
      if (auto attention = dyn_cast<AttentionOp>(op))
        added = builder.addAttention(attention);
      else if (auto grad = dyn_cast<AttentionGradOp>(op))
        added = builder.addAttentionGrad(grad);
      else if (auto field = dyn_cast<BlockMaskFieldOp>(op))
        added = builder.addField(field);
      else if (auto softmax = dyn_cast<SoftmaxOp>(op))
        builder.addSoftmax(softmax);
      return failed(added) ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return builder.finish();
}

DictionaryAttr mlir::attn::shapeContractToAttr(MLIRContext *context,
                                               const ShapeContract &contract) {
  Builder b(context);
  SmallVector<Attribute> names, constraints;
  for (const std::string &name : contract.argNames)
    names.push_back(b.getStringAttr(name));
  // [kind, [lhs arg, lhs dim, rhs arg, rhs dim (, rhs block)], what]; a
  // fixed right side is [-1, size].
  for (const ShapeConstraint &c : contract.constraints) {
    SmallVector<int64_t> refs = {c.lhs.arg, c.lhs.dim,
                                 c.rhsValue ? -1 : c.rhs.arg,
                                 c.rhsValue ? *c.rhsValue : c.rhs.dim};
    if (c.rhsBlock != 1)
      refs.push_back(c.rhsBlock);
    constraints.push_back(b.getArrayAttr(
        {b.getStringAttr(ShapeConstraint::kindName(c.kind)),
         b.getDenseI64ArrayAttr(refs), b.getStringAttr(c.what)}));
  }
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
    if (!kind || !refs || refs.size() < 4 || refs.size() > 5 || !what ||
        !ShapeConstraint::parseKind(kind.str(), c.kind) ||
        !inRange(refs[0], refs[1]))
      return failure();
    c.lhs = {refs[0], refs[1]};
    if (refs[2] == -1 && refs[3] >= 0)
      c.rhsValue = refs[3];
    else if (inRange(refs[2], refs[3]))
      c.rhs = {refs[2], refs[3]};
    else
      return failure();
    if (refs.size() == 5) {
      if (refs[4] < 1)
        return failure();
      c.rhsBlock = refs[4];
    }
    c.what = what.str();
    contract.constraints.push_back(c);
  }
  return contract;
}
