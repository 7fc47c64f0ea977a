//===- AttentionCheck.cpp - attn-run's check of attn.attention ------------===//
//
// Finds the op, gives each argument of its function a role (Q, K, V, the
// output, the logsumexp, or a capture of its regions), and runs every case
// of the sweep on fresh inputs against a float64 reference: the CPU's, which
// interprets the regions, or for large problems without regions the GPU's
// plain kernel.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"
#include "Reference.h"

#include "AttnRuntime/GpuReference.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <random>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;

namespace {

using Problem = AttentionCase;

/// The function's arguments by role: the op's operands, and captures (every
/// other argument, read by its regions).
struct Roles {
  unsigned q, k, v, out;
  std::optional<unsigned> lse;

  bool isCapture(unsigned i) const {
    return i != q && i != k && i != v && i != out && !(lse && i == *lse);
  }
  const char *name(unsigned i) const {
    return i == q             ? "query"
           : i == k           ? "key"
           : i == v           ? "value"
           : i == out         ? "output"
           : lse && i == *lse ? "logsumexp"
                              : "captured";
  }
};

/// The function to run (@entry, else the first) and its one attn.attention.
std::pair<func::FuncOp, attn::AttentionOp> findAttention(ModuleOp module,
                                                         StringRef entry) {
  func::FuncOp func;
  attn::AttentionOp op;
  module.walk([&](attn::AttentionOp found) {
    auto parent = found->getParentOfType<func::FuncOp>();
    if (!op && parent && (entry.empty() || parent.getName() == entry)) {
      op = found;
      func = parent;
    }
  });
  if (!op || !func)
    fail(entry.empty() ? "the input has no attn.attention inside a func.func"
                       : "the input has no func.func @" + entry +
                             " holding an attn.attention");
  unsigned numAttention = 0;
  func.walk([&](attn::AttentionOp) { ++numAttention; });
  if (numAttention != 1)
    fail("@" + func.getName() + " holds " + llvm::Twine(numAttention) +
         " attn.attention ops; attn-run checks one at a time");
  if (!op.getOffsets().empty())
    fail("the attn.attention is already a tile (it has offsets); give "
         "attn-run the untiled op");
  return {func, op};
}

Roles rolesOf(func::FuncOp func, attn::AttentionOp op) {
  auto argIndex = [&](Value v, const char *role) -> unsigned {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &func.getBody().front())
      fail(llvm::Twine("the ") + role +
           " of the attn.attention must be an "
           "argument of @" +
           func.getName());
    return arg.getArgNumber();
  };
  Roles roles{argIndex(op.getQuery(), "query"), argIndex(op.getKey(), "key"),
              argIndex(op.getValue(), "value"),
              argIndex(op.getOutputs()[0], "output"), std::nullopt};
  if (Value lse = op.getLogsumexpInit())
    roles.lse = argIndex(lse, "logsumexp");
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !kindOf(type.getElementType()))
      fail("argument #" + llvm::Twine(arg.getArgNumber()) + " of @" +
           func.getName() +
           " is not a ranked tensor of f32/f16/bf16/i32/i64/index");
    // Random lists would not be the mask_mod's blocks: every case would
    // compare the kernel with a reference of another mask.
    for (Operation *user : arg.getUsers())
      if (isa<attn::MakeBlockMaskOp>(user))
        fail("argument #" + llvm::Twine(arg.getArgNumber()) + " of @" +
             func.getName() +
             " is a list of attn.make_block_mask: attn-run fills no "
             "block-mask lists; build the mask in the function with "
             "attn.create_block_mask");
  }
  return roles;
}

/// The programs of the op's regions; fails unless the reference can
/// evaluate them.
RegionPrograms programsOf(func::FuncOp func, attn::AttentionOp op,
                          const Roles &roles) {
  llvm::Expected<RegionPrograms> programs =
      regionPrograms(func, op, [&](unsigned i) { return roles.isCapture(i); });
  if (!programs)
    fail(llvm::toString(programs.takeError()));
  return std::move(*programs);
}

/// The shape of an argument's buffer in case `p`.
std::vector<int64_t> shapeOf(BlockArgument arg, const Roles &roles,
                             const Problem &p) {
  unsigned i = arg.getArgNumber();
  if (i == roles.q || i == roles.out)
    return {p.b, p.hq, p.m, i == roles.q ? p.d : p.dv};
  if (i == roles.k || i == roles.v)
    return {p.b, p.hkv, p.n, i == roles.k ? p.d : p.dv};
  if (roles.lse && i == *roles.lse)
    return {p.b, p.hq, p.m};
  // A capture: dynamic dims cover any b, h, q or kv index.
  std::vector<int64_t> shape;
  for (int64_t size : cast<RankedTensorType>(arg.getType()).getShape())
    shape.push_back(
        ShapedType::isDynamic(size) ? std::max({p.b, p.hq, p.m, p.n}) : size);
  return shape;
}

/// A case's host memory: its buffers, whose shapes are checked against the
/// arguments' static ones, and the reference's float64 copies.
Footprint footprintOf(func::FuncOp func, const Roles &roles, const Problem &p) {
  Footprint footprint(caseName(p));
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    unsigned i = arg.getArgNumber();
    std::vector<int64_t> shape = shapeOf(arg, roles, p);
    if (static_cast<int64_t>(shape.size()) != type.getRank())
      fail("argument #" + llvm::Twine(i) + " has rank " +
           llvm::Twine(type.getRank()) + ", but its role needs " +
           llvm::Twine(shape.size()));
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (!ShapedType::isDynamic(size) && size != shape[d])
        fail("argument #" + llvm::Twine(i) + " has static dim " +
             llvm::Twine(d) + " = " + llvm::Twine(size) +
             ", but this case needs " + llvm::Twine(shape[d]));
    footprint.add("argument #" + llvm::Twine(i) + " (" + roles.name(i) + ")",
                  shape, elementBytes(*kindOf(type.getElementType())));
  }
  // What referenceAttention allocates: float64 copies of Q, K, V, the
  // output and the logsumexp, and one row of scores.
  int64_t doubleBytes = sizeof(double);
  footprint.add("the reference's Q", {p.b, p.hq, p.m, p.d}, doubleBytes);
  footprint.add("the reference's K", {p.b, p.hkv, p.n, p.d}, doubleBytes);
  footprint.add("the reference's V", {p.b, p.hkv, p.n, p.dv}, doubleBytes);
  footprint.add("the reference's output", {p.b, p.hq, p.m, p.dv}, doubleBytes);
  footprint.add("the reference's logsumexp", {p.b, p.hq, p.m}, doubleBytes);
  footprint.add("the reference's scores", {p.n}, doubleBytes + 1);
  return footprint;
}

/// Fresh buffers for case `p`, one per argument (outputs poisoned).
std::vector<std::unique_ptr<HostTensor>>
freshInputs(func::FuncOp func, const Roles &roles, ArrayRef<bool> runStarts,
            const Problem &p, std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<std::unique_ptr<HostTensor>> buffers;
  const HostTensor *ids = nullptr;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    unsigned i = arg.getArgNumber();
    ElementKind kind = *kindOf(type.getElementType());
    auto buffer = std::make_unique<HostTensor>(kind, shapeOf(arg, roles, p));
    if (!roles.isCapture(i) && (i == roles.out || i == roles.lse)) {
      buffer->poison();
    } else if (!roles.isCapture(i)) {
      // Q, K, V symmetric.
      for (int64_t e = 0; e < buffer->numElements(); ++e)
        buffer->set(e, uniform(rng));
    } else {
      fillCapture(*buffer, rng, runStarts[i] ? ids : nullptr);
      if (!isFloat(kind) && !runStarts[i])
        ids = buffer.get();
    }
    buffers.push_back(std::move(buffer));
  }
  return buffers;
}

} // namespace

int attn_run::runAttention(ModuleOp module, const AttentionSweep &sweep,
                           CompileFn compile) {
  // Not a structured binding: the GPU reference's callback captures `op`.
  func::FuncOp func;
  attn::AttentionOp op;
  std::tie(func, op) = findAttention(module, sweep.entry);

  Roles roles = rolesOf(func, op);
  SmallVector<bool> runStarts =
      runStartFills(func, [&](unsigned i) { return roles.isCapture(i); });
  RegionPrograms programs = programsOf(func, op, roles);

  // The cases of the sweep, in order, and every case's shapes and memory,
  // checked before compiling.
  std::vector<Problem> problems =
      sweepCases(sweep, op.getQueryType(), op.getKeyType(), op.getHeadDim(),
                 op.getValueHeadDim());
  for (const Problem &p : problems)
    footprintOf(func, roles, p).checkFits();

  // Compile once, for the CPU (JIT) or the GPU (a kernel bundle run through
  // the CUDA driver).
  double compileMs = 0;
  std::unique_ptr<attn::CpuKernel> kernel;
  std::unique_ptr<GpuTarget> gpu = compile(func, kernel, compileMs);
  std::string where = gpu ? "gpu (" + gpu->chip() + ")" : "cpu";

  Type elementType = op.getQueryType().getElementType();
  std::string typeName;
  llvm::raw_string_ostream(typeName) << elementType;
  double allowed =
      sweep.tolerance > 0
          ? sweep.tolerance
          : attentionTolerance(*kindOf(elementType),
                               /*roundedProbabilities=*/gpu != nullptr);
  // f16 and bf16 on the GPU: the peer criterion (peerBound) against the
  // float32 kernel rounded as ours, where the CPU reference runs and no
  // --tolerance was given.
  ElementKind kind = *kindOf(elementType);
  bool peerCriterion = gpu && sweep.tolerance <= 0 &&
                       (kind == ElementKind::F16 || kind == ElementKind::BF16);
  if (!sweep.json)
    llvm::outs() << "attn-run: target=" << where << " @" << func.getName()
                 << " dtype=" << typeName << " D=" << op.getHeadDim()
                 << " Dv=" << op.getValueHeadDim()
                 << (op.getCausal() ? " causal" : "")
                 << (op.hasMaskMod() ? " mask_mod" : "")
                 << (op.hasScoreMod() ? " score_mod" : "")
                 << llvm::formatv(", compiled once in {0:f1} ms", compileMs)
                 << "\n";

  // Density: the fraction of blocks holding a position the op keeps (its
  // mask_mod and causal together), in the block sizes of the op's block
  // mask, else of the one the pipeline derives (128 x 128), which lists
  // exactly those blocks.
  std::pair<int64_t, int64_t> blockSizes = {128, 128};
  if (Value blockMask = op.getBlockMask()) {
    auto type = cast<attn::BlockMaskType>(blockMask.getType());
    blockSizes = {type.getQBlock(), type.getKvBlock()};
  }

  std::mt19937_64 rng(sweep.seed);
  unsigned cases = 0, failures = 0;
  double worst = 0;
  for (const Problem &p : problems) {
    int64_t b = p.b, hq = p.hq, hkv = p.hkv, m = p.m, n = p.n;
    footprintOf(func, roles, p).announce();
    std::vector<std::unique_ptr<HostTensor>> buffers =
        freshInputs(func, roles, runStarts, p, rng);

    // Large problems without regions are checked against the plain
    // float64 kernel on the GPU; the rest on the CPU, whose reference
    // interprets the op's regions.
    double work = static_cast<double>(b) * hq * m * n * (p.d + p.dv);
    bool gpuReference =
        gpu && hasGpuReference() && !op.hasScoreMod() && !op.hasMaskMod() &&
        !op.getBlockMask() &&
        (sweep.reference == "gpu" || (sweep.reference == "auto" && work > 1e9));
    if (sweep.reference == "gpu" && !gpuReference)
      fail("--reference=gpu needs --target=gpu, a runtime built with "
           "nvcc, and an op without score_mod, mask_mod or block mask");
    ReferenceResult ref;
    // The CPU reference first: where a region's result is undefined (a
    // division by zero, a read out of bounds), that is an error before the
    // kernel, whose behaviour there is undefined too, runs and maybe traps.
    if (!gpuReference) {
      std::vector<const HostTensor *> arguments;
      for (const std::unique_ptr<HostTensor> &buffer : buffers)
        arguments.push_back(buffer.get());
      llvm::Expected<ReferenceResult> computed = referenceAttention(
          op, programs, arguments, *buffers[roles.q], *buffers[roles.k],
          *buffers[roles.v], blockSizes,
          peerCriterion ? buffers[roles.q]->kind() : ElementKind::F32);
      if (!computed)
        fail(caseName(p) + ": " + llvm::toString(computed.takeError()));
      ref = std::move(*computed);
    }
    double runMs;
    if (gpu) {
      GpuTarget::DeviceCallback onDevice;
      if (gpuReference)
        onDevice = [&](CudaDriver &driver, const std::vector<Argument> &args,
                       std::string &message) {
          ReferenceProblem problem{b,
                                   hq,
                                   hkv,
                                   m,
                                   n,
                                   p.d,
                                   p.dv,
                                   buffers[roles.q]->kind(),
                                   static_cast<double>(op.getScaleValue()),
                                   op.getCausal(),
                                   0};
          return gpuReferenceAttention(
              driver, problem, args[roles.q].address, args[roles.k].address,
              args[roles.v].address, ref.output, ref.logsumexp, message);
        };
      llvm::Expected<double> ms = gpu->run(buffers, onDevice);
      if (!ms)
        fail(caseName(p) + ": " + llvm::toString(ms.takeError()));
      runMs = *ms;
    } else {
      runMs = invoke(*kernel, buffers);
    }

    if (gpuReference) {
      // The plain kernel has no mask_mod: count causal pairs here.
      int64_t pairs = 0;
      for (int64_t i = 0; i < m; ++i)
        pairs += op.getCausal() ? std::min<int64_t>(n, i + 1) : n;
      ref.visiblePairs = pairs * b * hq;
      ref.blocks = BlockPattern::ofCausal(b, hq, m, n, blockSizes.first,
                                          blockSizes.second, op.getCausal());
    }
    double density = ref.blocks.density();
    // Useful FLOPs: two per multiply-add of Q.K^T and P.V on the
    // elements no mask removes.
    double tflops =
        runMs > 0 ? 2.0 * ref.visiblePairs * (p.d + p.dv) / (runMs * 1e9) : 0;
    bool finite;
    double error = relativeError(*buffers[roles.out], ref.output, finite);
    double lseError = 0;
    bool lseFinite = true;
    if (roles.lse)
      lseError = logsumexpError(*buffers[*roles.lse], ref.logsumexp, lseFinite);
    // The output's bound: the peer's where the CPU reference emulated it.
    double bound = allowed, peer = -1;
    if (!ref.emulated.empty()) {
      peer = peerError(ref.emulated, ref.output, *buffers[roles.out]);
      bound = peerBound(kind, peer);
    }
    bool pass = finite && lseFinite && error <= bound && lseError <= allowed;
    ++cases;
    failures += !pass;
    worst = worseError(worst, worseError(error, lseError));
    if (sweep.json) {
      llvm::outs() << llvm::formatv(
          "{{\"target\": \"{0}\", \"reference\": \"{1}\", ",
          gpu ? "gpu" : "cpu", gpuReference ? "gpu" : "cpu");
      llvm::outs() << llvm::formatv(
          "\"B\": {0}, \"Hq\": {1}, \"Hkv\": {2}, \"M\": {3}, "
          "\"N\": {4}, \"D\": {5}, \"Dv\": {6}, \"dtype\": \"{7}\", "
          "\"causal\": {8}, \"error\": {9:e}, \"lse_error\": {10:e}, "
          "\"tolerance\": {11:e}, \"compile_ms\": {12:f1}, "
          "\"run_ms\": {13:f3}, \"useful_tflops\": {15:f4}, "
          "\"density\": {16:f4}, \"pass\": {14}}\n",
          b, hq, hkv, m, n, p.d, p.dv, typeName,
          op.getCausal() ? "true" : "false", error, lseError, allowed,
          compileMs, runMs, pass ? "true" : "false", tflops, density);
    } else {
      llvm::outs() << llvm::formatv(
          "  B={0} Hq={1} Hkv={2} M={3} N={4}: run {5:f3} ms ({7:f3} "
          "useful TFLOP/s, density {8:f3}), error {6:e}",
          b, hq, hkv, m, n, runMs, error, tflops, density);
      if (peer >= 0)
        llvm::outs() << llvm::formatv(" (peer {0:e}, bound {1:e})", peer,
                                      bound);
      if (roles.lse)
        llvm::outs() << llvm::formatv(", logsumexp error {0:e}", lseError);
      if (!finite || !lseFinite)
        llvm::outs() << ", non-finite or unwritten outputs";
      llvm::outs() << ": " << (pass ? "PASS" : "FAIL") << "\n";
    }
    if (sweep.showBlockMask && !sweep.json)
      llvm::outs() << llvm::formatv("  blocks of {0} x {1}, (b, h) = (0, 0):\n",
                                    blockSizes.first, blockSizes.second)
                   << ref.blocks.picture(0, 0);
  }
  return summarize(sweep.json, cases, failures, worst, allowed);
}
