//===- WarpgroupMma.cpp - Hopper wgmma for the attention kernel -----------===//

#include "WarpgroupMma.h"

#include "AttnDialect/Target/NVVM/InlinePtx.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::attn;

Value mma::stageAddress(OpBuilder &b, Location loc, Value stage, Value buffer) {
  auto type = cast<MemRefType>(stage.getType());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, b.getIndexType(), stage);
  if (!buffer)
    return address;
  int64_t bufferBytes = type.getNumElements() / type.getDimSize(0) * 2;
  return arith::AddIOp::create(
      b, loc, address,
      arith::MulIOp::create(
          b, loc, buffer, arith::ConstantIndexOp::create(b, loc, bufferBytes)));
}

Value mma::swizzleAlignedBase(OpBuilder &b, Location loc, Value shared) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, b.getIndexType(), shared);
  Value alignment = arith::ConstantIndexOp::create(b, loc, kSwizzleAlignment);
  Value misaligned = arith::RemUIOp::create(b, loc, address, alignment);
  return arith::RemUIOp::create(
      b, loc, arith::SubIOp::create(b, loc, alignment, misaligned), alignment);
}

Value mma::swizzledColumn(OpBuilder &b, Location loc, Swizzle swizzle,
                          Value row, Value col) {
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value chunk = arith::DivUIOp::create(b, loc, col, index(8));
  if (swizzle.rowsPerPhase() > 1)
    row = arith::DivUIOp::create(b, loc, row, index(swizzle.rowsPerPhase()));
  Value phase = arith::RemUIOp::create(b, loc, row, index(swizzle.phases()));
  Value swizzled = arith::XOrIOp::create(b, loc, chunk, phase);
  return arith::MulIOp::create(b, loc, swizzled, index(8));
}

Value mma::swizzledDescriptor(OpBuilder &b, Location loc, Swizzle swizzle,
                              Value address, int64_t leadingBytes,
                              int64_t strideBytes) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v);
  };
  // Bits 0-13: the address / 16; 16-29 and 32-45: the leading and stride
  // byte offsets / 16; 62-63: the layout.
  Value start = arith::IndexCastOp::create(b, loc, i64, address);
  start = arith::ShRUIOp::create(b, loc, start, constant(4));
  start = arith::AndIOp::create(b, loc, start, constant(0x3fff));
  int64_t fields = ((leadingBytes >> 4) & 0x3fff) << 16 |
                   ((strideBytes >> 4) & 0x3fff) << 32 |
                   swizzle.descriptorLayout() << 62;
  return arith::OrIOp::create(b, loc, start, constant(fields));
}

Value mma::advanceDescriptor(OpBuilder &b, Location loc, Value descriptor,
                             int64_t bytes) {
  if (bytes == 0)
    return descriptor;
  return arith::AddIOp::create(
      b, loc, descriptor,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), bytes >> 4));
}

/// "{$first, ..., $first + count - 1}".
static std::string registerList(int64_t first, int64_t count) {
  SmallVector<std::string> names;
  for (int64_t i = 0; i < count; ++i)
    names.push_back("$" + std::to_string(first + i));
  return "{" + llvm::join(names, ", ") + "}";
}

SmallVector<Value> mma::warpgroupMma(OpBuilder &b, Location loc, Type element,
                                     ArrayRef<Value> acc, ValueRange a,
                                     Value bDescriptor, bool transposeB,
                                     bool accumulate) {
  int64_t values = acc.size();
  int64_t n = 2 * values;
  bool registersA = a.size() == 4;
  StringRef type = element.isBF16() ? "bf16" : "f16";
  // Operands: outputs 0..values-1, the tied inputs, then A, B and scale-d.
  int64_t aFirst = 2 * values;
  int64_t bIndex = aFirst + a.size();
  std::string aOperand =
      registersA ? registerList(aFirst, 4) : "$" + std::to_string(aFirst);
  // Register A has no transpose flag; a descriptor A is K-major.
  std::string flags = registersA ? std::to_string(transposeB)
                                 : "0, " + std::to_string(transposeB);
  std::string ptx =
      "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(bIndex + 1) +
      ", 0;\nwgmma.mma_async.sync.aligned.m64n" + std::to_string(n) +
      "k16.f32." + type.str() + "." + type.str() + " " +
      registerList(0, values) + ", " + aOperand + ", $" +
      std::to_string(bIndex) + ", p, 1, 1, " + flags + ";\n}";
  SmallVector<Value> inputs(a.begin(), a.end());
  inputs.push_back(bDescriptor);
  inputs.push_back(
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), accumulate));
  return nvvm::inlinePtxInPlace(b, loc, ptx, acc, inputs);
}

SmallVector<Value> mma::warpgroupWait(OpBuilder &b, Location loc,
                                      ArrayRef<Value> values, int64_t pending,
                                      ValueRange inputs) {
  return nvvm::inlinePtxInPlace(
      b, loc, "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
      values, inputs);
}
