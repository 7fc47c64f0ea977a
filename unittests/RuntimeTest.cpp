//===- RuntimeTest.cpp - the kernel-bundle runtime, without a GPU ---------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/Json.h"

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <string>

using namespace attn_runtime;

namespace {

int64_t eval(const std::string &text, const std::vector<Argument> &args) {
  Expr expr;
  std::string error;
  EXPECT_TRUE(Expr::parse(text, expr, error)) << error;
  int64_t value = -1;
  EXPECT_TRUE(evaluateIndex(expr, args, value, error)) << error;
  return value;
}

TEST(RuntimeExpr, EvaluatesWhatTheBundleWriterPrints) {
  std::vector<Argument> args(4);
  args[3].shape = {2, 8, 130, 64};
  EXPECT_EQ(eval("64", args), 64);
  EXPECT_EQ(eval("dim(%arg3, 2)", args), 130);
  EXPECT_EQ(eval("affine(()[s0] -> (s0 ceildiv 64), [dim(%arg3, 2)])", args),
            3);
  EXPECT_EQ(eval("affine(()[s0, s1] -> (s0 * 2 + s1 floordiv 4), [dim(%arg3, "
                 "0), dim(%arg3, 1)])",
                 args),
            6);
  EXPECT_EQ(
      eval("affine(()[s0] -> (-s0 + 200 + s0 mod 7), [dim(%arg3, 2)])", args),
      70 + 4);
  EXPECT_EQ(eval("ceildiv(dim(%arg3, 2), 64)", args), 3);
  EXPECT_EQ(eval("sub(dim(%arg3, 2), 30)", args), 100);
  // The softmax kernel's block size: whole warps, 64 to 1024 threads.
  const char *threads = "min(max(mul(ceildiv(dim(%arg3, 2), 512), 32), 64), "
                        "1024)";
  EXPECT_EQ(eval(threads, args), 64);
  args[3].shape[2] = 1 << 20;
  EXPECT_EQ(eval(threads, args), 1024);
  args[3].shape[2] = 5000;
  EXPECT_EQ(eval(threads, args), 320);
}

TEST(RuntimeExpr, RejectsWhatItCannotEvaluate) {
  Expr expr;
  std::string error;
  EXPECT_FALSE(Expr::parse("sqrt(4)", expr, error));
  EXPECT_NE(error.find("unknown bundle expression 'sqrt(4)'"),
            std::string::npos);
  ASSERT_TRUE(Expr::parse("dim(%arg1, 5)", expr, error));
  std::vector<Argument> args(2);
  args[1].shape = {3, 4};
  int64_t value;
  EXPECT_FALSE(evaluateIndex(expr, args, value, error));
  EXPECT_EQ(error, "dim 5 of argument 1, which has rank 2");
}

TEST(RuntimeLaunch, PacksMemrefDescriptorsAndScalars) {
  Launch launch;
  std::string error;
  for (const char *text : {"dim(%arg0, 1)", "%arg0", "f32(-Inf)", "7"}) {
    launch.operands.emplace_back();
    ASSERT_TRUE(Expr::parse(text, launch.operands.back(), error)) << error;
  }
  std::vector<Argument> args(1);
  args[0].address = 0x1000;
  args[0].shape = {2, 3, 4};
  std::vector<Param> params;
  ASSERT_TRUE(launch.params(args, params, error)) << error;
  // 1 index + (2 pointers + offset + 3 sizes + 3 strides) + f32 + index.
  ASSERT_EQ(params.size(), 1u + 9u + 1u + 1u);
  EXPECT_EQ(params[0].i64, 3);
  EXPECT_EQ(params[1].kind, Param::Kind::Pointer);
  EXPECT_EQ(params[1].pointer, 0x1000u);
  EXPECT_EQ(params[2].pointer, 0x1000u);
  EXPECT_EQ(params[3].i64, 0);
  EXPECT_EQ(params[4].i64, 2);
  EXPECT_EQ(params[6].i64, 4);
  EXPECT_EQ(params[7].i64, 12); // strides 12, 4, 1
  EXPECT_EQ(params[8].i64, 4);
  EXPECT_EQ(params[9].i64, 1);
  EXPECT_TRUE(std::isinf(params[10].f32) && params[10].f32 < 0);
  EXPECT_EQ(params[11].i64, 7);

  std::vector<Argument> none;
  EXPECT_FALSE(launch.params(none, params, error));
}

TEST(RuntimeExpr, SmCountAndWorkspaceComeFromTheEnvironment) {
  Expr expr;
  std::string error;
  std::vector<Argument> args(1);
  args[0].shape = {64, 1 << 20};
  // The softmax kernel's blocks: a row split across up to one block per SM.
  ASSERT_TRUE(Expr::parse("mul(dim(%arg0, 0), min(ceildiv(dim(%arg0, 1), "
                          "8192), sm_count))",
                          expr, error))
      << error;
  int64_t value = 0;
  EXPECT_FALSE(evaluateIndex(expr, args, value, error));
  EXPECT_NE(error.find("needs the GPU's SM count (sm_count)"),
            std::string::npos)
      << error;
  Environment environment;
  environment.smCount = 132;
  ASSERT_TRUE(evaluateIndex(expr, args, value, error, &environment)) << error;
  EXPECT_EQ(value, 64 * 128);
  environment.smCount = 100;
  ASSERT_TRUE(evaluateIndex(expr, args, value, error, &environment)) << error;
  EXPECT_EQ(value, 64 * 100);

  // The workspace is a memref<?xi32> operand: a 1-D descriptor of words.
  Launch launch;
  for (const char *text : {"workspace", "sm_count"}) {
    launch.operands.emplace_back();
    ASSERT_TRUE(Expr::parse(text, launch.operands.back(), error)) << error;
  }
  std::vector<Param> params;
  EXPECT_FALSE(launch.params(args, params, error, &environment));
  EXPECT_NE(error.find("needs the runtime's workspace"), std::string::npos)
      << error;
  environment.workspace = 0x2000;
  environment.workspaceBytes = 64;
  ASSERT_TRUE(launch.params(args, params, error, &environment)) << error;
  ASSERT_EQ(params.size(), 5u + 1u);
  EXPECT_EQ(params[0].pointer, 0x2000u);
  EXPECT_EQ(params[1].pointer, 0x2000u);
  EXPECT_EQ(params[2].i64, 0);
  EXPECT_EQ(params[3].i64, 16);
  EXPECT_EQ(params[4].i64, 1);
  EXPECT_EQ(params[5].i64, 100);
  // The workspace is not an index.
  ASSERT_TRUE(Expr::parse("add(workspace, 1)", expr, error));
  EXPECT_FALSE(evaluateIndex(expr, args, value, error, &environment));
}

std::string writeBundle(const std::string &name, const std::string &json,
                        bool withPtx = true) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + name + "-bundle.json") << json;
  if (withPtx)
    std::ofstream(dir + name + "-k.ptx") << ".version 8.0\n.target sm_90\n";
  return dir + name + "-bundle.json";
}

const char *kBundle = R"json({
  "version": 1,
  "binaries": [{"name": "k", "file": "NAME-k.ptx", "format": "ptx",
                "target": "#nvvm.target<chip = \"sm_90\">"}],
  "functions": [{"name": "attention",
    "args": ["memref<?x8x?x64xf16>"],
    "launches": [{"module": "k", "kernel": "k",
      "grid": ["affine(()[s0] -> (s0 ceildiv 64), [dim(%arg0, 2)])", "8", "1"],
      "block": ["64", "1", "1"],
      "operands": ["%arg0", "f32(1.25E-1)"]}]}]
})json";

std::string bundleText(const std::string &name) {
  std::string text = kBundle;
  text.replace(text.find("NAME"), 4, name);
  return text;
}

TEST(RuntimeBundle, LoadsBundles) {
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(
      Bundle::load(writeBundle("good", bundleText("good")), bundle, error))
      << error;
  ASSERT_NE(bundle.function("attention"), nullptr);
  ASSERT_NE(bundle.binary("k"), nullptr);
  EXPECT_EQ(bundle.binary("k")->format, "ptx");
  EXPECT_NE(bundle.binary("k")->image.find(".target sm_90"), std::string::npos);
  const Launch &launch = bundle.function("attention")->launches[0];
  std::vector<Argument> args(1);
  args[0].shape = {1, 8, 130, 64};
  int64_t gridX;
  ASSERT_TRUE(evaluateIndex(launch.grid[0], args, gridX, error));
  EXPECT_EQ(gridX, 3);
  // A launch without "shared_memory_bytes" needs no dynamic shared memory.
  int64_t shared = -1;
  ASSERT_TRUE(evaluateIndex(launch.sharedMemoryBytes, args, shared, error));
  EXPECT_EQ(shared, 0);

  std::string withShared = bundleText("shared");
  withShared.replace(withShared.find(R"("block")"), 0,
                     R"("shared_memory_bytes": "76288", )");
  ASSERT_TRUE(Bundle::load(writeBundle("shared", withShared), bundle, error))
      << error;
  ASSERT_TRUE(
      evaluateIndex(bundle.function("attention")->launches[0].sharedMemoryBytes,
                    args, shared, error));
  EXPECT_EQ(shared, 76288);
}

TEST(RuntimeBundle, RejectsBrokenBundlesWithAReason) {
  Bundle bundle;
  std::string error;
  EXPECT_FALSE(Bundle::load(::testing::TempDir() + "missing-bundle.json",
                            bundle, error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;

  std::string text = bundleText("cut");
  EXPECT_FALSE(Bundle::load(writeBundle("cut", text.substr(0, text.size() / 2)),
                            bundle, error));
  EXPECT_NE(error.find("is not a kernel bundle: invalid JSON at byte"),
            std::string::npos)
      << error;

  EXPECT_FALSE(Bundle::load(writeBundle("noptx", bundleText("noptx"), false),
                            bundle, error));
  EXPECT_NE(error.find("cannot read"), std::string::npos) << error;

  std::string v2 = bundleText("v2");
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  EXPECT_FALSE(Bundle::load(writeBundle("v2", v2), bundle, error));
  EXPECT_NE(error.find("unsupported \"version\""), std::string::npos) << error;
}

TEST(RuntimeDriver, ReportsAMissingDriverOrGpu) {
  CudaDriver driver;
  std::string error;
  if (driver.open(error)) {
    EXPECT_EQ(driver.chip().rfind("sm_", 0), 0u);
    return;
  }
  // CI has no driver: the message says so instead of crashing.
  EXPECT_TRUE(error.rfind("no CUDA driver", 0) == 0 ||
              error.rfind("cuInit", 0) == 0)
      << error;
}

} // namespace
