//===- InlinePtx.cpp - PTX for what the NVVM ops do not express -----------===//

#include "AttnDialect/Target/NVVM/InlinePtx.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

/// The register class of an operand of `type`.
static StringRef registerClass(Type type) {
  if (isa<LLVM::LLVMPointerType>(type) || type.isInteger(64))
    return "l";
  if (type.isF32())
    return "f";
  if (type.isInteger(16))
    return "h";
  assert(type.isInteger(32) && "no PTX register class for this type");
  return "r";
}

/// Outputs $0... of `outputTypes` (each tied to the same input when
/// `tied`), then `inputs`.
static SmallVector<Value> emit(OpBuilder &b, Location loc, StringRef ptx,
                               ArrayRef<Type> outputTypes, ValueRange tied,
                               ValueRange inputs, bool touchesMemory) {
  SmallVector<std::string> constraints;
  for (Type type : outputTypes)
    constraints.push_back(("=" + registerClass(type)).str());
  SmallVector<Value> operands;
  for (auto [i, value] : llvm::enumerate(tied)) {
    constraints.push_back(std::to_string(i));
    operands.push_back(value);
  }
  for (Value value : inputs) {
    constraints.push_back(registerClass(value.getType()).str());
    operands.push_back(value);
  }
  if (touchesMemory)
    constraints.push_back("~{memory}");
  Type resultType;
  if (outputTypes.size() == 1)
    resultType = outputTypes.front();
  else if (outputTypes.size() > 1)
    resultType = LLVM::LLVMStructType::getLiteral(b.getContext(), outputTypes);
  auto op = LLVM::InlineAsmOp::create(
      b, loc, resultType ? TypeRange(resultType) : TypeRange(), operands, ptx,
      llvm::join(constraints, ","), /*has_side_effects=*/true,
      /*is_align_stack=*/false, LLVM::tailcallkind::TailCallKind::None,
      /*asm_dialect=*/LLVM::AsmDialectAttr(),
      /*operand_attrs=*/ArrayAttr());
  if (outputTypes.size() <= 1)
    return SmallVector<Value>(op->getResults());
  SmallVector<Value> results;
  for (size_t i = 0; i < outputTypes.size(); ++i)
    results.push_back(
        LLVM::ExtractValueOp::create(b, loc, op.getRes(), i).getResult());
  return results;
}

SmallVector<Value> mlir::attn::nvvm::inlinePtx(OpBuilder &b, Location loc,
                                               StringRef ptx, ValueRange inputs,
                                               TypeRange results) {
  return emit(b, loc, ptx, SmallVector<Type>(results), {}, inputs,
              /*touchesMemory=*/true);
}

SmallVector<Value>
mlir::attn::nvvm::inlinePtxInPlace(OpBuilder &b, Location loc, StringRef ptx,
                                   ValueRange tied, ValueRange inputs) {
  return emit(b, loc, ptx, SmallVector<Type>(tied.getTypes()), tied, inputs,
              /*touchesMemory=*/false);
}
