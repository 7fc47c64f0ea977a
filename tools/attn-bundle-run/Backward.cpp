//===- Backward.cpp - attn-bundle-run on a backward bundle ----------------===//
//
// The backward's check: the same fills, shape checks and float64 reference
// as attn-run --backward --target=gpu, on a prebuilt bundle. Everything
// that can be checked before the driver opens is.
//
//===----------------------------------------------------------------------===//

#include "Backward.h"
#include "Common.h"

#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Reference.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <random>

using namespace attn_runtime;
using namespace attn_bundle_run;

namespace {

/// The function's arguments by position, as attn-run's backward variants.
enum Role { Q, K, V, Out, GradOut, Lse, DQ, DK, DV, NumRoles };
const char *const kRoleNames[NumRoles] = {"q",   "k",  "v",  "out", "grad_out",
                                          "lse", "dq", "dk", "dv"};

} // namespace

int attn_bundle_run::runBackward(const Options &o, const Bundle &bundle,
                                 const Function &function) {
  std::string at = "@" + function.name;
  const Computation &c = function.computes.front();
  if (function.computes.size() != 1)
    fail(at + " computes " + std::to_string(function.computes.size()) +
         " ops; attn-bundle-run checks one attention_grad");
  size_t numArgs = function.args.size();
  if (numArgs < NumRoles)
    fail(at + " must take (q, k, v, out, grad_out, logsumexp, dq, dk, dv, "
              "captures...) memrefs");
  if (o.causalGiven && o.causal != c.causal)
    fail(std::string("--causal does not agree with the bundle: ") + at +
         (c.causal ? " is causal" : " is not causal"));
  if (o.windowGiven)
    fail("--window: " + at +
         " records its mask_mod, which the reference "
         "evaluates");
  auto program = [&](const Computation::Region &r,
                     const char *which) -> const RegionProgram * {
    if (!r.present)
      return nullptr;
    if (!r.hasProgram)
      fail(at + " has a " + which +
           " whose ops the bundle does not record (digest " + r.digest + ")");
    return &r.program;
  };
  const RegionProgram *maskMod = program(c.maskMod, "mask_mod");
  const RegionProgram *scoreMod = program(c.scoreMod, "score_mod");
  // The wrt tensors are captures; their gradients are outputs shaped as
  // them.
  std::vector<int64_t> wrt;
  std::vector<bool> isWrtGrad(numArgs);
  for (const Computation::Wrt &w : c.wrt) {
    if (w.tensor < NumRoles || w.grad < NumRoles)
      fail(at + " computes the gradient of a tensor that is not among its "
                "captures, or into no argument of its own");
    wrt.push_back(w.tensor);
    isWrtGrad[w.grad] = true;
  }

  int64_t d = c.headDim, dv = c.valueHeadDim;
  std::vector<std::vector<int64_t>> shapes = {
      {o.batch, o.hq, o.m, d},   {o.batch, o.hkv, o.n, d},
      {o.batch, o.hkv, o.n, dv}, {o.batch, o.hq, o.m, dv},
      {o.batch, o.hq, o.m, dv},  {o.batch, o.hq, o.m},
      {o.batch, o.hq, o.m, d},   {o.batch, o.hkv, o.n, d},
      {o.batch, o.hkv, o.n, dv}};
  for (size_t i = NumRoles; i < numArgs; ++i) {
    // Block-mask lists (every block partial, as the forward's check fills
    // them); captures: dynamic dims cover any b, h, q or kv index.
    const std::vector<int64_t> &dims = function.args[i].shape;
    std::optional<BlockList> list = BlockList::of(function.args[i].name);
    if (list && c.qBlock <= 0)
      fail(function.args[i].name +
           ": filling block-mask lists needs the block sizes, which the "
           "bundle does not record");
    std::vector<int64_t> shape =
        list ? list->shape(o.batch, o.hq, o.m, o.n, c.qBlock, c.kvBlock)
             : std::vector<int64_t>(dims.size(),
                                    std::max({o.batch, o.hq, o.m, o.n}));
    // Static sizes stand (a list broadcast over batch or heads).
    for (size_t dim = 0; dim < dims.size() && dim < shape.size(); ++dim)
      if (dims[dim] >= 0 && (dim < 2 || !list))
        shape[dim] = dims[dim];
    shapes.push_back(shape);
  }
  for (const Computation::Wrt &w : c.wrt)
    shapes[w.grad] = shapes[w.tensor];
  std::vector<ElementKind> kinds(numArgs);
  std::vector<int64_t> bytes(numArgs);
  std::vector<std::string> names;
  int64_t total = 0;
  for (size_t i = 0; i < numArgs; ++i) {
    const ArgumentType &arg = function.args[i];
    names.push_back(i < NumRoles ? kRoleNames[i] : arg.name);
    const std::string &name = names.back();
    // The gradients may be f32, whatever the inputs' type.
    bool gradient = i == DQ || i == DK || i == DV;
    bool floats =
        i == Lse ? arg.dtype == "f32"
                 : arg.dtype == c.dtype || (gradient && arg.dtype == "f32");
    if (arg.shape.size() != shapes[i].size() ||
        !elementKind(arg.dtype, kinds[i]) || (i < NumRoles && !floats))
      fail("argument " + std::to_string(i) + " (" + name + ") has type '" +
           arg.str() + "', not the " +
           (i < NumRoles ? std::string(i == Lse   ? "f32"
                                       : gradient ? c.dtype + " or f32"
                                                  : c.dtype) +
                               " memref of attention_grad's " + name
                         : std::string("capture of that rank")));
    for (size_t dim = 0; dim < arg.shape.size(); ++dim)
      if (arg.shape[dim] >= 0 && arg.shape[dim] != shapes[i][dim])
        fail("argument " + std::to_string(i) + " (" + arg.str() +
             ") has static dim " + std::to_string(dim) + " = " +
             std::to_string(arg.shape[dim]) + ", not " +
             std::to_string(shapes[i][dim]));
    int64_t size = static_cast<int64_t>(elementBytes(kinds[i]));
    for (int64_t extent : shapes[i])
      if (__builtin_mul_overflow(size, extent, &size))
        fail(name + " is too large: its size in bytes overflows int64");
    bytes[i] = size;
    // The host holds each buffer and a float64 gradient per input.
    int64_t host;
    if (__builtin_mul_overflow(size, i <= V ? 5 : 1, &host) ||
        __builtin_add_overflow(total, host, &total) || total > physicalMemory())
      fail("cannot allocate " + std::to_string(host) + " bytes for " + name +
           ": the run needs more host memory than this machine's " +
           std::to_string(physicalMemory()) + " bytes");
  }
  std::string error = function.checkArguments(shapes);
  if (!error.empty())
    fail(error);
  checkLaunchSizes(function, shapes);

  CudaDriver driver;
  if (!driver.open(error))
    fail(error);
  std::vector<Argument> args = allocateArguments(driver, shapes, bytes, names);
  std::vector<std::unique_ptr<HostTensor>> host;
  try {
    for (size_t i = 0; i < numArgs; ++i)
      host.push_back(std::make_unique<HostTensor>(kinds[i], shapes[i]));
  } catch (const std::bad_alloc &) {
    fail("out of host memory for the arguments");
  }
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (Role role : {Q, K, V, GradOut})
    for (int64_t e = 0; e < host[role]->numElements(); ++e)
      host[role]->set(e, uniform(rng));
  for (Role role : {DQ, DK, DV})
    host[role]->poison();
  const HostTensor *ids = nullptr;
  bool jagged = c.maskMod.name.rfind("jagged:", 0) == 0;
  for (size_t i = NumRoles; i < numArgs; ++i) {
    if (std::optional<BlockList> list = BlockList::of(names[i])) {
      list->fillAllPartial(*host[i], o.m, o.n, c.qBlock, c.kvBlock);
      continue;
    }
    if (isWrtGrad[i]) {
      host[i]->poison();
      continue;
    }
    // The jagged mask's second integer capture: where each sequence starts.
    bool runStarts = jagged && ids && !isFloat(kinds[i]);
    fillCapture(*host[i], rng, runStarts ? ids : nullptr);
    if (!isFloat(kinds[i]) && !runStarts)
      ids = host[i].get();
  }

  // The forward's output and logsumexp, as a forward pass stores them,
  // then the float64 gradients.
  ReferenceAttention problem;
  problem.q = host[Q].get();
  problem.k = host[K].get();
  problem.v = host[V].get();
  problem.scale = c.scale;
  problem.causal = c.causal;
  problem.maskMod = maskMod;
  problem.scoreMod = scoreMod;
  for (const std::unique_ptr<HostTensor> &t : host)
    problem.arguments.push_back(t.get());
  ReferenceResult forward;
  if (!referenceAttention(problem, forward, error))
    fail("the reference: " + error);
  for (int64_t e = 0; e < host[Out]->numElements(); ++e)
    host[Out]->set(e, forward.output[e]);
  for (int64_t e = 0; e < host[Lse]->numElements(); ++e)
    host[Lse]->set(e, forward.logsumexp[e]);
  ReferenceGradients want;
  if (!referenceAttentionGrad(problem, *host[Out], *host[GradOut], want, error,
                              wrt))
    fail("the reference: " + error);
  for (size_t i = 0; i < numArgs; ++i)
    if (!driver.copyToDevice(args[i].address, host[i]->data(), bytes[i], error))
      fail(error);

  std::vector<void *> kernels;
  for (const Launch &launch : function.launches) {
    void *kernel;
    if (!driver.loadKernel(bundle, launch, kernel, error))
      fail(error);
    kernels.push_back(kernel);
  }
  PreparedCall call;
  if (!driver.prepare(function, kernels, args, call, error) ||
      !driver.launch(call, error) || !driver.synchronize(error))
    fail(error);
  std::vector<size_t> outputs = {DQ, DK, DV};
  for (const Computation::Wrt &w : c.wrt)
    outputs.push_back(w.grad);
  for (size_t arg : outputs)
    if (!driver.copyToHost(host[arg]->data(), args[arg].address, bytes[arg],
                           error))
      fail(error);

  // P and dS are rounded to the input type as mma operands.
  double tolerance = attentionTolerance(kinds[Q], /*roundedProbabilities=*/
                                        true);
  const std::vector<double> *wanted[] = {&want.dq, &want.dk, &want.dv};
  double errors[3];
  bool pass = true;
  for (int g = 0; g < 3; ++g) {
    bool finite;
    errors[g] = relativeError(*host[DQ + g], *wanted[g], finite);
    pass &= finite && errors[g] <= tolerance;
  }
  // A wrt gradient is f32 arithmetic on the inputs as given: f32's bound,
  // of its terms' sizes (Reference.h).
  double wrtTolerance = attentionTolerance(ElementKind::F32, false);
  std::vector<double> wrtErrors;
  for (size_t w = 0; w < c.wrt.size(); ++w) {
    bool finite;
    wrtErrors.push_back(relativeError(*host[c.wrt[w].grad], want.wrt[w], finite,
                                      &want.wrtMagnitudes[w]));
    pass &= finite && wrtErrors.back() <= wrtTolerance;
  }
  std::string wrtJson, wrtText;
  for (size_t w = 0; w < wrtErrors.size(); ++w) {
    char text[64];
    std::snprintf(text, sizeof text, "%s%.6e", w ? ", " : "", wrtErrors[w]);
    wrtJson += text;
    std::snprintf(text, sizeof text, ", d(wrt #%zu) error %.3e", w,
                  wrtErrors[w]);
    wrtText += text;
  }

  std::vector<float> times;
  for (int r = 0; r < o.repeat; ++r) {
    float ms;
    if (!driver.timeMs(
            [&](std::string &err) { return driver.launch(call, err); }, ms,
            error))
      fail(error);
    times.push_back(ms);
  }
  double ms = 0, tflops = 0;
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    ms = times[times.size() / 2];
    // The FlashAttention convention: 2.5 times the forward's FLOPs.
    double flops = 2.5 * 4.0 * o.batch * o.hq * o.m * o.n * d;
    if (c.causal)
      flops /= 2;
    tflops = flops / ms / 1e9;
  }
  for (Argument &a : args)
    driver.free(a.address);
  if (o.json) {
    std::printf("{\"function\": \"%s\", \"chip\": \"%s\", \"B\": %lld, "
                "\"Hq\": %lld, \"Hkv\": %lld, \"M\": %lld, \"N\": %lld, "
                "\"D\": %lld, \"causal\": %s, \"dq_error\": %.6e, "
                "\"dk_error\": %.6e, \"dv_error\": %.6e, \"wrt_errors\": "
                "[%s], \"tolerance\": %.1e, \"ms\": %.6f, \"tflops\": %.4f, "
                "\"pass\": %s}\n",
                function.name.c_str(), driver.chip().c_str(),
                (long long)o.batch, (long long)o.hq, (long long)o.hkv,
                (long long)o.m, (long long)o.n, (long long)d,
                c.causal ? "true" : "false", errors[0], errors[1], errors[2],
                wrtJson.c_str(), tolerance, ms, tflops,
                pass ? "true" : "false");
    return pass ? 0 : 1;
  }
  std::printf("attn-bundle-run: %s (attention_grad) on %s, B=%lld Hq=%lld "
              "Hkv=%lld M=%lld N=%lld D=%lld%s: dQ error %.3e, dK error "
              "%.3e, dV error %.3e%s (tolerance %.1e%s, CPU float64 "
              "reference): %s\n",
              at.c_str(), driver.chip().c_str(), (long long)o.batch,
              (long long)o.hq, (long long)o.hkv, (long long)o.m, (long long)o.n,
              (long long)d, c.causal ? " causal" : "", errors[0], errors[1],
              errors[2], wrtText.c_str(), tolerance,
              wrtErrors.empty() ? "" : ", 1e-5 of the terms' sizes for wrt",
              pass ? "PASS" : "FAIL");
  if (!times.empty())
    std::printf("  median of %d runs: %.3f ms, %.2f TFLOP/s\n", o.repeat, ms,
                tflops);
  return pass ? 0 : 1;
}
