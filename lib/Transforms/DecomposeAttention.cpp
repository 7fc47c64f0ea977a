//===- DecomposeAttention.cpp - attn.attention to the flash loop ----------===//
//
// The attention part of attn-decompose: each attn.attention becomes its
// flash loop (FlashLoop.h) with the op's kv-tile, region checks and
// kv-block schedule, leaving attn.online_softmax steps.
//
//===----------------------------------------------------------------------===//

#include "AttnDialect/Transforms/FlashLoop.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::attn {
#define GEN_PASS_DEF_DECOMPOSEATTENTION
#include "AttnDialect/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

bool mlir::attn::inGpuKernel(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<gpu::LaunchOp, gpu::GPUFuncOp>(parent))
      return true;
    if (auto forall = dyn_cast<scf::ForallOp>(parent))
      if (std::optional<ArrayAttr> mapping = forall.getMapping())
        if (llvm::any_of(*mapping, [](Attribute attr) {
              return isa<gpu::GPUBlockMappingAttr, gpu::GPUThreadMappingAttr>(
                  attr);
            }))
          return true;
  }
  return false;
}

/// Declares attnReportRegionError in `root`, a module, once. A pass nested
/// deeper must not add symbols to its parent (other threads read it).
LogicalResult mlir::attn::declareRegionErrorFunction(Operation *root,
                                                     StringRef passName) {
  auto module = dyn_cast<ModuleOp>(root);
  if (!module)
    return root->emitError() << passName
                             << ": bounds-checks on the host must run on a "
                                "module, which gets a declaration of "
                             << kRegionErrorFunction;
  if (module.lookupSymbol(kRegionErrorFunction))
    return success();
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  Type i64 = builder.getI64Type();
  auto decl = func::FuncOp::create(
      builder, module.getLoc(), kRegionErrorFunction,
      builder.getFunctionType(SmallVector<Type>(6, i64), {}));
  decl.setPrivate();
  return success();
}

LogicalResult mlir::attn::decomposeAttentionOps(Operation *root,
                                                int64_t defaultKvTile,
                                                bool boundsChecks,
                                                StringRef passName) {
  if (defaultKvTile <= 0)
    return root->emitError()
           << passName << ": kv-tile must be positive, got " << defaultKvTile;
  SmallVector<AttentionOp> ops;
  root->walk([&](AttentionOp op) { ops.push_back(op); });
  if (boundsChecks && llvm::any_of(ops, [](AttentionOp op) {
        return (op.hasScoreMod() || op.hasMaskMod()) && !inGpuKernel(op);
      }))
    if (failed(declareRegionErrorFunction(root, passName)))
      return failure();
  for (AttentionOp op : ops) {
    FlashLoopOptions options;
    options.kvTile = defaultKvTile;
    if (KernelAttr kernel = op.getKernelAttr())
      options.kvTile = kernel.getKvTile();
    options.checks = !boundsChecks     ? RegionChecks::None
                     : inGpuKernel(op) ? RegionChecks::DeviceTrap
                                       : RegionChecks::HostReport;
    FailureOr<KvBlockSchedule> schedule = KvBlockSchedule::forOp(op);
    if (failed(schedule))
      return failure();
    options.schedule = *schedule;
    IRRewriter rewriter(op->getContext());
    rewriter.setInsertionPoint(op);
    Value blockMask = op.getBlockMask();
    rewriter.replaceOp(op, buildFlashLoop(rewriter, op, options));
    // The lists are read as tensors now; the block mask value is dead.
    if (Operation *make = blockMask ? blockMask.getDefiningOp() : nullptr)
      if (make->use_empty())
        rewriter.eraseOp(make);
  }
  return success();
}

namespace {
struct DecomposeAttentionPass
    : attn::impl::DecomposeAttentionBase<DecomposeAttentionPass> {
  using DecomposeAttentionBase::DecomposeAttentionBase;

  void runOnOperation() override {
    if (failed(decomposeAttentionOps(getOperation(), kvTile, boundsChecks,
                                     getArgument())))
      signalPassFailure();
  }
};
} // namespace
