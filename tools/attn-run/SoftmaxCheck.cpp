//===- SoftmaxCheck.cpp - attn-run's check of attn.softmax ----------------===//

#include "Harness.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <random>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;

int attn_run::runSoftmax(attn::SoftmaxOp op, const SoftmaxSweep &sweep,
                         CompileFn compile) {
  auto func = op->getParentOfType<func::FuncOp>();
  auto input = dyn_cast<BlockArgument>(op.getInput());
  auto output = dyn_cast<BlockArgument>(op.getOutput());
  if (!func || !input || !output || func.getNumArguments() != 2 ||
      input.getArgNumber() != 0 || output.getArgNumber() != 1)
    fail("attn-run checks a softmax in a func.func whose arguments are its "
         "input and its output, in that order");
  auto inType = cast<RankedTensorType>(input.getType());
  auto outType = cast<RankedTensorType>(output.getType());
  if (inType.getRank() != 2)
    fail("attn-run checks softmax on [rows, length] tensors");
  std::vector<int64_t> rows =
      sizesFor("rows", sweep.rows, inType.getDimSize(0), 4);
  std::vector<int64_t> lengths =
      sizesFor("row-len", sweep.lengths, inType.getDimSize(1), 1000);
  Type inElement = inType.getElementType(),
       outElement = outType.getElementType();
  // Every case's memory, checked before compiling.
  auto footprint = [&](int64_t m, int64_t n) {
    Footprint footprint(llvm::formatv("rows={0} length={1}", m, n));
    footprint.add("the input", {m, n}, elementBytes(*kindOf(inElement)));
    footprint.add("the output", {m, n}, elementBytes(*kindOf(outElement)));
    footprint.add("the float64 reference", {m, n}, sizeof(double));
    return footprint;
  };
  for (int64_t m : rows)
    for (int64_t n : lengths)
      footprint(m, n).checkFits();

  double compileMs;
  std::unique_ptr<attn::CpuKernel> kernel;
  std::unique_ptr<GpuTarget> gpu = compile(func, kernel, compileMs);
  std::string where = gpu ? "gpu (" + gpu->chip() + ")" : "cpu";
  bool wide = inElement.isF32() && outElement.isF32();
  double allowed = sweep.tolerance > 0 ? sweep.tolerance : (wide ? 1e-5 : 2e-3);
  std::string typeName;
  llvm::raw_string_ostream(typeName) << inElement << "->" << outElement;
  if (!sweep.json)
    llvm::outs() << "attn-run: target=" << where << " softmax @"
                 << func.getName() << " dtype=" << typeName
                 << llvm::formatv(", compiled once in {0:f1} ms\n", compileMs);

  std::mt19937_64 rng(sweep.seed);
  std::uniform_real_distribution<double> uniform(-30.0, 30.0);
  unsigned cases = 0, failures = 0;
  double worst = 0;
  for (int64_t m : rows)
    for (int64_t n : lengths) {
      footprint(m, n).announce();
      std::vector<std::unique_ptr<HostTensor>> buffers;
      buffers.push_back(
          std::make_unique<HostTensor>(*kindOf(inElement), std::vector{m, n}));
      buffers.push_back(
          std::make_unique<HostTensor>(*kindOf(outElement), std::vector{m, n}));
      HostTensor &x = *buffers[0], &y = *buffers[1];
      double negInf = -std::numeric_limits<double>::infinity();
      for (int64_t e = 0; e < x.numElements(); ++e) {
        bool lastRowMasked = m > 1 && e / n == m - 1;
        x.set(e, lastRowMasked || rng() % 16 == 0 ? negInf : uniform(rng));
      }
      y.poison();
      double runMs;
      if (gpu) {
        llvm::Expected<double> ms = gpu->run(buffers, nullptr);
        if (!ms)
          fail(llvm::toString(ms.takeError()));
        runMs = *ms;
      } else {
        runMs = invoke(*kernel, buffers);
      }
      // One read and one write of the rows.
      double gbPerS = m * n *
                      double(elementBytes(x.kind()) + elementBytes(y.kind())) /
                      (runMs * 1e6);

      std::vector<double> ref(m * n, 0.0);
      for (int64_t r = 0; r < m; ++r) {
        double max = negInf, sum = 0;
        for (int64_t c = 0; c < n; ++c)
          max = std::max(max, x.get(r * n + c));
        if (max == negInf)
          continue; // all -inf: zeros
        for (int64_t c = 0; c < n; ++c)
          sum += std::exp(x.get(r * n + c) - max);
        for (int64_t c = 0; c < n; ++c)
          ref[r * n + c] = std::exp(x.get(r * n + c) - max) / sum;
      }
      bool finite;
      double error = relativeError(y, ref, finite);
      bool pass = finite && error <= allowed;
      ++cases;
      failures += !pass;
      worst = worseError(worst, error);
      if (sweep.json)
        llvm::outs() << llvm::formatv(
            "{{\"target\": \"{7}\", \"op\": \"softmax\", \"rows\": {0}, "
            "\"length\": {1}, \"dtype\": \"{2}\", \"error\": {3:e}, "
            "\"tolerance\": {4:e}, \"run_ms\": {5:f3}, \"gb_per_s\": "
            "{8:f1}, \"pass\": {6}}\n",
            m, n, typeName, error, allowed, runMs, pass ? "true" : "false",
            gpu ? "gpu" : "cpu", gbPerS);
      else
        llvm::outs() << llvm::formatv(
            "  rows={0} length={1}: run {2:f3} ms ({6:f1} GB/s), error "
            "{3:e}{4}: {5}\n",
            m, n, runMs, error,
            finite ? "" : ", non-finite or unwritten outputs",
            pass ? "PASS" : "FAIL", gbPerS);
    }
  return summarize(sweep.json, cases, failures, worst, allowed);
}
