//===- Reference.cpp ------------------------------------------------------===//

#include "Reference.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace attn_run;

namespace {

unsigned bitWidth(Type type) {
  if (type.isIndex())
    return 64;
  return type.getIntOrFloatBitWidth();
}

/// The value as the unsigned integer of its width.
uint64_t asUnsigned(double value, Type type) {
  auto bits = static_cast<uint64_t>(static_cast<int64_t>(value));
  unsigned width = bitWidth(type);
  return width >= 64 ? bits : bits & ((uint64_t(1) << width) - 1);
}

bool compareInt(arith::CmpIPredicate predicate, double a, double b, Type type) {
  auto sa = static_cast<int64_t>(a), sb = static_cast<int64_t>(b);
  uint64_t ua = asUnsigned(a, type), ub = asUnsigned(b, type);
  switch (predicate) {
  case arith::CmpIPredicate::eq:
    return sa == sb;
  case arith::CmpIPredicate::ne:
    return sa != sb;
  case arith::CmpIPredicate::slt:
    return sa < sb;
  case arith::CmpIPredicate::sle:
    return sa <= sb;
  case arith::CmpIPredicate::sgt:
    return sa > sb;
  case arith::CmpIPredicate::sge:
    return sa >= sb;
  case arith::CmpIPredicate::ult:
    return ua < ub;
  case arith::CmpIPredicate::ule:
    return ua <= ub;
  case arith::CmpIPredicate::ugt:
    return ua > ub;
  case arith::CmpIPredicate::uge:
    return ua >= ub;
  }
  return false;
}

bool compareFloat(arith::CmpFPredicate predicate, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  switch (predicate) {
  case arith::CmpFPredicate::AlwaysFalse:
    return false;
  case arith::CmpFPredicate::AlwaysTrue:
    return true;
  case arith::CmpFPredicate::OEQ:
    return !unordered && a == b;
  case arith::CmpFPredicate::OGT:
    return !unordered && a > b;
  case arith::CmpFPredicate::OGE:
    return !unordered && a >= b;
  case arith::CmpFPredicate::OLT:
    return !unordered && a < b;
  case arith::CmpFPredicate::OLE:
    return !unordered && a <= b;
  case arith::CmpFPredicate::ONE:
    return !unordered && a != b;
  case arith::CmpFPredicate::ORD:
    return !unordered;
  case arith::CmpFPredicate::UEQ:
    return unordered || a == b;
  case arith::CmpFPredicate::UGT:
    return unordered || a > b;
  case arith::CmpFPredicate::UGE:
    return unordered || a >= b;
  case arith::CmpFPredicate::ULT:
    return unordered || a < b;
  case arith::CmpFPredicate::ULE:
    return unordered || a <= b;
  case arith::CmpFPredicate::UNE:
    return unordered || a != b;
  case arith::CmpFPredicate::UNO:
    return unordered;
  }
  return false;
}

/// Wraps an integer result to its type's width (two's complement).
double wrapInt(int64_t value, Type type) {
  unsigned width = bitWidth(type);
  if (width >= 64)
    return static_cast<double>(value);
  if (width == 1)
    return static_cast<double>(value & 1);
  int64_t shift = 64 - width;
  return static_cast<double>(
      static_cast<int64_t>(static_cast<uint64_t>(value) << shift) >> shift);
}

bool isSupported(Operation *op) {
  return isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp,
             arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
             arith::FloorDivSIOp, arith::CeilDivSIOp, arith::MinSIOp,
             arith::MaxSIOp, arith::MinUIOp, arith::MaxUIOp, arith::AndIOp,
             arith::OrIOp, arith::XOrIOp, arith::CmpIOp, arith::CmpFOp,
             arith::SelectOp, arith::IndexCastOp, arith::IndexCastUIOp,
             arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp, arith::ExtFOp,
             arith::TruncFOp, arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp,
             arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, math::TanhOp, math::ExpOp,
             math::Exp2Op, math::LogOp, math::AbsFOp, math::SqrtOp,
             math::AbsIOp, math::FmaOp, tensor::ExtractOp>(op);
}

} // namespace

llvm::Error RegionInterpreter::check(Region &region) const {
  for (Operation &op : region.front().without_terminator()) {
    if (!isSupported(&op))
      return llvm::createStringError(
          "the reference cannot evaluate '%s' in a region; it knows arith, "
          "math and tensor.extract of captured tensors",
          op.getName().getStringRef().str().c_str());
    if (auto extract = dyn_cast<tensor::ExtractOp>(op))
      if (!captures.count(extract.getTensor()))
        return llvm::createStringError(
            "tensor.extract in a region must read a function argument");
  }
  return llvm::Error::success();
}

double RegionInterpreter::run(Region &region, ArrayRef<double> args) const {
  llvm::DenseMap<Value, double> values;
  Block &block = region.front();
  for (auto [arg, value] : llvm::zip_equal(block.getArguments(), args))
    values[arg] = value;
  // Values from above the region: constants hoisted out of it.
  auto get = [&](Value v) -> double {
    auto it = values.find(v);
    if (it != values.end())
      return it->second;
    if (auto constant = v.getDefiningOp<arith::ConstantOp>()) {
      Attribute attr = constant.getValue();
      if (auto f = dyn_cast<FloatAttr>(attr))
        return f.getValueAsDouble();
      if (auto i = dyn_cast<IntegerAttr>(attr))
        return static_cast<double>(i.getValue().getSExtValue());
    }
    return std::numeric_limits<double>::quiet_NaN();
  };

  for (Operation &op : block.without_terminator()) {
    double r = 0;
    Type type = op.getNumResults() ? op.getResult(0).getType() : Type();
    auto a = [&] { return get(op.getOperand(0)); };
    auto b = [&] { return get(op.getOperand(1)); };
    auto ia = [&] { return static_cast<int64_t>(a()); };
    auto ib = [&] { return static_cast<int64_t>(b()); };
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](arith::ConstantOp c) { r = get(c.getResult()); })
        .Case([&](arith::AddIOp) { r = wrapInt(ia() + ib(), type); })
        .Case([&](arith::SubIOp) { r = wrapInt(ia() - ib(), type); })
        .Case([&](arith::MulIOp) { r = wrapInt(ia() * ib(), type); })
        .Case(
            [&](arith::DivSIOp) { r = ib() ? wrapInt(ia() / ib(), type) : 0; })
        .Case([&](arith::DivUIOp) {
          uint64_t d = asUnsigned(b(), type);
          r = d ? static_cast<double>(asUnsigned(a(), type) / d) : 0;
        })
        .Case(
            [&](arith::RemSIOp) { r = ib() ? wrapInt(ia() % ib(), type) : 0; })
        .Case([&](arith::RemUIOp) {
          uint64_t d = asUnsigned(b(), type);
          r = d ? static_cast<double>(asUnsigned(a(), type) % d) : 0;
        })
        .Case(
            [&](arith::FloorDivSIOp) { r = ib() ? std::floor(a() / b()) : 0; })
        .Case([&](arith::CeilDivSIOp) { r = ib() ? std::ceil(a() / b()) : 0; })
        .Case([&](arith::MinSIOp) { r = std::min(a(), b()); })
        .Case([&](arith::MaxSIOp) { r = std::max(a(), b()); })
        .Case([&](arith::MinUIOp) {
          r = asUnsigned(a(), type) < asUnsigned(b(), type) ? a() : b();
        })
        .Case([&](arith::MaxUIOp) {
          r = asUnsigned(a(), type) > asUnsigned(b(), type) ? a() : b();
        })
        .Case([&](arith::AndIOp) { r = wrapInt(ia() & ib(), type); })
        .Case([&](arith::OrIOp) { r = wrapInt(ia() | ib(), type); })
        .Case([&](arith::XOrIOp) { r = wrapInt(ia() ^ ib(), type); })
        .Case([&](arith::CmpIOp c) {
          r = compareInt(c.getPredicate(), a(), b(), c.getLhs().getType());
        })
        .Case([&](arith::CmpFOp c) {
          r = compareFloat(c.getPredicate(), a(), b());
        })
        .Case([&](arith::SelectOp) {
          r = a() != 0 ? b() : get(op.getOperand(2));
        })
        .Case<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(
            [&](Operation *) { r = wrapInt(ia(), type); })
        .Case<arith::IndexCastUIOp, arith::ExtUIOp>([&](Operation *) {
          r = static_cast<double>(asUnsigned(a(), op.getOperand(0).getType()));
        })
        .Case([&](arith::SIToFPOp) { r = a(); })
        .Case([&](arith::UIToFPOp) {
          r = static_cast<double>(asUnsigned(a(), op.getOperand(0).getType()));
        })
        .Case([&](arith::FPToSIOp) { r = wrapInt(std::trunc(a()), type); })
        .Case<arith::ExtFOp, arith::TruncFOp>([&](Operation *) { r = a(); })
        .Case([&](arith::AddFOp) { r = a() + b(); })
        .Case([&](arith::SubFOp) { r = a() - b(); })
        .Case([&](arith::MulFOp) { r = a() * b(); })
        .Case([&](arith::DivFOp) { r = a() / b(); })
        .Case([&](arith::NegFOp) { r = -a(); })
        .Case<arith::MaximumFOp, arith::MaxNumFOp>(
            [&](Operation *) { r = std::fmax(a(), b()); })
        .Case<arith::MinimumFOp, arith::MinNumFOp>(
            [&](Operation *) { r = std::fmin(a(), b()); })
        .Case([&](math::TanhOp) { r = std::tanh(a()); })
        .Case([&](math::ExpOp) { r = std::exp(a()); })
        .Case([&](math::Exp2Op) { r = std::exp2(a()); })
        .Case([&](math::LogOp) { r = std::log(a()); })
        .Case([&](math::AbsFOp) { r = std::fabs(a()); })
        .Case([&](math::SqrtOp) { r = std::sqrt(a()); })
        .Case([&](math::AbsIOp) { r = std::fabs(a()); })
        .Case([&](math::FmaOp) { r = a() * b() + get(op.getOperand(2)); })
        .Case([&](tensor::ExtractOp extract) {
          const HostTensor *tensor = captures.lookup(extract.getTensor());
          int64_t linear = 0;
          for (auto [i, index] : llvm::enumerate(extract.getIndices())) {
            auto position = static_cast<int64_t>(get(index));
            int64_t size = tensor->shape()[i];
            // Out-of-bounds reads are undefined; the reference clamps so
            // that it never reads outside the buffer.
            position =
                std::min<int64_t>(std::max<int64_t>(position, 0), size - 1);
            linear = linear * size + position;
          }
          r = tensor->get(linear);
        });
    values[op.getResult(0)] = r;
  }
  return get(cast<mlir::attn::YieldOp>(block.getTerminator()).getValues()[0]);
}

ReferenceResult attn_run::referenceAttention(mlir::attn::AttentionOp op,
                                             const RegionInterpreter &interp,
                                             const HostTensor &q,
                                             const HostTensor &k,
                                             const HostTensor &v) {
  int64_t batches = q.shape()[0], heads = q.shape()[1], rows = q.shape()[2],
          d = q.shape()[3];
  int64_t kvHeads = k.shape()[1], n = k.shape()[2], dv = v.shape()[3];
  int64_t group = heads / kvHeads;
  double scale = op.getScaleValue();
  bool causal = op.getCausal();
  double negInf = -std::numeric_limits<double>::infinity();

  // Decode the inputs once; the loops below touch each element many times.
  auto decode = [](const HostTensor &t) {
    std::vector<double> values(t.numElements());
    for (int64_t i = 0; i < t.numElements(); ++i)
      values[i] = t.get(i);
    return values;
  };
  std::vector<double> qs = decode(q), ks = decode(k), vs = decode(v);

  ReferenceResult result;
  result.output.assign(batches * heads * rows * dv, 0.0);
  result.logsumexp.assign(batches * heads * rows, negInf);
  std::vector<double> scores(n);
  std::vector<char> keep(n);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < rows; ++i) {
        double max = negInf;
        for (int64_t j = 0; j < n; ++j) {
          bool visible = !causal || j <= i;
          if (visible && op.hasMaskMod())
            visible = interp.run(op.getMaskMod(), {double(b), double(h),
                                                   double(i), double(j)}) != 0;
          keep[j] = visible;
          if (!visible)
            continue;
          ++result.visiblePairs;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c)
            dot += qs[((b * heads + h) * rows + i) * d + c] *
                   ks[((b * kvHeads + hk) * n + j) * d + c];
          double s = scale * dot;
          if (op.hasScoreMod())
            s = interp.run(op.getScoreMod(),
                           {s, double(b), double(h), double(i), double(j)});
          scores[j] = s;
          max = std::max(max, s);
        }
        if (max == negInf)
          continue; // fully masked row: output 0, logsumexp -inf
        double sum = 0;
        for (int64_t j = 0; j < n; ++j)
          if (keep[j])
            sum += std::exp(scores[j] - max);
        double *out = &result.output[((b * heads + h) * rows + i) * dv];
        for (int64_t j = 0; j < n; ++j) {
          if (!keep[j])
            continue;
          double p = std::exp(scores[j] - max) / sum;
          for (int64_t c = 0; c < dv; ++c)
            out[c] += p * vs[((b * kvHeads + hk) * n + j) * dv + c];
        }
        result.logsumexp[(b * heads + h) * rows + i] = max + std::log(sum);
      }
    }
  return result;
}
