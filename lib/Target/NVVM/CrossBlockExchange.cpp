//===- CrossBlockExchange.cpp - blocks that wait for each other -----------===//

#include "AttnDialect/Target/NVVM/CrossBlockExchange.h"
#include "AttnDialect/Target/NVVM/InlinePtx.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

Value mlir::attn::nvvm::elementPointer(OpBuilder &b, Location loc, Value buffer,
                                       Value index, unsigned space) {
  Type element = cast<MemRefType>(buffer.getType()).getElementType();
  Value bytes = arith::ConstantIndexOp::create(
      b, loc, element.getIntOrFloatBitWidth() / 8);
  Value offset = arith::MulIOp::create(b, loc, index, bytes);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, b.getIndexType(), buffer);
  Value address = arith::AddIOp::create(b, loc, base, offset);
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), space),
      arith::IndexCastOp::create(b, loc, b.getI64Type(), address).getResult());
}

namespace {

/// An atomic on word `word` of the global i32 memref `counters`, as inline
/// PTX `text` (pointer $0, or $1 after an i32 result when `returnsCount`;
/// then `amount`, an i32, when given):
/// NVPTX lowers an atomicrmw's release or acquire-release ordering to a
/// relaxed atom, and a fence beside it would order every access, not just
/// publish these.
Value counterAtomic(OpBuilder &b, Location loc, Value counters, Value word,
                    StringRef text, bool returnsCount = false,
                    Value amount = Value()) {
  SmallVector<Value> inputs = {
      mlir::attn::nvvm::elementPointer(b, loc, counters, word, 1)};
  if (amount)
    inputs.push_back(amount);
  Type i32 = b.getI32Type();
  SmallVector<Value> results = mlir::attn::nvvm::inlinePtx(
      b, loc, text, inputs, returnsCount ? TypeRange(i32) : TypeRange());
  return returnsCount ? results.front() : Value();
}

} // namespace

void mlir::attn::nvvm::releaseIncrement(OpBuilder &b, Location loc,
                                        Value counters, Value word) {
  counterAtomic(b, loc, counters, word,
                "red.release.gpu.global.add.u32 [$0], 1;");
}

void mlir::attn::nvvm::waitForCount(OpBuilder &b, Location loc, Value counters,
                                    Value word, Value expected,
                                    int64_t mostPolls) {
  Value pointer = elementPointer(b, loc, counters, word, 1);
  Type index = b.getIndexType();
  Value noPolls = arith::ConstantIndexOp::create(b, loc, 0);
  auto wait = scf::WhileOp::create(b, loc, index, noPolls);
  OpBuilder::InsertionGuard guard(b);
  Block *before = b.createBlock(&wait.getBefore(), {}, index, loc);
  Value count =
      LLVM::LoadOp::create(b, loc, b.getI32Type(), pointer, /*alignment=*/4,
                           /*isVolatile=*/false, /*isNonTemporal=*/false,
                           /*isInvariant=*/false, /*isInvariantGroup=*/false,
                           LLVM::AtomicOrdering::acquire, "device");
  Value waiting =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, count, expected);
  scf::ConditionOp::create(b, loc, waiting, before->getArgument(0));
  Block *after = b.createBlock(&wait.getAfter(), {}, index, loc);
  Value polls = after->getArgument(0);
  Value tooMany =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, polls,
                            arith::ConstantIndexOp::create(b, loc, mostPolls));
  auto trap = scf::IfOp::create(b, loc, tooMany, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard trapping(b);
    b.setInsertionPoint(trap.thenBlock()->getTerminator());
    LLVM::Trap::create(b, loc);
  }
  NVVM::NanosleepOp::create(b, loc,
                            arith::ConstantIntOp::create(b, loc, 32, 32));
  scf::YieldOp::create(
      b, loc,
      ValueRange{arith::AddIOp::create(
          b, loc, polls, arith::ConstantIndexOp::create(b, loc, 1))});
}

Value mlir::attn::nvvm::relaxedFetchAdd(OpBuilder &b, Location loc,
                                        Value counters, Value word) {
  Value one = arith::ConstantIntOp::create(b, loc, 1, 32);
  return LLVM::AtomicRMWOp::create(
      b, loc, LLVM::AtomicBinOp::add, elementPointer(b, loc, counters, word, 1),
      one, LLVM::AtomicOrdering::monotonic, "device");
}

Value mlir::attn::nvvm::acquireReleaseFetchAdd(OpBuilder &b, Location loc,
                                               Value counters, Value word,
                                               Value amount) {
  return counterAtomic(b, loc, counters, word,
                       amount ? "atom.acq_rel.gpu.global.add.u32 $0, [$1], $2;"
                              : "atom.acq_rel.gpu.global.add.u32 $0, [$1], 1;",
                       /*returnsCount=*/true, amount);
}
