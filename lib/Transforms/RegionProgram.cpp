//===- RegionProgram.cpp - a score_mod or mask_mod region as data ---------===//

#include "AttnDialect/Transforms/RegionProgram.h"
#include "AttnDialect/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::attn;
using attn_runtime::RegionOp;
using attn_runtime::RegionProgram;
using attn_runtime::ScalarType;

namespace {

std::string str(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// The program's type of `type`: signless integers of 1 to 64 bits, index,
/// and f16, bf16, f32, f64.
bool scalarType(Type type, ScalarType &out) {
  auto integer = dyn_cast<IntegerType>(type);
  if (integer && !integer.isSignless())
    return false;
  return (isa<IndexType, IntegerType, FloatType>(type)) &&
         ScalarType::parse(str(type), out);
}

/// FILE:LINE:COL of `op`, or "".
std::string locationOf(Operation &op) {
  auto loc = op.getLoc()->findInstanceOf<FileLineColLoc>();
  if (!loc)
    return "";
  return llvm::formatv("{0}:{1}:{2}", loc.getFilename().getValue(),
                       loc.getLine(), loc.getColumn())
      .str();
}

/// 'arith.divsi' at FILE:LINE:COL, for messages.
std::string describe(Operation &op) {
  std::string text = "'" + op.getName().getStringRef().str() + "'";
  std::string location = locationOf(op);
  if (!location.empty())
    text += " at " + location;
  return text;
}

const char *kScalarsNote =
    "; the reference evaluates integers of up to 64 bits, index and floats";

} // namespace

llvm::Expected<RegionProgram>
mlir::attn::translateRegion(Region &region, StringRef name,
                            llvm::function_ref<int64_t(Value)> argumentNumber) {
  if (!region.hasOneBlock())
    return llvm::createStringError("the reference evaluates a " + name +
                                   " of one block only");
  Block &block = region.front();
  RegionProgram program;
  llvm::DenseMap<Value, int64_t> numbers;
  for (BlockArgument arg : block.getArguments()) {
    ScalarType type;
    if (!scalarType(arg.getType(), type))
      return llvm::createStringError("the " + name + " takes a " +
                                     str(arg.getType()) + kScalarsNote);
    numbers[arg] = program.args.size();
    program.args.push_back(type);
  }
  auto numberOf = [&](Value value) { return numbers.lookup(value); };
  auto add = [&](RegionOp op, Value result) {
    numbers[result] = program.args.size() + program.ops.size();
    program.ops.push_back(std::move(op));
  };
  // A value from above the region: an arith.constant, hoisted out of it by
  // the canonicalizer, is made a constant of the program.
  auto constantFromAbove = [&](Value value, Operation &user) -> llvm::Error {
    auto constant = value.getDefiningOp<arith::ConstantOp>();
    RegionOp op;
    op.kind = RegionOp::Kind::Constant;
    if (!constant || !scalarType(constant.getType(), op.type))
      return llvm::createStringError(
          describe(user) + " in " + name +
          " uses a value defined above the region that is not an "
          "arith.constant; the reference cannot evaluate it");
    if (auto f = dyn_cast<FloatAttr>(constant.getValue()))
      op.constant.f = f.getValueAsDouble();
    else
      op.constant.i =
          cast<IntegerAttr>(constant.getValue()).getValue().getSExtValue();
    add(op, value);
    return llvm::Error::success();
  };

  for (Operation &op : block) {
    if (auto yield = dyn_cast<attn::YieldOp>(op)) {
      Value value = yield.getValues()[0];
      if (!numbers.count(value))
        if (llvm::Error error = constantFromAbove(value, op))
          return std::move(error);
      program.result = numberOf(value);
      continue;
    }
    RegionOp entry;
    if (op.getNumResults() != 1 ||
        !RegionOp::kindOf(op.getName().getStringRef().str(), entry.kind))
      return llvm::createStringError(
          "the reference cannot evaluate '" + op.getName().getStringRef() +
          "' in a region (" + describe(op) + " in " + name +
          "); it knows arith, math and tensor.extract of captured tensors");
    Type resultType = op.getResult(0).getType();
    if (!scalarType(resultType, entry.type))
      return llvm::createStringError(describe(op) + " in " + name +
                                     " gives a " + str(resultType) +
                                     kScalarsNote);
    auto extract = dyn_cast<tensor::ExtractOp>(op);
    for (Value operand : op.getOperands()) {
      if (extract && operand == extract.getTensor()) {
        entry.tensor = argumentNumber(operand);
        if (entry.tensor < 0)
          return llvm::createStringError(
              "tensor.extract in a region must read a function argument (" +
              describe(op) + " in " + name + ")");
        continue;
      }
      ScalarType type;
      if (!scalarType(operand.getType(), type))
        return llvm::createStringError(describe(op) + " in " + name +
                                       " takes a " + str(operand.getType()) +
                                       kScalarsNote);
      if (!numbers.count(operand))
        if (llvm::Error error = constantFromAbove(operand, op))
          return std::move(error);
      entry.operands.push_back(numberOf(operand));
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (auto f = dyn_cast<FloatAttr>(constant.getValue()))
        entry.constant.f = f.getValueAsDouble();
      else if (auto i = dyn_cast<IntegerAttr>(constant.getValue()))
        entry.constant.i = i.getValue().getSExtValue();
    }
    if (auto cmp = dyn_cast<arith::CmpIOp>(op))
      entry.predicate = arith::stringifyCmpIPredicate(cmp.getPredicate()).str();
    if (auto cmp = dyn_cast<arith::CmpFOp>(op))
      entry.predicate = arith::stringifyCmpFPredicate(cmp.getPredicate()).str();
    if (auto flags = dyn_cast<arith::ArithIntegerOverflowFlagsInterface>(op)) {
      entry.nsw = flags.hasNoSignedWrap();
      entry.nuw = flags.hasNoUnsignedWrap();
    }
    if (auto fastMath = dyn_cast<arith::ArithFastMathInterface>(op))
      if (auto attr = fastMath.getFastMathFlagsAttr()) {
        entry.nnan = arith::bitEnumContainsAll(attr.getValue(),
                                               arith::FastMathFlags::nnan);
        entry.ninf = arith::bitEnumContainsAll(attr.getValue(),
                                               arith::FastMathFlags::ninf);
      }
    entry.exact =
        llvm::TypeSwitch<Operation *, bool>(&op)
            .Case<arith::DivSIOp, arith::DivUIOp, arith::ShRUIOp,
                  arith::ShRSIOp>([](auto typed) { return typed.getIsExact(); })
            .Default([](Operation *) { return false; });
    entry.location = locationOf(op);
    add(std::move(entry), op.getResult(0));
  }
  std::string malformed = program.validate();
  if (!malformed.empty())
    return llvm::createStringError("the " + name + " has a form the " +
                                   "reference cannot evaluate: " + malformed);
  return program;
}

DictionaryAttr mlir::attn::regionProgramAttr(const RegionProgram &program,
                                             MLIRContext *context) {
  Builder b(context);
  SmallVector<Attribute> args, ops;
  for (const ScalarType &type : program.args)
    args.push_back(b.getStringAttr(type.name));
  for (const RegionOp &op : program.ops) {
    SmallVector<NamedAttribute> fields = {
        b.getNamedAttr("op", b.getStringAttr(RegionOp::name(op.kind))),
        b.getNamedAttr("type", b.getStringAttr(op.type.name))};
    if (!op.operands.empty())
      fields.push_back(
          b.getNamedAttr("operands", b.getI64ArrayAttr(op.operands)));
    if (op.kind == RegionOp::Kind::Constant) {
      Attribute value;
      // JSON has no non-finite numbers: those are written as text.
      if (!op.type.isFloat)
        value = b.getI64IntegerAttr(op.constant.i);
      else if (std::isfinite(op.constant.f))
        value = b.getF64FloatAttr(op.constant.f);
      else
        value = b.getStringAttr(std::isnan(op.constant.f) ? "nan"
                                : op.constant.f > 0       ? "inf"
                                                          : "-inf");
      fields.push_back(b.getNamedAttr("value", value));
    }
    if (!op.predicate.empty())
      fields.push_back(
          b.getNamedAttr("predicate", b.getStringAttr(op.predicate)));
    if (op.tensor >= 0)
      fields.push_back(
          b.getNamedAttr("tensor", b.getI64IntegerAttr(op.tensor)));
    SmallVector<Attribute> flags;
    for (auto [set, flag] : {std::pair<bool, const char *>{op.nsw, "nsw"},
                             {op.nuw, "nuw"},
                             {op.exact, "exact"},
                             {op.nnan, "nnan"},
                             {op.ninf, "ninf"}})
      if (set)
        flags.push_back(b.getStringAttr(flag));
    if (!flags.empty())
      fields.push_back(b.getNamedAttr("flags", b.getArrayAttr(flags)));
    if (!op.location.empty())
      fields.push_back(b.getNamedAttr("loc", b.getStringAttr(op.location)));
    ops.push_back(b.getDictionaryAttr(fields));
  }
  return b.getDictionaryAttr(
      {b.getNamedAttr("args", b.getArrayAttr(args)),
       b.getNamedAttr("ops", b.getArrayAttr(ops)),
       b.getNamedAttr("yield", b.getI64IntegerAttr(program.result))});
}
