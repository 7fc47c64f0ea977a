// Reads a kernel bundle and evaluates a launch size with nothing but the
// installed runtime.

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/Json.h"

#include <cstdio>

static const char *kBundle = R"json({
  "format": "attn-kernel-bundle", "version": 2, "binaries": [],
  "functions": [{"name": "f",
    "args": [{"name": "q", "dtype": "f16", "shape": [null, 8, null, 64]}],
    "launches": []}]})json";

int main() {
  using namespace attn_runtime;
  Bundle bundle;
  std::string error;
  if (!Bundle::parse(kBundle, "", bundle, error)) {
    std::printf("error: %s\n", error.c_str());
    return 1;
  }
  const Function &f = bundle.functions[0];
  JsonValue json;
  Expr grid;
  if (!parseJson(R"({"op": "ceildiv", "lhs": {"dim": {"arg": "q",
                     "index": 2}}, "rhs": {"const": 64}})",
                 json, error) ||
      !Expr::fromJson(json, f.args, grid, error))
    return 1;
  std::vector<Argument> args(1);
  args[0].shape = {1, 8, 130, 64};
  int64_t value = 0;
  if (!evaluateIndex(grid, args, value, error))
    return 1;
  std::printf("runtime: @%s takes %s; %s = %lld for q of length 130\n",
              f.name.c_str(), f.args[0].str().c_str(),
              grid.str(&f.args).c_str(), static_cast<long long>(value));
  return 0;
}
