//===- attn-bundle-run.cpp - run a prebuilt kernel bundle on the GPU ------===//
//
// attn-bundle-run BUNDLE.json [--function=NAME] [--batch=B] [--heads=Hq:Hkv]
//     [--q-len=M] [--kv-len=N] [--causal] [--window=W] [--repeat=R]
//     [--rotate=K] [--reference=auto|cpu|gpu] [--json]   (--help: all)
//
// Needs only the runtime (no MLIR): loads the bundle, fills Q, K, V with
// fresh random values (output poisoned with NaN), the tensors its regions
// capture as attn-run does, and given block-mask lists with every block
// partial; launches the function's kernels, checks the output against a
// float64 reference computed here, and times R more runs with CUDA events.
// The function's arguments must be (q, k, v, out [, logsumexp], then
// captures and lists) as attn-run's variants. The reference takes causal,
// the scale and the mask_mod and score_mod regions (the ops the bundle
// records, evaluated here) from what the bundle records it computes;
// --causal and --window, when given, must agree with it. A function that
// records it computes attention_grad is checked as a backward (Backward.h).
// Options, the bundle, the argument shapes (against the bundle's shape
// contract), the launch sizes and the memory needed are all checked before
// the driver opens; every error exits with status 2 and a message.
//
//===----------------------------------------------------------------------===//

#include "Backward.h"
#include "Common.h"
#include "Options.h"

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/GpuReference.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace attn_runtime;
using namespace attn_bundle_run;

namespace {

/// Whether `expr` needs the GPU's SM count, known only once the driver is
/// open.
bool usesSmCount(const Expr &expr) {
  if (expr.kind == Expr::Kind::SmCount)
    return true;
  return std::any_of(expr.operands.begin(), expr.operands.end(), usesSmCount);
}

/// What the reference computes, from what `function` records it computes
/// (the options must agree): causal, the sliding window of the built-in
/// `sliding-window:W` (which the GPU reference has too), the region
/// programs of every other mask_mod and score_mod, and the scale. Without a
/// record: the options, and scale 0 (for 1/sqrt(D)).
struct Reference {
  double scale = 0;
  const Computation *computes = nullptr;
  const RegionProgram *maskMod = nullptr, *scoreMod = nullptr;
};

Reference chooseReference(const Function &function, Options &o) {
  Reference reference;
  if (function.computes.empty())
    return reference;
  std::string at = "@" + function.name;
  const Computation &c = function.computes.front();
  if (function.computes.size() != 1 || c.op != "attention")
    fail(at + " computes " +
         (function.computes.size() == 1
              ? c.op
              : std::to_string(function.computes.size()) + " ops") +
         "; attn-bundle-run checks one attention");
  // A region the reference evaluates from its recorded ops.
  auto program = [&](const Computation::Region &r, const char *which) {
    if (!r.hasProgram)
      fail(at + " has " + which + " " +
           (r.name.empty() ? "written by hand (digest " + r.digest + ")"
                           : "'" + r.name + "'") +
           ", whose ops the bundle does not record (it holds an op the "
           "reference cannot evaluate, or an older attn wrote it)");
    return &r.program;
  };
  if (c.scoreMod.present)
    reference.scoreMod = program(c.scoreMod, "score_mod");
  int64_t window = 0;
  const std::string prefix = "sliding-window:";
  if (c.maskMod.present) {
    const std::string &name = c.maskMod.name;
    char *end = nullptr;
    if (name.compare(0, prefix.size(), prefix) == 0)
      window = std::strtoll(name.c_str() + prefix.size(), &end, 10);
    if (window <= 0 || !end || *end != '\0') {
      window = 0;
      reference.maskMod = program(c.maskMod, "mask_mod");
    }
  }
  if (o.causalGiven && !c.causal)
    fail("--causal does not agree with the bundle: " + at + " is not causal");
  if (o.windowGiven && o.window != window)
    fail("--window=" + std::to_string(o.window) +
         " does not agree with the bundle: " + at +
         (window ? " has mask_mod '" + c.maskMod.name + "'"
                 : std::string(" has no sliding window")));
  o.causal = c.causal;
  o.window = window;
  reference.scale = c.scale;
  reference.computes = &c;
  return reference;
}

/// The machine's memory, or INT64_MAX when it cannot tell.
} // namespace

std::optional<BlockList>
attn_bundle_run::BlockList::of(const std::string &name) {
  static const char *const kLists[] = {
      "kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
      "q_num_blocks",  "q_indices",  "full_q_num_blocks",  "full_q_indices"};
  for (int i = 0; i < 8; ++i)
    if (name == kLists[i]) {
      BlockList list;
      list.qSide = i >= 4;
      list.counts = i % 2 == 0;
      list.full = i % 4 >= 2;
      return list;
    }
  return std::nullopt;
}

std::vector<int64_t> attn_bundle_run::BlockList::shape(int64_t batch,
                                                       int64_t heads, int64_t m,
                                                       int64_t n,
                                                       int64_t qBlock,
                                                       int64_t kvBlock) const {
  int64_t qBlocks = (m + qBlock - 1) / qBlock,
          kvBlocks = (n + kvBlock - 1) / kvBlock;
  std::vector<int64_t> shape = {batch, heads, qSide ? kvBlocks : qBlocks};
  if (!counts)
    shape.push_back(qSide ? qBlocks : kvBlocks);
  return shape;
}

void attn_bundle_run::BlockList::fillAllPartial(HostTensor &t, int64_t m,
                                                int64_t n, int64_t qBlock,
                                                int64_t kvBlock) const {
  // A line lists every block of the other side, in order; full lists are
  // empty.
  int64_t listed =
      qSide ? (m + qBlock - 1) / qBlock : (n + kvBlock - 1) / kvBlock;
  for (int64_t e = 0; e < t.numElements(); ++e)
    t.set(e, full ? 0 : counts ? listed : e % listed);
}

bool attn_bundle_run::elementKind(const std::string &name, ElementKind &kind) {
  for (ElementKind k : {ElementKind::F32, ElementKind::F16, ElementKind::BF16,
                        ElementKind::I32, ElementKind::I64, ElementKind::Index})
    if (name == elementName(k)) {
      kind = k;
      return true;
    }
  return false;
}

int64_t attn_bundle_run::physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  int64_t bytes;
  if (pages <= 0 || pageSize <= 0 ||
      __builtin_mul_overflow(int64_t(pages), int64_t(pageSize), &bytes))
    return INT64_MAX;
  return bytes;
}

void attn_bundle_run::checkLaunchSizes(
    const Function &function, const std::vector<std::vector<int64_t>> &shapes) {
  std::vector<Argument> dry(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i)
    dry[i].shape = shapes[i];
  std::string error;
  for (const Launch &launch : function.launches) {
    std::vector<const Expr *> sizes = {&launch.sharedMemoryBytes,
                                       &launch.workspaceBytes,
                                       &launch.scratchBytes};
    for (int d = 0; d < 3; ++d)
      sizes.insert(sizes.end(), {&launch.grid[d], &launch.block[d]});
    for (const Operand &operand : launch.operands)
      if (operand.kind == Operand::Kind::Int)
        sizes.push_back(&operand.value);
    int64_t value;
    for (const Expr *size : sizes)
      if (!usesSmCount(*size) && !evaluateIndex(*size, dry, value, error))
        fail("launch of '" + launch.kernel + "': " + error);
  }
}

std::vector<Argument> attn_bundle_run::allocateArguments(
    CudaDriver &driver, const std::vector<std::vector<int64_t>> &shapes,
    const std::vector<int64_t> &bytes, const std::vector<std::string> &names) {
  std::vector<Argument> args(shapes.size());
  std::string error;
  for (size_t i = 0; i < shapes.size(); ++i) {
    args[i].shape = shapes[i];
    if (!driver.allocate(bytes[i], args[i].address, error))
      fail("cannot allocate " + std::to_string(bytes[i]) +
           " bytes on the GPU for " + names[i] + ": " + error);
  }
  return args;
}

int run(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  Bundle bundle;
  std::string error;
  if (!Bundle::load(o.bundle, bundle, error))
    fail(error);
  const Function *function =
      o.function.empty()
          ? (bundle.functions.empty() ? nullptr : &bundle.functions.front())
          : bundle.function(o.function);
  if (!function)
    fail("the bundle has no function '" + o.function + "'");
  if (!function->computes.empty() &&
      function->computes.front().op == "attention_grad")
    return runBackward(o, bundle, *function);
  size_t numArgs = function->args.size();
  if (numArgs < 4)
    fail("@" + function->name +
         " must take (q, k, v, out [, logsumexp], captures...) memrefs");
  // The bundle's names, where the compiler knew the roles; arguments after
  // out (and lse) are block-mask lists or tensors the regions capture.
  std::vector<std::string> names = {"q", "k", "v", "out"};
  for (size_t i = 4; i < numArgs; ++i)
    names.push_back("argument " + std::to_string(i));
  for (size_t i = 0; i < numArgs; ++i)
    if (function->args[i].name.rfind("argument ", 0) != 0)
      names[i] = function->args[i].name;
  bool hasLse =
      numArgs > 4 &&
      (names[4] == "lse" ||
       (numArgs == 5 && function->args[4].shape.size() == 3 &&
        function->args[4].dtype == "f32" && !function->computes.empty() &&
        function->computes.front().logsumexp));
  size_t numOutputs = hasLse ? 5 : 4;
  Reference reference = chooseReference(*function, o);
  double scale = reference.scale;
  if (o.reference == "gpu" && (reference.maskMod || reference.scoreMod))
    fail("--reference=gpu: the GPU reference has no mask_mod or score_mod "
         "regions other than sliding-window:W");
  int64_t qBlock = reference.computes ? reference.computes->qBlock : 0,
          kvBlock = reference.computes ? reference.computes->kvBlock : 0;

  // Host tensors with the requested sizes; static dims must agree. All of
  // this is checked before the driver opens, so that it fails the same way
  // on a machine without a GPU.
  std::vector<std::vector<int64_t>> shapes = {{o.batch, o.hq, o.m, 0},
                                              {o.batch, o.hkv, o.n, 0},
                                              {o.batch, o.hkv, o.n, 0},
                                              {o.batch, o.hq, o.m, 0},
                                              {o.batch, o.hq, o.m}};
  shapes.resize(numOutputs);
  // Block-mask lists: every block listed as partial, which is right for any
  // mask (the kernel evaluates the mask_mod on each); captures: dynamic
  // dims cover any b, h, q or kv index.
  for (size_t i = numOutputs; i < numArgs; ++i) {
    const std::vector<int64_t> &dims = function->args[i].shape;
    std::optional<BlockList> list = BlockList::of(names[i]);
    std::vector<int64_t> shape;
    if (list) {
      if (qBlock <= 0)
        fail(names[i] + ": filling block-mask lists needs the block sizes, "
                        "which the bundle does not record (an older attn "
                        "wrote it)");
      shape = list->shape(o.batch, o.hq, o.m, o.n, qBlock, kvBlock);
    } else {
      shape.assign(dims.size(), std::max({o.batch, o.hq, o.m, o.n}));
    }
    // Static sizes stand (a list broadcast over batch or heads).
    for (size_t d = 0; d < dims.size() && d < shape.size(); ++d)
      if (dims[d] >= 0 && (d < 2 || !list))
        shape[d] = dims[d];
    shapes.push_back(shape);
  }
  std::vector<ElementKind> kinds(numArgs);
  std::vector<int64_t> bytes(numArgs);
  for (size_t i = 0; i < numArgs; ++i) {
    const std::vector<int64_t> &dims = function->args[i].shape;
    std::string type = function->args[i].str();
    if (dims.size() != shapes[i].size() ||
        !elementKind(function->args[i].dtype, kinds[i]))
      fail("argument " + std::to_string(i) + " has type '" + type + "', not " +
           (i < numOutputs ? "an attention memref"
                           : "a capture or block-mask list of that rank"));
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d == 3 && i < 4) { // head dims are static
        if (dims[d] < 0)
          fail("argument " + std::to_string(i) + " (" + type +
               ") has a dynamic head dim; attn-bundle-run needs it static");
        shapes[i][d] = dims[d];
      }
      if (dims[d] >= 0 && dims[d] != shapes[i][d])
        fail("argument " + std::to_string(i) + " (" + type +
             ") has static dim " + std::to_string(d) + " = " +
             std::to_string(dims[d]) + ", not " + std::to_string(shapes[i][d]));
    }
    bytes[i] = static_cast<int64_t>(elementBytes(kinds[i]));
    for (int64_t size : shapes[i])
      if (__builtin_mul_overflow(bytes[i], size, &bytes[i]))
        fail(names[i] + " is too large: its size in bytes overflows int64");
  }
  // The reference reads K with q's head dim and writes out's with v's.
  if (shapes[1][3] != shapes[0][3] || shapes[3][3] != shapes[2][3])
    fail("@" + function->name + " takes q, k with head dims " +
         std::to_string(shapes[0][3]) + ", " + std::to_string(shapes[1][3]) +
         " and v, out with " + std::to_string(shapes[2][3]) + ", " +
         std::to_string(shapes[3][3]) + "; attn-bundle-run needs them equal");
  error = function->checkArguments(shapes);
  if (!error.empty())
    fail(error);
  // Launch sizes that do not depend on the GPU can be checked now.
  checkLaunchSizes(*function, shapes);

  // Host memory: the buffers, and the float64 reference's output and
  // logsumexp; a run that cannot fit fails here, with the byte count,
  // instead of aborting in an allocation.
  int64_t d = shapes[0][3], dv = shapes[2][3];
  int64_t rows = o.batch, refOutBytes, refLseBytes;
  if (__builtin_mul_overflow(rows, o.hq, &rows) ||
      __builtin_mul_overflow(rows, o.m, &rows) ||
      __builtin_mul_overflow(rows, dv * int64_t(sizeof(double)),
                             &refOutBytes) ||
      __builtin_mul_overflow(rows, int64_t(sizeof(double)), &refLseBytes))
    fail("the float64 reference is too large: its size in bytes overflows "
         "int64");
  std::vector<std::pair<std::string, int64_t>> hostBuffers;
  for (size_t i = 0; i < numArgs; ++i)
    hostBuffers.emplace_back(names[i], bytes[i]);
  hostBuffers.emplace_back("the reference output", refOutBytes);
  hostBuffers.emplace_back("the reference logsumexp", refLseBytes);
  int64_t memory = physicalMemory(), total = 0;
  for (const auto &[name, size] : hostBuffers)
    if (__builtin_add_overflow(total, size, &total) || total > memory)
      fail("cannot allocate " + std::to_string(size) + " bytes for " + name +
           ": the run needs more host memory than this machine's " +
           std::to_string(memory) + " bytes");

  // Device buffers first: a problem too large for the GPU fails here, before
  // the host spends time and memory on inputs.
  CudaDriver driver;
  if (!driver.open(error))
    fail(error);
  std::vector<Argument> args = allocateArguments(driver, shapes, bytes, names);

  std::vector<std::unique_ptr<HostTensor>> host;
  for (size_t i = 0; i < numArgs; ++i) {
    try {
      host.push_back(std::make_unique<HostTensor>(kinds[i], shapes[i]));
    } catch (const std::bad_alloc &) {
      fail("cannot allocate " + std::to_string(bytes[i]) + " bytes for " +
           names[i] + ": out of host memory");
    }
  }
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int i = 0; i < 3; ++i)
    for (int64_t e = 0; e < host[i]->numElements(); ++e)
      host[i]->set(e, uniform(rng));
  for (size_t i = 3; i < numOutputs; ++i)
    host[i]->poison();
  const HostTensor *ids = nullptr;
  bool jagged = reference.computes &&
                reference.computes->maskMod.name.rfind("jagged:", 0) == 0;
  for (size_t i = numOutputs; i < numArgs; ++i) {
    HostTensor &t = *host[i];
    if (std::optional<BlockList> list = BlockList::of(names[i])) {
      list->fillAllPartial(t, o.m, o.n, qBlock, kvBlock);
      continue;
    }
    // The jagged mask's second integer capture: where each sequence starts.
    bool runStarts = jagged && ids && !isFloat(t.kind());
    fillCapture(t, rng, runStarts ? ids : nullptr);
    if (!isFloat(t.kind()) && !runStarts)
      ids = &t;
  }
  for (size_t i = 0; i < numArgs; ++i)
    if (!driver.copyToDevice(args[i].address, host[i]->data(), bytes[i], error))
      fail(error);

  // The float64 reference, rounded to the output type: on the CPU, first,
  // so that a region undefined somewhere (a read out of bounds) is an error
  // before the kernel, whose behaviour there is undefined too, runs; or,
  // for large problems without regions (or when asked), with the plain
  // reference kernel on the GPU after it.
  if (scale == 0)
    scale = 1.0 / std::sqrt(static_cast<double>(d));
  double work = static_cast<double>(o.batch) * o.hq * o.m * o.n * (d + dv);
  bool programs = reference.maskMod || reference.scoreMod;
  bool onGpu = o.reference == "gpu" || (o.reference == "auto" && work > 1e9 &&
                                        hasGpuReference() && !programs);
  std::vector<double> refOut, refLse, refEmulated;
  if (!onGpu) {
    ReferenceAttention problem;
    problem.q = host[0].get();
    problem.k = host[1].get();
    problem.v = host[2].get();
    problem.scale = scale;
    problem.causal = o.causal || o.window > 0;
    problem.window = o.window;
    problem.maskMod = reference.maskMod;
    problem.scoreMod = reference.scoreMod;
    problem.emulate = host[0]->kind();
    for (const std::unique_ptr<HostTensor> &t : host)
      problem.arguments.push_back(t.get());
    ReferenceResult result;
    if (!referenceAttention(problem, result, error))
      fail("the reference: " + error);
    refOut = std::move(result.output);
    refLse = std::move(result.logsumexp);
    refEmulated = std::move(result.emulated);
  }

  // Launch every kernel of the function, in order, on the inputs `set`.
  std::vector<void *> kernels;
  for (const Launch &launch : function->launches) {
    void *kernel;
    if (!driver.loadKernel(bundle, launch, kernel, error))
      fail(error);
    kernels.push_back(kernel);
  }
  auto prepare = [&](const std::vector<Argument> &set) {
    PreparedCall call;
    if (!driver.prepare(*function, kernels, set, call, error))
      fail(error);
    return call;
  };
  auto runAll = [&](PreparedCall &call, std::string &err) {
    return driver.launch(call, err);
  };
  PreparedCall checked = prepare(args);
  if (!runAll(checked, error) || !driver.synchronize(error))
    fail(error);
  for (size_t i = 3; i < numOutputs; ++i)
    if (!driver.copyToHost(host[i]->data(), args[i].address, bytes[i], error))
      fail(error);

  if (onGpu) {
    ReferenceProblem problem{o.batch, o.hq,     o.hkv,   o.m,
                             o.n,     d,        dv,      host[0]->kind(),
                             scale,   o.causal, o.window};
    if (!gpuReferenceAttention(driver, problem, args[0].address,
                               args[1].address, args[2].address, refOut, refLse,
                               error))
      fail("the GPU reference failed: " + error);
  }
  bool finite;
  double err = relativeError(*host[3], refOut, finite);
  double tolerance =
      attentionTolerance(host[0]->kind(), /*roundedProbabilities=*/true);
  // f16 and bf16 outputs: the peer criterion (peerBound), where the CPU
  // reference emulated the float32 kernel rounded as ours.
  double bound = tolerance, peerErr = -1;
  if (!refEmulated.empty()) {
    peerErr = peerError(refEmulated, refOut, *host[3]);
    bound = peerBound(host[0]->kind(), peerErr);
  }
  bool pass = finite && err <= bound;
  if (hasLse) {
    bool lseFinite;
    double lseErr = logsumexpError(*host[4], refLse, lseFinite);
    pass &= lseFinite && lseErr <= tolerance;
    err = std::isnan(lseErr) ? lseErr : std::max(err, lseErr);
    finite &= lseFinite;
  }

  // Timing: rotate through copies of the inputs, so that a run does not
  // find the previous run's inputs in the 50 MB L2; a warm-up first.
  size_t inputBytes = 0;
  for (int i = 0; i < 3; ++i)
    inputBytes += host[i]->numElements() * elementBytes(host[i]->kind());
  int rotate =
      o.rotate > 0
          ? o.rotate
          : static_cast<int>(std::min<size_t>(
                8, 1 + (200u << 20) / std::max<size_t>(inputBytes, 1)));
  std::vector<std::vector<Argument>> sets = {args};
  for (int r = 1; r < rotate && o.repeat > 0; ++r) {
    std::vector<Argument> set = args;
    bool ok = true;
    for (int i = 0; i < 3 && ok; ++i) {
      ok =
          driver.allocate(bytes[i], set[i].address, error) &&
          driver.copyToDevice(set[i].address, host[i]->data(), bytes[i], error);
    }
    if (!ok)
      break; // time with the copies that fit
    sets.push_back(std::move(set));
  }
  std::vector<PreparedCall> timedLaunches;
  for (const std::vector<Argument> &set : sets)
    timedLaunches.push_back(prepare(set));
  if (o.repeat > 0 && !runAll(timedLaunches.back(), error))
    fail(error); // warm-up
  std::vector<float> times;
  for (int r = 0; r < o.repeat; ++r) {
    float ms;
    PreparedCall &launches = timedLaunches[r % timedLaunches.size()];
    if (!driver.timeMs([&](std::string &err) { return runAll(launches, err); },
                       ms, error))
      fail(error);
    times.push_back(ms);
  }
  for (size_t r = 1; r < sets.size(); ++r)
    for (int i = 0; i < 3; ++i)
      driver.free(sets[r][i].address);
  double ms = 0, tflops = 0;
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    ms = times[times.size() / 2];
    double flops = 4.0 * o.batch * o.hq * o.m * o.n * d;
    if (o.causal && !o.window)
      flops /= 2;
    tflops = flops / ms / 1e9;
  }
  if (o.json) {
    std::printf(
        "{\"function\": \"%s\", \"chip\": \"%s\", \"B\": %lld, "
        "\"Hq\": %lld, \"Hkv\": %lld, \"M\": %lld, \"N\": %lld, "
        "\"D\": %lld, \"causal\": %s, \"window\": %lld, "
        "\"error\": %.6e, \"tolerance\": %.1e, \"peer_error\": %.6e, "
        "\"bound\": %.6e, \"reference\": \"%s\", "
        "\"rotate\": %d, \"ms\": %.6f, \"tflops\": %.4f, "
        "\"pass\": %s}\n",
        function->name.c_str(), driver.chip().c_str(), (long long)o.batch,
        (long long)o.hq, (long long)o.hkv, (long long)o.m, (long long)o.n,
        (long long)d, o.causal ? "true" : "false", (long long)o.window, err,
        tolerance, peerErr, bound, onGpu ? "gpu" : "cpu",
        static_cast<int>(sets.size()), ms, tflops, pass ? "true" : "false");
    for (Argument &a : args)
      driver.free(a.address);
    return pass ? 0 : 1;
  }
  char criterion[96];
  if (peerErr >= 0)
    std::snprintf(criterion, sizeof(criterion), "peer %.3e, bound %.3e",
                  peerErr, bound);
  else
    std::snprintf(criterion, sizeof(criterion), "tolerance %.1e", tolerance);
  std::printf("attn-bundle-run: @%s on %s, B=%lld Hq=%lld Hkv=%lld M=%lld "
              "N=%lld D=%lld%s: error %.3e (%s, %s reference)%s: "
              "%s\n",
              function->name.c_str(), driver.chip().c_str(), (long long)o.batch,
              (long long)o.hq, (long long)o.hkv, (long long)o.m, (long long)o.n,
              (long long)d, o.window ? " window" : (o.causal ? " causal" : ""),
              err, criterion, onGpu ? "GPU float64" : "CPU float64",
              finite ? "" : ", non-finite or unwritten outputs",
              pass ? "PASS" : "FAIL");
  if (!times.empty())
    std::printf("  median of %d runs (inputs rotated over %d copies): %.3f "
                "ms, %.2f TFLOP/s\n",
                o.repeat, static_cast<int>(sets.size()), ms, tflops);
  for (Argument &a : args)
    driver.free(a.address);
  return pass ? 0 : 1;
}

int main(int argc, char **argv) {
  // Sizes are checked against the machine's memory first; an allocation
  // that fails all the same is an error, not an abort.
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    fail("out of host memory");
  }
}
