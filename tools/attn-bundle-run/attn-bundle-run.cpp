//===- attn-bundle-run.cpp - run a prebuilt kernel bundle on the GPU ------===//
//
// attn-bundle-run BUNDLE.json [--function=NAME] [--batch=B] [--heads=Hq:Hkv]
//     [--q-len=M] [--kv-len=N] [--causal] [--window=W] [--repeat=R]
//
// Needs only the runtime (no MLIR): loads the bundle, fills Q, K, V with
// fresh random values (output poisoned with NaN), launches the function's
// kernels, checks the output against a float64 reference computed here
// (plain attention; --causal; --window=W for the causal sliding window
// attn-run builds), and times R more runs with CUDA events. The function's
// arguments must be (q, k, v, out [, logsumexp]) as attn-run's variants.
//
//===----------------------------------------------------------------------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/GpuReference.h"
#include "AttnRuntime/HostTensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace attn_runtime;

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "attn-bundle-run: error: %s\n", message.c_str());
  std::exit(2);
}

/// memref<?x8x?x64xf16> -> dims (-1 for ?) and element kind.
bool parseMemRef(const std::string &type, std::vector<int64_t> &dims,
                 ElementKind &kind) {
  if (type.rfind("memref<", 0) != 0 || type.back() != '>')
    return false;
  std::string body = type.substr(7, type.size() - 8);
  size_t last = body.rfind('x');
  if (last == std::string::npos)
    return false;
  std::string element = body.substr(last + 1);
  if (element == "f32")
    kind = ElementKind::F32;
  else if (element == "f16")
    kind = ElementKind::F16;
  else if (element == "bf16")
    kind = ElementKind::BF16;
  else
    return false;
  dims.clear();
  size_t start = 0;
  while (start <= last) {
    size_t x = body.find('x', start);
    std::string dim = body.substr(start, x - start);
    dims.push_back(dim == "?" ? -1 : std::atoll(dim.c_str()));
    start = x + 1;
    if (x == last)
      break;
  }
  return true;
}

struct Options {
  std::string bundle, function;
  int64_t batch = 1, hq = 4, hkv = 4, m = 128, n = 128, window = 0;
  int repeat = 10, rotate = 0; // rotate 0: enough input sets to defeat L2
  std::string reference = "auto";
  bool causal = false, json = false;
};

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *name) -> const char * {
      size_t n = std::strlen(name);
      return a.compare(0, n, name) == 0 ? a.c_str() + n : nullptr;
    };
    if (const char *v = value("--function="))
      o.function = v;
    else if (const char *v = value("--batch="))
      o.batch = std::atoll(v);
    else if (const char *v = value("--heads=")) {
      o.hq = std::atoll(v);
      const char *colon = std::strchr(v, ':');
      o.hkv = colon ? std::atoll(colon + 1) : o.hq;
    } else if (const char *v = value("--q-len="))
      o.m = std::atoll(v);
    else if (const char *v = value("--kv-len="))
      o.n = std::atoll(v);
    else if (const char *v = value("--window="))
      o.window = std::atoll(v);
    else if (const char *v = value("--repeat="))
      o.repeat = std::atoi(v);
    else if (const char *v = value("--rotate="))
      o.rotate = std::atoi(v);
    else if (const char *v = value("--reference="))
      o.reference = v;
    else if (a == "--causal")
      o.causal = true;
    else if (a == "--json")
      o.json = true;
    else if (a.rfind("--", 0) == 0)
      fail("unknown option '" + a + "'");
    else
      o.bundle = a;
  }
  if (o.bundle.empty())
    fail("usage: attn-bundle-run BUNDLE.json [--function=NAME] [--batch=B] "
         "[--heads=Hq:Hkv] [--q-len=M] [--kv-len=N] [--causal] [--window=W] "
         "[--repeat=R] [--rotate=K] [--reference=auto|cpu|gpu] [--json]");
  if (o.reference != "auto" && o.reference != "cpu" && o.reference != "gpu")
    fail("--reference must be auto, cpu or gpu, not '" + o.reference + "'");
  if (o.batch <= 0 || o.hq <= 0 || o.hkv <= 0 || o.m <= 0 || o.n <= 0 ||
      o.hq % o.hkv != 0 || o.window < 0 || o.repeat < 0 || o.rotate < 0)
    fail("sizes must be positive and Hq a multiple of Hkv");
  return o;
}

} // namespace

int main(int argc, char **argv) {
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
  size_t numArgs = function->argTypes.size();
  if (numArgs != 4 && numArgs != 5)
    fail("@" + function->name +
         " must take (q, k, v, out [, logsumexp]) memrefs");

  // Host tensors with the requested sizes; static dims must agree.
  std::vector<std::vector<int64_t>> shapes = {{o.batch, o.hq, o.m, 0},
                                              {o.batch, o.hkv, o.n, 0},
                                              {o.batch, o.hkv, o.n, 0},
                                              {o.batch, o.hq, o.m, 0},
                                              {o.batch, o.hq, o.m}};
  std::vector<ElementKind> kinds;
  for (size_t i = 0; i < numArgs; ++i) {
    std::vector<int64_t> dims;
    ElementKind kind;
    if (!parseMemRef(function->argTypes[i], dims, kind) ||
        dims.size() != shapes[i].size())
      fail("argument " + std::to_string(i) + " has type '" +
           function->argTypes[i] + "', not an attention memref");
    for (size_t d = 0; d < dims.size(); ++d) {
      if (d == 3 && i < 4) // head dims are static
        shapes[i][d] = dims[d];
      if (dims[d] >= 0 && dims[d] != shapes[i][d])
        fail("argument " + std::to_string(i) + " (" + function->argTypes[i] +
             ") has static dim " + std::to_string(d) + " = " +
             std::to_string(dims[d]) + ", not " + std::to_string(shapes[i][d]));
    }
    kinds.push_back(kind);
  }

  // Device buffers first: a problem too large for the GPU fails here, before
  // the host spends time and memory on inputs.
  CudaDriver driver;
  if (!driver.open(error))
    fail(error);
  std::vector<Argument> args(numArgs);
  for (size_t i = 0; i < numArgs; ++i) {
    args[i].shape = shapes[i];
    size_t bytes = elementBytes(kinds[i]);
    for (int64_t dim : shapes[i])
      bytes *= static_cast<size_t>(dim);
    if (!driver.allocate(bytes, args[i].address, error))
      fail("cannot allocate " + std::to_string(bytes) +
           " bytes on the GPU for "
           "argument " +
           std::to_string(i) + ": " + error);
  }

  std::vector<std::unique_ptr<HostTensor>> host;
  for (size_t i = 0; i < numArgs; ++i)
    host.push_back(std::make_unique<HostTensor>(kinds[i], shapes[i]));
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (int i = 0; i < 3; ++i)
    for (int64_t e = 0; e < host[i]->numElements(); ++e)
      host[i]->set(e, uniform(rng));
  for (size_t i = 3; i < numArgs; ++i)
    host[i]->poison();
  for (size_t i = 0; i < numArgs; ++i) {
    size_t bytes = host[i]->numElements() * elementBytes(host[i]->kind());
    if (!driver.copyToDevice(args[i].address, host[i]->data(), bytes, error))
      fail(error);
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
    std::vector<PreparedLaunch> launches(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i)
      if (!driver.prepare(function->launches[i], kernels[i], set, launches[i],
                          error))
        fail(error);
    return launches;
  };
  auto runAll = [&](const std::vector<PreparedLaunch> &launches,
                    std::string &err) {
    for (const PreparedLaunch &p : launches)
      if (!driver.launch(p, err))
        return false;
    return true;
  };
  std::vector<PreparedLaunch> checked = prepare(args);
  if (!runAll(checked, error) || !driver.synchronize(error))
    fail(error);
  for (size_t i = 3; i < numArgs; ++i)
    if (!driver.copyToHost(
            host[i]->data(), args[i].address,
            host[i]->numElements() * elementBytes(host[i]->kind()), error))
      fail(error);

  // The float64 reference, rounded to the output type: on the CPU, or for
  // large problems (or when asked) with the plain reference kernel on the
  // GPU.
  int64_t d = shapes[0][3], dv = shapes[2][3], group = o.hq / o.hkv;
  double scale = 1.0 / std::sqrt(static_cast<double>(d));
  double work = static_cast<double>(o.batch) * o.hq * o.m * o.n * (d + dv);
  bool onGpu = o.reference == "gpu" ||
               (o.reference == "auto" && work > 1e9 && hasGpuReference());
  std::vector<double> refOut, refLse;
  if (onGpu) {
    ReferenceProblem problem{o.batch, o.hq,     o.hkv,   o.m,
                             o.n,     d,        dv,      host[0]->kind(),
                             scale,   o.causal, o.window};
    if (!gpuReferenceAttention(driver, problem, args[0].address,
                               args[1].address, args[2].address, refOut, refLse,
                               error))
      fail("the GPU reference failed: " + error);
  } else {
    refOut.assign(o.batch * o.hq * o.m * dv, 0);
    refLse.assign(o.batch * o.hq * o.m, 0);
    std::vector<double> s(o.n);
    for (int64_t b = 0; b < o.batch; ++b)
      for (int64_t h = 0; h < o.hq; ++h)
        for (int64_t i = 0; i < o.m; ++i) {
          int64_t row = (b * o.hq + h) * o.m + i;
          double mx = -std::numeric_limits<double>::infinity();
          for (int64_t j = 0; j < o.n; ++j) {
            bool keep = (!o.causal && !o.window) ||
                        (j <= i && (!o.window || i - j < o.window));
            double dot = 0;
            for (int64_t c = 0; keep && c < d; ++c)
              dot += host[0]->get(row * d + c) *
                     host[1]->get(((b * o.hkv + h / group) * o.n + j) * d + c);
            s[j] =
                keep ? dot * scale : -std::numeric_limits<double>::infinity();
            mx = std::max(mx, s[j]);
          }
          double sum = 0;
          for (int64_t j = 0; j < o.n; ++j)
            sum += std::isinf(s[j]) ? 0 : std::exp(s[j] - mx);
          for (int64_t c = 0; c < dv; ++c) {
            double ref = 0;
            for (int64_t j = 0; j < o.n && sum > 0; ++j)
              if (!std::isinf(s[j]))
                ref +=
                    std::exp(s[j] - mx) / sum *
                    host[2]->get(((b * o.hkv + h / group) * o.n + j) * dv + c);
            refOut[row * dv + c] = ref;
          }
          refLse[row] = sum > 0 ? mx + std::log(sum)
                                : -std::numeric_limits<double>::infinity();
        }
  }
  bool finite;
  double err = relativeError(*host[3], refOut, finite);
  if (numArgs == 5) {
    bool lseFinite;
    err = std::max(err, logsumexpError(*host[4], refLse, lseFinite));
    finite &= lseFinite;
  }
  bool wide = host[0]->kind() == ElementKind::F32;
  double tolerance = wide ? 1e-5 : 2e-3;
  bool pass = finite && err <= tolerance;

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
      size_t bytes = host[i]->numElements() * elementBytes(host[i]->kind());
      ok = driver.allocate(bytes, set[i].address, error) &&
           driver.copyToDevice(set[i].address, host[i]->data(), bytes, error);
    }
    if (!ok)
      break; // time with the copies that fit
    sets.push_back(std::move(set));
  }
  std::vector<std::vector<PreparedLaunch>> timedLaunches;
  for (const std::vector<Argument> &set : sets)
    timedLaunches.push_back(prepare(set));
  if (o.repeat > 0 && !runAll(timedLaunches.back(), error))
    fail(error); // warm-up
  std::vector<float> times;
  for (int r = 0; r < o.repeat; ++r) {
    float ms;
    const std::vector<PreparedLaunch> &launches =
        timedLaunches[r % timedLaunches.size()];
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
    std::printf("{\"function\": \"%s\", \"chip\": \"%s\", \"B\": %lld, "
                "\"Hq\": %lld, \"Hkv\": %lld, \"M\": %lld, \"N\": %lld, "
                "\"D\": %lld, \"causal\": %s, \"window\": %lld, "
                "\"error\": %.6e, \"tolerance\": %.1e, \"reference\": \"%s\", "
                "\"rotate\": %d, \"ms\": %.6f, \"tflops\": %.4f, "
                "\"pass\": %s}\n",
                function->name.c_str(), driver.chip().c_str(),
                (long long)o.batch, (long long)o.hq, (long long)o.hkv,
                (long long)o.m, (long long)o.n, (long long)d,
                o.causal ? "true" : "false", (long long)o.window, err,
                tolerance, onGpu ? "gpu" : "cpu", static_cast<int>(sets.size()),
                ms, tflops, pass ? "true" : "false");
    for (Argument &a : args)
      driver.free(a.address);
    return pass ? 0 : 1;
  }
  std::printf("attn-bundle-run: @%s on %s, B=%lld Hq=%lld Hkv=%lld M=%lld "
              "N=%lld D=%lld%s: error %.3e (tolerance %.0e, %s reference)%s: "
              "%s\n",
              function->name.c_str(), driver.chip().c_str(), (long long)o.batch,
              (long long)o.hq, (long long)o.hkv, (long long)o.m, (long long)o.n,
              (long long)d, o.window ? " window" : (o.causal ? " causal" : ""),
              err, tolerance, onGpu ? "GPU float64" : "CPU float64",
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
