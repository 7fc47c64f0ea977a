//===- Computes.cpp - what a compiled function computes -------------------===//

#include "AttnDialect/Transforms/Computes.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Transforms/RegionProgram.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

std::string typeName(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

/// {name, digest, program} of a mask_mod or score_mod region: the digest
/// (xxh3, in hex) of its printed ops tells regions apart when they have no
/// name; the program (RegionProgram.h) is what a runner's reference
/// evaluates, left out when the region holds an op it cannot.
DictionaryAttr regionRecord(Operation *op, Region &region, StringRef nameAttr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Type type : region.front().getArgumentTypes())
    os << type << ";";
  AsmState state(op);
  for (Operation &inner : region.front()) {
    inner.print(os, state);
    os << "\n";
  }
  Builder b(op->getContext());
  std::string digest =
      llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true, 16);
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("digest", b.getStringAttr(digest))};
  if (auto name = op->getAttrOfType<StringAttr>(nameAttr))
    fields.push_back(b.getNamedAttr("name", name));
  Block *entry = &op->getParentOfType<func::FuncOp>().getBody().front();
  llvm::Expected<attn_runtime::RegionProgram> program =
      translateRegion(region, "region", [&](Value tensor) -> int64_t {
        auto arg = dyn_cast<BlockArgument>(tensor);
        return arg && arg.getOwner() == entry ? arg.getArgNumber() : -1;
      });
  if (program)
    fields.push_back(b.getNamedAttr(
        "program", regionProgramAttr(*program, op->getContext())));
  else
    llvm::consumeError(program.takeError());
  return b.getDictionaryAttr(fields);
}

/// Whether the op has a block mask, and its block sizes if so.
void appendBlockMask(Builder &b, SmallVectorImpl<NamedAttribute> &fields,
                     Value blockMask) {
  fields.push_back(b.getNamedAttr("block_mask",
                                  b.getBoolAttr(static_cast<bool>(blockMask))));
  if (!blockMask)
    return;
  auto type = cast<BlockMaskType>(blockMask.getType());
  fields.push_back(b.getNamedAttr(
      "block_sizes", b.getI64ArrayAttr({type.getQBlock(), type.getKvBlock()})));
}

DictionaryAttr record(AttentionOp op) {
  Builder b(op.getContext());
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("op", b.getStringAttr("attention")),
      b.getNamedAttr("dtype", b.getStringAttr(typeName(
                                  op.getQueryType().getElementType()))),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(op.getHeadDim())),
      b.getNamedAttr("value_head_dim",
                     b.getI64IntegerAttr(op.getValueHeadDim())),
      b.getNamedAttr("scale", b.getF32FloatAttr(op.getScaleValue())),
      b.getNamedAttr("causal", b.getBoolAttr(op.getCausal())),
      b.getNamedAttr("logsumexp",
                     b.getBoolAttr(static_cast<bool>(op.getLogsumexpInit()))),
  };
  appendBlockMask(b, fields, op.getBlockMask());
  if (!op.getMaskMod().empty())
    fields.push_back(b.getNamedAttr(
        "mask_mod", regionRecord(op, op.getMaskMod(), kMaskModNameAttrName)));
  if (!op.getScoreMod().empty())
    fields.push_back(
        b.getNamedAttr("score_mod", regionRecord(op, op.getScoreMod(),
                                                 kScoreModNameAttrName)));
  return b.getDictionaryAttr(fields);
}

/// The backward records what its forward does, less the logsumexp and
/// block-mask flags (it reads the forward's logsumexp and builds its own
/// lists): the gradients of that attention.
DictionaryAttr record(AttentionGradOp op) {
  Builder b(op.getContext());
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("op", b.getStringAttr("attention_grad")),
      b.getNamedAttr("dtype", b.getStringAttr(typeName(
                                  op.getQuery().getType().getElementType()))),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(op.getHeadDim())),
      b.getNamedAttr("value_head_dim",
                     b.getI64IntegerAttr(op.getValueHeadDim())),
      b.getNamedAttr("scale", b.getF32FloatAttr(op.getScaleValue())),
      b.getNamedAttr("causal", b.getBoolAttr(op.getCausal()))};
  appendBlockMask(b, fields, op.getBlockMask());
  if (op.hasMaskMod())
    fields.push_back(b.getNamedAttr(
        "mask_mod", regionRecord(op, op.getMaskMod(), kMaskModNameAttrName)));
  if (op.hasScoreMod())
    fields.push_back(
        b.getNamedAttr("score_mod", regionRecord(op, op.getScoreMod(),
                                                 kScoreModNameAttrName)));
  // Each wrt tensor and its gradient as function arguments (-1: not one).
  Block *entry = &op->getParentOfType<func::FuncOp>().getBody().front();
  auto argumentOf = [&](Value value) -> int64_t {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == entry ? arg.getArgNumber() : -1;
  };
  SmallVector<Attribute> wrt;
  for (auto [w, tensor] : llvm::enumerate(op.getWrt()))
    wrt.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("tensor", b.getI64IntegerAttr(argumentOf(tensor))),
         b.getNamedAttr("grad", b.getI64IntegerAttr(
                                    argumentOf(op.getOutputs()[3 + w])))}));
  if (!wrt.empty())
    fields.push_back(b.getNamedAttr("wrt", b.getArrayAttr(wrt)));
  return b.getDictionaryAttr(fields);
}

DictionaryAttr record(SoftmaxOp op) {
  Builder b(op.getContext());
  return b.getDictionaryAttr(
      {b.getNamedAttr("op", b.getStringAttr("softmax")),
       b.getNamedAttr(
           "dtype", b.getStringAttr(
                        typeName(op.getInput().getType().getElementType())))});
}

} // namespace

ArrayAttr mlir::attn::computesAttr(func::FuncOp func) {
  SmallVector<Attribute> records;
  func.walk([&](Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      // A tile of a larger problem says nothing about the function's.
      if (attention.getOffsets().empty())
        records.push_back(record(attention));
    } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
      if (grad.getOffsets().empty())
        records.push_back(record(grad));
    } else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      records.push_back(record(softmax));
    }
  });
  if (records.empty())
    return nullptr;
  return ArrayAttr::get(func.getContext(), records);
}
