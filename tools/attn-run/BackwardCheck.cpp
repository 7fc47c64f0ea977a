//===- BackwardCheck.cpp - attn-run's check of attn.attention_grad --------===//
//
// Gives each argument of the function a role (the forward's Q, K, V, its
// output and logsumexp, the output's gradient, the three gradients, a wrt
// tensor's gradient, or a capture of the regions), fills Q, K, V and dO at
// random and the output and logsumexp from the float64 forward, runs the
// function on the CPU or the GPU, and compares dQ, dK, dV and the wrt
// tensors' gradients with the float64 backward (AttnRuntime/Reference.h).
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "Reference.h"

#include "AttnRuntime/Reference.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <random>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;

namespace {

/// The function's arguments by role: the op's operands (Q, K, V, O, dO, L,
/// dQ, dK, dV), the wrt tensors (captures too) with their gradients, and
/// captures (every other argument).
struct GradRoles {
  static constexpr unsigned kCount = 9;
  unsigned of[kCount];
  enum Role { Q, K, V, Out, GradOut, Lse, DQ, DK, DV };
  std::vector<unsigned> wrt, wrtGrads;

  std::optional<unsigned> roleOf(unsigned arg) const {
    for (unsigned r = 0; r < kCount; ++r)
      if (of[r] == arg)
        return r;
    return std::nullopt;
  }
  /// The wrt tensor whose gradient argument `arg` is.
  std::optional<size_t> wrtGradOf(unsigned arg) const {
    for (size_t w = 0; w < wrtGrads.size(); ++w)
      if (wrtGrads[w] == arg)
        return w;
    return std::nullopt;
  }
  bool isCapture(unsigned arg) const { return !roleOf(arg) && !wrtGradOf(arg); }
};

const char *const kRoleNames[] = {
    "query", "key", "value", "output", "grad_output", "logsumexp",
    "dQ",    "dK",  "dV"};

std::pair<func::FuncOp, attn::AttentionGradOp> findGrad(ModuleOp module,
                                                        StringRef entry) {
  func::FuncOp func;
  attn::AttentionGradOp op;
  module.walk([&](attn::AttentionGradOp found) {
    auto parent = found->getParentOfType<func::FuncOp>();
    if (!op && parent && (entry.empty() || parent.getName() == entry)) {
      op = found;
      func = parent;
    }
  });
  if (!op)
    fail(entry.empty()
             ? "the input has no attn.attention_grad inside a func.func"
             : "the input has no func.func @" + entry +
                   " holding an attn.attention_grad");
  return {func, op};
}

GradRoles rolesOf(func::FuncOp func, attn::AttentionGradOp op) {
  GradRoles roles;
  auto argumentOf = [&](Value operand, const llvm::Twine &what) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner() != &func.getBody().front())
      fail("the " + what +
           " of the attn.attention_grad must be an argument "
           "of @" +
           func.getName());
    return arg.getArgNumber();
  };
  Value fixed[] = {op.getQuery(),      op.getKey(),        op.getValue(),
                   op.getOutput(),     op.getGradOutput(), op.getLogsumexp(),
                   op.getOutputs()[0], op.getOutputs()[1], op.getOutputs()[2]};
  for (auto [r, operand] : llvm::enumerate(fixed))
    roles.of[r] = argumentOf(operand, kRoleNames[r]);
  for (auto [w, operand] : llvm::enumerate(op.getWrt())) {
    roles.wrt.push_back(argumentOf(operand, "wrt #" + llvm::Twine(w)));
    roles.wrtGrads.push_back(argumentOf(op.getOutputs()[3 + w],
                                        "gradient of wrt #" + llvm::Twine(w)));
  }
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !kindOf(type.getElementType()))
      fail("argument #" + llvm::Twine(arg.getArgNumber()) + " of @" +
           func.getName() +
           " is not a ranked tensor of f32/f16/bf16/i32/i64/index");
  }
  return roles;
}

using Problem = AttentionCase;

std::vector<int64_t> shapeOf(BlockArgument arg, const GradRoles &roles,
                             const Problem &p) {
  // A wrt tensor's gradient is shaped as the tensor.
  if (std::optional<size_t> w = roles.wrtGradOf(arg.getArgNumber()))
    arg = cast<func::FuncOp>(arg.getOwner()->getParentOp())
              .getArgument(roles.wrt[*w]);
  std::optional<unsigned> role = roles.roleOf(arg.getArgNumber());
  if (!role) {
    // A capture: dynamic dims cover any b, h, q or kv index.
    std::vector<int64_t> shape;
    for (int64_t size : cast<RankedTensorType>(arg.getType()).getShape())
      shape.push_back(ShapedType::isDynamic(size)
                          ? std::max({p.b, p.hq, p.m, p.n})
                          : size);
    return shape;
  }
  switch (*role) {
  case GradRoles::Q:
  case GradRoles::DQ:
    return {p.b, p.hq, p.m, p.d};
  case GradRoles::K:
  case GradRoles::DK:
    return {p.b, p.hkv, p.n, p.d};
  case GradRoles::V:
  case GradRoles::DV:
    return {p.b, p.hkv, p.n, p.dv};
  case GradRoles::Lse:
    return {p.b, p.hq, p.m};
  default: // the output and its gradient
    return {p.b, p.hq, p.m, p.dv};
  }
}

} // namespace

int attn_run::runAttentionGrad(ModuleOp module, const AttentionSweep &sweep,
                               CompileFn compile) {
  auto [func, op] = findGrad(module, sweep.entry);
  auto qType = op.getQuery().getType();
  GradRoles roles = rolesOf(func, op);
  auto isCapture = [&](unsigned i) { return roles.isCapture(i); };
  SmallVector<bool> runStarts = runStartFills(func, isCapture);
  llvm::Expected<RegionPrograms> programs =
      regionPrograms(func, op.getScoreMod(), op.getMaskMod(), isCapture);
  if (!programs)
    fail(llvm::toString(programs.takeError()));

  std::vector<Problem> problems =
      sweepCases(sweep, qType, op.getKey().getType(), op.getHeadDim(),
                 op.getValueHeadDim());
  for (const Problem &p : problems) {
    Footprint footprint(caseName(p));
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      std::vector<int64_t> shape = shapeOf(arg, roles, p);
      if (static_cast<int64_t>(shape.size()) != type.getRank())
        fail("argument #" + llvm::Twine(arg.getArgNumber()) + " has rank " +
             llvm::Twine(type.getRank()) + ", but its role needs " +
             llvm::Twine(shape.size()));
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (!ShapedType::isDynamic(size) && size != shape[d])
          fail("argument #" + llvm::Twine(arg.getArgNumber()) +
               " has static dim " + llvm::Twine(d) + " = " +
               llvm::Twine(size) + ", but this case needs " +
               llvm::Twine(shape[d]));
      // The buffer, and the reference's float64 copy of it.
      footprint.add("argument #" + llvm::Twine(arg.getArgNumber()), shape,
                    elementBytes(*kindOf(type.getElementType())) +
                        sizeof(double));
    }
    footprint.checkFits();
  }

  double compileMs = 0;
  std::unique_ptr<attn::CpuKernel> kernel;
  std::unique_ptr<GpuTarget> gpu = compile(func, kernel, compileMs);
  std::string where = gpu ? "gpu (" + gpu->chip() + ")" : "cpu";

  // On the GPU, P and dS are rounded to the input type as mma operands.
  ElementKind kind = *kindOf(qType.getElementType());
  double allowed =
      sweep.tolerance > 0
          ? sweep.tolerance
          : attentionTolerance(kind, /*roundedProbabilities=*/gpu != nullptr);
  // A wrt tensor's gradient is f32 computed in f32 from the inputs as
  // given: the f32 bound, whatever their type.
  double allowedWrt = sweep.tolerance > 0
                          ? sweep.tolerance
                          : attentionTolerance(ElementKind::F32, false);
  std::string typeName;
  llvm::raw_string_ostream(typeName) << qType.getElementType();
  if (!sweep.json)
    llvm::outs() << llvm::formatv(
        "attn-run: target={9} @{0} backward dtype={1} D={2} Dv={3}{4}{5}{6}, "
        "compiled once in {7:f1} ms{8}\n",
        func.getName(), typeName, op.getHeadDim(), op.getValueHeadDim(),
        op.getCausal() ? " causal" : "", op.hasMaskMod() ? " mask_mod" : "",
        op.hasScoreMod() ? " score_mod" : "", compileMs,
        roles.wrt.empty()
            ? std::string()
            : llvm::formatv("; {0} wrt gradients, tolerance {1:e} of the sum "
                            "of their terms' sizes",
                            roles.wrt.size(), allowedWrt)
                  .str(),
        where);

  std::mt19937_64 rng(sweep.seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  unsigned cases = 0, failures = 0;
  double worst = 0;
  for (const Problem &p : problems) {
    std::vector<std::unique_ptr<HostTensor>> buffers;
    const HostTensor *ids = nullptr;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto type = cast<RankedTensorType>(arg.getType());
      ElementKind argKind = *kindOf(type.getElementType());
      auto buffer =
          std::make_unique<HostTensor>(argKind, shapeOf(arg, roles, p));
      std::optional<unsigned> role = roles.roleOf(i);
      if (roles.wrtGradOf(i)) {
        buffer->poison();
      } else if (!role) {
        fillCapture(*buffer, rng, runStarts[i] ? ids : nullptr);
        if (!isFloat(argKind) && !runStarts[i])
          ids = buffer.get();
      } else if (*role <= GradRoles::V || *role == GradRoles::GradOut) {
        for (int64_t e = 0; e < buffer->numElements(); ++e)
          buffer->set(e, uniform(rng));
      } else {
        buffer->poison();
      }
      buffers.push_back(std::move(buffer));
    }
    auto buffer = [&](GradRoles::Role role) -> HostTensor & {
      return *buffers[roles.of[role]];
    };

    ReferenceAttention problem;
    problem.q = &buffer(GradRoles::Q);
    problem.k = &buffer(GradRoles::K);
    problem.v = &buffer(GradRoles::V);
    problem.scale = op.getScaleValue();
    problem.causal = op.getCausal();
    problem.maskMod = programs->maskMod ? &*programs->maskMod : nullptr;
    problem.scoreMod = programs->scoreMod ? &*programs->scoreMod : nullptr;
    for (auto &b : buffers)
      problem.arguments.push_back(b.get());
    // The forward's output and logsumexp, as a forward pass would store
    // them.
    attn_runtime::ReferenceResult forward;
    std::string error;
    if (!referenceAttention(problem, forward, error))
      fail("the reference: " + error);
    for (int64_t e = 0; e < buffer(GradRoles::Out).numElements(); ++e)
      buffer(GradRoles::Out).set(e, forward.output[e]);
    for (int64_t e = 0; e < buffer(GradRoles::Lse).numElements(); ++e)
      buffer(GradRoles::Lse).set(e, forward.logsumexp[e]);
    ReferenceGradients want;
    std::vector<int64_t> wrt(roles.wrt.begin(), roles.wrt.end());
    if (!referenceAttentionGrad(problem, buffer(GradRoles::Out),
                                buffer(GradRoles::GradOut), want, error, wrt))
      fail("the reference: " + error);

    double runMs;
    if (gpu) {
      llvm::Expected<double> ms = gpu->run(buffers);
      if (!ms)
        fail(caseName(p) + ": " + llvm::toString(ms.takeError()));
      runMs = *ms;
    } else {
      runMs = invoke(*kernel, buffers);
    }
    bool pass = true;
    std::string errors;
    const std::pair<GradRoles::Role, const std::vector<double> *> grads[] = {
        {GradRoles::DQ, &want.dq},
        {GradRoles::DK, &want.dk},
        {GradRoles::DV, &want.dv}};
    auto check = [&](const HostTensor &got, const std::vector<double> &ref,
                     const std::string &name,
                     const std::vector<double> *magnitudes = nullptr) {
      bool finite;
      double err = relativeError(got, ref, finite, magnitudes);
      pass &= finite && err <= (magnitudes ? allowedWrt : allowed);
      worst = worseError(worst, err);
      errors += llvm::formatv(", {0} error {1:e}", name, err);
    };
    for (const auto &[role, reference] : grads)
      check(buffer(role), *reference, kRoleNames[role]);
    for (auto [w, arg] : llvm::enumerate(roles.wrtGrads))
      check(*buffers[arg], want.wrt[w], llvm::formatv("d(wrt #{0})", w).str(),
            &want.wrtMagnitudes[w]);
    ++cases;
    failures += !pass;
    if (sweep.json)
      llvm::outs() << llvm::formatv(
          "{{\"B\": {0}, \"Hq\": {1}, \"Hkv\": {2}, \"M\": {3}, \"N\": {4}, "
          "\"run_ms\": {5:f3}, \"pass\": {6}}\n",
          p.b, p.hq, p.hkv, p.m, p.n, runMs, pass ? "true" : "false");
    else
      llvm::outs() << llvm::formatv(
          "  B={0} Hq={1} Hkv={2} M={3} N={4}: run {5:f3} ms{6}: {7}\n", p.b,
          p.hq, p.hkv, p.m, p.n, runMs, errors, pass ? "PASS" : "FAIL");
  }
  return summarize(sweep.json, cases, failures, worst, allowed);
}
