//===- BundleFuzzer.cpp - libFuzzer target for kernel bundles -------------===//
//
// Feeds each input to the JSON reader, to the launch-expression reader (an
// expression tree over two arguments), and to the bundle reader as
// bundle.json; for every bundle that loads, checks a few argument shapes
// against each function's shape contract and evaluates every launch
// expression for them, as a launch would, and every region program. Any crash,
// sanitizer report, timeout or out-of-memory is a bug in the runtime: its
// readers must end in an error for every input.
//
// The binaries the bundles name are read from a scratch directory holding
// the files the seed corpus (fuzz/corpus/bundle) names.
//
//===----------------------------------------------------------------------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Json.h"
#include "AttnRuntime/Region.h"
#include "AttnRuntime/ShapeCheck.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

using namespace attn_runtime;

namespace {

std::string directory;

/// Sizes for the dynamic dims: ordinary ones, empty, and ones whose
/// products overflow, so that evaluation meets every edge.
const int64_t kSizes[] = {1,
                          7,
                          130,
                          0,
                          int64_t(1) << 20,
                          int64_t(1) << 40,
                          std::numeric_limits<int64_t>::max()};

void evaluateAll(const Expr &expr, const std::vector<Argument> &args,
                 const Environment &environment) {
  int64_t value;
  std::string error;
  (void)evaluateIndex(expr, args, value, error, &environment);
  (void)evaluateIndex(expr, args, value, error);
}

void exercise(const Function &function) {
  size_t numArgs = function.contract.argDims.size();
  for (size_t pattern = 0; pattern < 2 * std::size(kSizes); ++pattern) {
    std::vector<std::vector<int64_t>> shapes;
    std::vector<Argument> args(numArgs);
    for (size_t i = 0; i < numArgs; ++i) {
      std::vector<int64_t> shape = function.contract.argDims[i];
      for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] < 0)
          // One size for all (shapes that agree), or one per position.
          shape[d] = pattern < std::size(kSizes)
                         ? kSizes[pattern]
                         : kSizes[(pattern + i + d) % std::size(kSizes)];
      args[i].address = 0x1000 * (i + 1);
      args[i].shape = shape;
      shapes.push_back(std::move(shape));
    }
    (void)function.checkArguments(shapes);
    (void)function.contract.check(shapes);
    Environment environment;
    environment.smCount = pattern % 2 ? 132 : 1;
    environment.workspace = 0x100000;
    environment.workspaceBytes = int64_t(kSizes[pattern % std::size(kSizes)]);
    for (const Launch &launch : function.launches) {
      for (int d = 0; d < 3; ++d) {
        evaluateAll(launch.grid[d], args, environment);
        evaluateAll(launch.block[d], args, environment);
      }
      evaluateAll(launch.sharedMemoryBytes, args, environment);
      evaluateAll(launch.workspaceBytes, args, environment);
      for (const Operand &operand : launch.operands)
        evaluateAll(operand.value, args, environment);
      std::vector<Param> params;
      std::string error;
      (void)launch.params(args, params, error, &environment);
    }
  }
  // Region programs, evaluated at positions that meet integer edges, with
  // a small captured tensor of each kind for every argument they read:
  // any value or error, never undefined behaviour.
  HostTensor ints(ElementKind::I32, {3}), floats(ElementKind::F32, {3});
  for (int64_t e = 0; e < 3; ++e) {
    ints.set(e, e - 1);
    floats.set(e, 0.5 * e);
  }
  for (const Computation &c : function.computes)
    for (const Computation::Region *region : {&c.maskMod, &c.scoreMod}) {
      if (!region->hasProgram)
        continue;
      const RegionProgram &program = region->program;
      for (int64_t value : {int64_t(0), int64_t(2), int64_t(-1),
                            std::numeric_limits<int64_t>::min()}) {
        std::vector<Scalar> args;
        for (const ScalarType &type : program.args)
          args.push_back(type.isFloat ? Scalar::ofFloat(value * 0.75)
                                      : Scalar::ofInt(value));
        std::vector<const HostTensor *> arguments(numArgs + 1, &ints);
        arguments[value & 1] = &floats;
        Scalar result;
        std::string why;
        (void)evaluateRegion(program, args, arguments, result, why);
      }
    }
  // Shapes the contract must refuse: one argument short, negative sizes.
  std::vector<std::vector<int64_t>> shapes(function.contract.argDims);
  (void)function.checkArguments(shapes);
  for (std::vector<int64_t> &shape : shapes)
    for (int64_t &size : shape)
      size = -size - 1;
  (void)function.checkArguments(shapes);
  if (!shapes.empty()) {
    shapes.pop_back();
    (void)function.checkArguments(shapes);
  }
}

} // namespace

const char *const kBinaries[] = {"k.ptx", "a.ptx", "k.cubin"};

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  char path[] = "/tmp/attn-bundle-fuzzer-XXXXXX";
  if (!mkdtemp(path))
    std::abort();
  directory = std::string(path) + "/";
  for (const char *name : kBinaries)
    std::ofstream(directory + name) << ".version 8.0\n.target sm_90\n";
  std::atexit([] {
    for (const char *name : kBinaries)
      std::remove((directory + name).c_str());
    rmdir(directory.c_str());
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;

  JsonValue json;
  Expr expr;
  const std::vector<ArgumentType> types = {{"q", "f16", 2, {-1, 8, -1, 64}},
                                           {"k", "i32", 4, {-1, -1}}};
  if (parseJson(text, json, error) &&
      Expr::fromJson(json, types, expr, error)) {
    // Sizes that disagree with the types: evaluation must not trust them.
    std::vector<Argument> args(2);
    args[0].shape = {2, 8, 130, 64};
    args[1].shape = {std::numeric_limits<int64_t>::max()};
    Environment environment;
    environment.smCount = 132;
    evaluateAll(expr, args, environment);
  }

  Bundle bundle;
  if (!Bundle::parse(text, directory, bundle, error))
    return 0;
  for (const Function &function : bundle.functions)
    exercise(function);
  return 0;
}
