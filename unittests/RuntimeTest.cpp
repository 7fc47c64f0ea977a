//===- RuntimeTest.cpp - the kernel-bundle runtime, without a GPU ---------===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Json.h"
#include "AttnRuntime/ShapeCheck.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

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

//===- Limits and checks found by fuzzing ---------------------------------===//

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The error of evaluating `text` (which must parse), or "" when it
/// evaluates.
std::string evalError(const std::string &text,
                      const std::vector<Argument> &args = {}) {
  Expr expr;
  std::string error;
  if (!Expr::parse(text, expr, error))
    return "parse: " + error;
  int64_t value;
  return evaluateIndex(expr, args, value, error) ? "" : error;
}

std::string parseError(const std::string &text) {
  Expr expr;
  std::string error;
  return Expr::parse(text, expr, error) ? "" : error;
}

std::string nestedArrays(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(RuntimeJson, LimitsNesting) {
  // deep.json: 100,000 nested brackets overflowed the stack.
  JsonValue value;
  std::string error;
  EXPECT_FALSE(parseJson(std::string(100000, '['), value, error));
  EXPECT_EQ(error, "JSON nested deeper than 64 levels at byte 64");
  EXPECT_FALSE(parseJson(nestedArrays(100000), value, error));
  EXPECT_TRUE(parseJson(nestedArrays(kMaxJsonDepth), value, error)) << error;
  EXPECT_FALSE(parseJson(nestedArrays(kMaxJsonDepth + 1), value, error));
  std::string objects;
  for (int i = 0; i < 1000; ++i)
    objects += "{\"a\":";
  EXPECT_FALSE(parseJson(objects + "1" + std::string(1000, '}'), value, error));
  EXPECT_TRUE(contains(error, "nested deeper than 64 levels")) << error;
}

TEST(RuntimeJson, LimitsTheNumberOfValues) {
  // Each value takes about 150 bytes: 16 MiB of "0," would take gigabytes.
  JsonValue value;
  std::string error;
  std::string many = "[";
  for (int64_t i = 1; i < kMaxJsonValues; ++i) // and the array itself
    many += "0,";
  EXPECT_FALSE(parseJson(many + "0]", value, error));
  EXPECT_TRUE(contains(error, "more than 1048576 values")) << error;
  many.back() = ']';
  EXPECT_TRUE(parseJson(many, value, error)) << error;
}

TEST(RuntimeJson, RejectsMalformedEscapesAndKeepsTheLastOfARepeatedKey) {
  JsonValue value;
  std::string error;
  EXPECT_FALSE(parseJson(R"("\u00zz")", value, error));
  EXPECT_FALSE(parseJson(R"("\u-7ff")", value, error));
  EXPECT_FALSE(parseJson(R"("\u00e9")", value, error)); // not ASCII
  ASSERT_TRUE(parseJson(R"("\u0041\u004a")", value, error)) << error;
  EXPECT_EQ(value.string, "AJ");
  ASSERT_TRUE(parseJson(R"({"a": [1, 2], "a": [3]})", value, error));
  ASSERT_EQ(value.get("a")->array.size(), 1u);
  EXPECT_EQ(value.get("a")->array[0].number, 3);
}

TEST(RuntimeExpr, LimitsSizeAndNesting) {
  // nested_expr.json: 30,000 nested add() took quadratic memory.
  auto nested = [](int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i)
      text += "add(";
    text += "1";
    for (int i = 0; i < depth; ++i)
      text += ", 1)";
    return text;
  };
  std::string error = parseError(nested(30000));
  EXPECT_TRUE(contains(error, "launch expression of 240001 bytes; at most "
                              "65536 are allowed"))
      << error;
  EXPECT_EQ(parseError(nested(100)),
            "launch expression nested deeper than 64 levels");
  EXPECT_EQ(evalError(nested(kMaxExprDepth - 1)), "");
  EXPECT_EQ(parseError(nested(kMaxExprDepth)),
            "launch expression nested deeper than 64 levels");
  // Each form nests: dim, affine operands.
  std::string dims = "%arg0";
  for (int i = 0; i < 100; ++i)
    dims = "dim(" + dims + ", 0)";
  EXPECT_TRUE(contains(parseError(dims), "nested deeper than 64")) << error;
  std::string affines = "1";
  for (int i = 0; i < 100; ++i)
    affines = "affine(()[s0] -> (s0), [" + affines + "])";
  EXPECT_TRUE(contains(parseError(affines), "nested deeper than 64"));

  // An Expr built in code is bounded when evaluated, too.
  Expr one, deep;
  one.kind = deep.kind = Expr::Kind::Int;
  one.value = deep.value = 1;
  for (int i = 0; i < 200; ++i) {
    Expr parent;
    parent.kind = Expr::Kind::Binary;
    parent.op = "add";
    parent.operands = {std::move(deep), one};
    deep = std::move(parent);
  }
  int64_t value;
  EXPECT_FALSE(evaluateIndex(deep, {}, value, error));
  EXPECT_EQ(error, "launch expression nested deeper than 64 levels");
}

TEST(RuntimeExpr, LimitsAffineNesting) {
  // affine_deep.json: 100,000 nested parentheses overflowed the stack.
  auto affine = [](int depth, const std::string &open = "(") {
    std::string parens;
    for (int i = 0; i < depth; ++i)
      parens += open;
    return "affine(()[s0] -> (" + parens + "s0" +
           std::string(open == "(" ? depth : 0, ')') + "), [7])";
  };
  std::string error = parseError(affine(100000));
  EXPECT_TRUE(contains(error, "launch expression of 200027 bytes")) << error;
  error = parseError(affine(100));
  EXPECT_TRUE(
      contains(error, "nesting deeper than 64 levels in affine expression"))
      << error;
  EXPECT_EQ(evalError(affine(kMaxExprDepth - 1)), "");
  // Unary minus recurses as well.
  error = parseError(affine(100, "-"));
  EXPECT_TRUE(contains(error, "nesting deeper than 64 levels")) << error;
  EXPECT_EQ(evalError(affine(10, "-")), "");
}

TEST(RuntimeExpr, EvaluationIsOverflowChecked) {
  // intmin.json: INT64_MIN / -1 trapped with SIGFPE.
  EXPECT_EQ(evalError("div(-9223372036854775808, -1)"),
            "integer overflow in a launch expression: "
            "div(-9223372036854775808, -1)");
  EXPECT_EQ(evalError("ceildiv(-9223372036854775808, -1)"),
            "integer overflow in a launch expression: "
            "ceildiv(-9223372036854775808, -1)");
  EXPECT_EQ(evalError("add(9223372036854775807, 1)"),
            "integer overflow in a launch expression: "
            "add(9223372036854775807, 1)");
  EXPECT_EQ(evalError("sub(-9223372036854775808, 1)"),
            "integer overflow in a launch expression: "
            "sub(-9223372036854775808, 1)");
  EXPECT_EQ(evalError("mul(4611686018427387904, 2)"),
            "integer overflow in a launch expression: "
            "mul(4611686018427387904, 2)");
  EXPECT_EQ(evalError("div(7, 0)"),
            "division by zero in a launch expression: div(7, 0)");
  EXPECT_EQ(evalError("ceildiv(7, sub(3, 3))"),
            "division by zero in a launch expression: ceildiv(7, 0)");
  // Integers that do not fit are errors, not saturated.
  EXPECT_EQ(parseError("99999999999999999999"),
            "integer '99999999999999999999' does not fit in 64 bits");
  EXPECT_EQ(parseError("%arg99999999999999999999"),
            "malformed argument '%arg99999999999999999999'");
  EXPECT_EQ(parseError("f32(1.5x)"), "malformed f32 constant 'f32(1.5x)'");

  std::vector<Argument> args(1);
  args[0].shape = {kMax, -5};
  EXPECT_EQ(eval("ceildiv(dim(%arg0, 1), 2)", args), -2);
  EXPECT_EQ(eval("ceildiv(-4, 2)", args), -2);
  EXPECT_EQ(eval("div(-9223372036854775808, 1)", args), kMin);
  EXPECT_EQ(eval("min(dim(%arg0, 0), dim(%arg0, 1))", args), -5);
  EXPECT_EQ(evalError("add(dim(%arg0, 0), 1)", args),
            "integer overflow in a launch expression: "
            "add(9223372036854775807, 1)");
}

TEST(RuntimeExpr, AffineEvaluationIsOverflowChecked) {
  // affine_intmin.json: INT64_MIN floordiv -1 trapped with SIGFPE.
  auto affine = [](const std::string &map, const std::string &operand) {
    return "affine(()[s0] -> (" + map + "), [" + operand + "])";
  };
  const std::string min = "-9223372036854775808";
  EXPECT_EQ(evalError(affine("s0 floordiv -1", min)),
            "integer overflow (-9223372036854775808 floordiv -1) in affine "
            "expression 's0 floordiv -1'");
  EXPECT_TRUE(contains(evalError(affine("s0 ceildiv -1", min)),
                       "integer overflow (-9223372036854775808 ceildiv -1)"));
  EXPECT_TRUE(contains(evalError(affine("s0 * 2", "4611686018427387904")),
                       "integer overflow (4611686018427387904 * 2)"));
  EXPECT_TRUE(contains(evalError(affine("s0 + 1", "9223372036854775807")),
                       "integer overflow (9223372036854775807 + 1)"));
  EXPECT_TRUE(contains(evalError(affine("s0 - 1", min)),
                       "integer overflow (-9223372036854775808 - 1)"));
  EXPECT_TRUE(contains(evalError(affine("-s0", min)),
                       "integer overflow (0 - -9223372036854775808)"));
  EXPECT_EQ(evalError(affine("s0 mod (s0 - 7)", "7")),
            "division by zero (7 mod 0) in affine expression "
            "'s0 mod (s0 - 7)'");
  EXPECT_TRUE(contains(evalError(affine("5 floordiv (s0 - 7)", "7")),
                       "division by zero (5 floordiv 0)"));
  // INT64_MIN mod -1 traps in C++; it is 0.
  std::vector<Argument> none;
  EXPECT_EQ(eval(affine("s0 mod -1", min), none), 0);
  EXPECT_EQ(eval(affine("s0 mod -3", "-7"), none), 2);
  EXPECT_EQ(eval(affine("s0 floordiv 2", "-7"), none), -4);
  EXPECT_EQ(eval(affine("s0 ceildiv 2", "-7"), none), -3);
  // The most negative literal is one token, not minus an overflow.
  EXPECT_EQ(eval(affine("-9223372036854775808 + s0", "0"), none), kMin);
  EXPECT_TRUE(contains(parseError(affine("9223372036854775808 + s0", "0")),
                       "integer 9223372036854775808 out of range"));
  // Names that are not symbols, and syntax errors, fail when loading.
  EXPECT_TRUE(contains(parseError(affine("s1 + 1", "0")),
                       "unknown name 's1' in affine expression"));
  EXPECT_TRUE(contains(parseError(affine("s0 +", "0")), "an unexpected end"));
  EXPECT_TRUE(contains(parseError(affine("(s0", "0")), "a missing ')'"));
  EXPECT_TRUE(contains(parseError(affine("s0 s0", "0")), "unexpected 's0'"));
  EXPECT_TRUE(contains(parseError("affine(()[s0] -> (s0), 3)"),
                       "malformed affine expression"));
  EXPECT_TRUE(contains(parseError("affine(()[s0] -> (s0), [1, 2])"),
                       "a different number of symbols and operands"));
  // Dims come first, then symbols; operands may be affine themselves.
  EXPECT_EQ(eval("affine((d0)[s0] -> (d0 * 10 + s0), [3, 4])", none), 34);
  EXPECT_EQ(eval("affine(()[s0] -> (s0 * 2), [affine(()[s0] -> (s0 + 1), "
                 "[4])])",
                 none),
            10);
}

TEST(RuntimeLaunch, StridesAreOverflowChecked) {
  Launch launch;
  std::string error;
  launch.operands.emplace_back();
  ASSERT_TRUE(Expr::parse("%arg0", launch.operands.back(), error));
  std::vector<Argument> args(1);
  args[0].shape = {2, int64_t(1) << 32, int64_t(1) << 32};
  std::vector<Param> params;
  EXPECT_FALSE(launch.params(args, params, error));
  EXPECT_EQ(error, "a memref operand's strides overflow int64");
}

TEST(RuntimeBundle, ParsesMemRefTypes) {
  std::vector<int64_t> dims;
  std::string element, error;
  int64_t bytes = 0;
  ASSERT_TRUE(
      parseMemRefType("memref<?x8x?x64xbf16>", dims, element, bytes, error));
  EXPECT_EQ(dims, (std::vector<int64_t>{-1, 8, -1, 64}));
  EXPECT_EQ(element, "bf16");
  EXPECT_EQ(bytes, 2);
  ASSERT_TRUE(parseMemRefType("memref<?xindex>", dims, element, bytes, error));
  EXPECT_EQ(dims, (std::vector<int64_t>{-1}));
  EXPECT_EQ(element, "index");
  EXPECT_EQ(bytes, 8);
  ASSERT_TRUE(parseMemRefType("memref<f32>", dims, element, bytes, error));
  EXPECT_TRUE(dims.empty());
  for (const char *bad :
       {"memref<?x64xf16, strided<[64, 1]>>", "memref<?xf8>", "tensor<?xf32>",
        "memref<?x?>", "memref<-1xf32>", "memref<99999999999999999999xf32>",
        "memref<4x>", "", "memref<", "memref<?xi32, 3>"}) {
    EXPECT_FALSE(parseMemRefType(bad, dims, element, bytes, error)) << bad;
    EXPECT_TRUE(contains(error, "is not a memref of")) << error;
  }
}

std::string writeIn(const std::string &dir, const std::string &name,
                    const std::string &text) {
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

std::string withFile(const std::string &file) {
  std::string text = kBundle;
  text.replace(text.find("NAME-k.ptx"), 10, file);
  return text;
}

TEST(RuntimeBundle, BinariesArePlainFilesInTheBundlesDirectory) {
  // passwd.json, devzero.json: "file" named any path, read without a limit.
  std::string dir = ::testing::TempDir() + "binaries";
  Bundle bundle;
  std::string error;
  for (const char *file : {"../../../etc/passwd", "/dev/zero", "sub/k.ptx",
                           "..", ".", "", "a\\\\b", "k.ptx\\u0000x"}) {
    EXPECT_FALSE(Bundle::parse(withFile(file), dir, bundle, error)) << file;
    EXPECT_TRUE(contains(error, "which is not a plain file name in the "
                                "bundle's directory"))
        << error;
  }
  EXPECT_TRUE(contains(error, "names file 'k.ptx\\x00x'")) << error;

  writeIn(dir, "k.ptx", ".version 8.0\n");
  ASSERT_TRUE(Bundle::parse(withFile("k.ptx"), dir, bundle, error)) << error;
  EXPECT_EQ(bundle.binary("k")->image, ".version 8.0\n");

  // Not regular files: a directory, a FIFO (reading would wait), and any
  // symbolic link (to a device, or to a file outside the directory).
  ::mkdir((dir + "/d.ptx").c_str(), 0755);
  EXPECT_FALSE(Bundle::parse(withFile("d.ptx"), dir, bundle, error));
  EXPECT_TRUE(contains(error, "d.ptx' is a directory, not a regular file"))
      << error;
  ::unlink((dir + "/f.ptx").c_str());
  ASSERT_EQ(::mkfifo((dir + "/f.ptx").c_str(), 0644), 0);
  EXPECT_FALSE(Bundle::parse(withFile("f.ptx"), dir, bundle, error));
  EXPECT_TRUE(contains(error, "f.ptx' is a FIFO, not a regular file")) << error;
  ::unlink((dir + "/z.ptx").c_str());
  ASSERT_EQ(::symlink("/dev/zero", (dir + "/z.ptx").c_str()), 0);
  EXPECT_FALSE(Bundle::parse(withFile("z.ptx"), dir, bundle, error));
  EXPECT_TRUE(contains(error, "z.ptx' is a symbolic link, not a regular file"))
      << error;
  ::unlink((dir + "/p.ptx").c_str());
  ASSERT_EQ(::symlink("/etc/passwd", (dir + "/p.ptx").c_str()), 0);
  EXPECT_FALSE(Bundle::parse(withFile("p.ptx"), dir, bundle, error));
  EXPECT_TRUE(contains(error, "p.ptx' is a symbolic link, not a regular file"))
      << error;

  // Too large (a sparse file: no disk space taken).
  ASSERT_EQ(
      ::truncate(writeIn(dir, "big.ptx", "x").c_str(), kMaxBinaryBytes + 1), 0);
  EXPECT_FALSE(Bundle::parse(withFile("big.ptx"), dir, bundle, error));
  EXPECT_TRUE(contains(error, "big.ptx' has 268435457 bytes; a binary may "
                              "have at most 256 MiB"))
      << error;
  std::string json = writeIn(dir, "bundle.json", withFile("k.ptx"));
  ASSERT_TRUE(Bundle::load(json, bundle, error)) << error;
  ASSERT_EQ(::truncate(json.c_str(), kMaxBundleJsonBytes + 1), 0);
  EXPECT_FALSE(Bundle::load(json, bundle, error));
  EXPECT_TRUE(contains(error, "bundle.json' has 16777217 bytes; bundle.json "
                              "may have at most 16 MiB"))
      << error;
  EXPECT_FALSE(Bundle::load(dir, bundle, error));
  EXPECT_TRUE(contains(error, "is a directory, not a regular file")) << error;
}

TEST(RuntimeBundle, LimitsTheTermsOfAllExpressions) {
  // Each term takes about 150 bytes: 16 MiB of expressions would otherwise
  // take gigabytes. 525 operands of 2001 terms each are past 2^20.
  std::string symbols, operands;
  for (int i = 0; i < 2000; ++i) {
    symbols += i ? ",s" : "s";
    operands += i ? ",1" : "1";
  }
  std::string expr =
      "\"affine(()[" + symbols + "] -> (0), [" + operands + "])\"";
  std::string list = expr;
  for (int i = 1; i < 525; ++i)
    list += "," + expr;
  std::string text = withFile("k.ptx");
  std::string original = R"x("%arg0", "f32(1.25E-1)")x";
  text.replace(text.find(original), original.size(), list);
  std::string dir = ::testing::TempDir() + "terms";
  writeIn(dir, "k.ptx", ".version 8.0\n");
  Bundle bundle;
  std::string error;
  EXPECT_FALSE(Bundle::parse(text, dir, bundle, error));
  EXPECT_TRUE(contains(error, "the launch expressions have more than 1048576 "
                              "terms in all"))
      << error.substr(0, 300);
  text.replace(text.find(list), list.size(), expr);
  EXPECT_TRUE(Bundle::parse(text, dir, bundle, error)) << error;
}

const char *kContractBundle = R"json({
  "version": 1,
  "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx", "target": ""}],
  "functions": [{"name": "gqa",
    "args": ["memref<?x8x?x64xf16>", "memref<?x?x?x64xf16>",
             "memref<?x?x?x64xf16>", "memref<?x8x?x64xf16>",
             "memref<?x8x?xf32>", "memref<?xi32>"],
    "shape_contract": {"names": ["q", "k", "v", "out", "lse", ""],
      "constraints": [
        {"kind": "equal", "lhs": [1, 0], "rhs": [0, 0], "what": "batch"},
        {"kind": "multiple_of", "lhs": [0, 1], "rhs": [1, 1],
         "what": "query heads"},
        {"kind": "equal", "lhs": [3, 2], "rhs": [0, 2],
         "what": "query length"},
        {"kind": "at_least", "lhs": [5, 0], "rhs": [1, 2],
         "what": "document ids, indexed by kv position"}]},
    "launches": [{"module": "k", "kernel": "k",
      "grid": ["dim(%arg0, 2)", "1", "1"], "block": ["128", "1", "1"],
      "operands": ["%arg0", "%arg5"]}]}]
})json";

std::vector<std::vector<int64_t>> gqaShapes() {
  return {{2, 8, 8, 64}, {2, 2, 64, 64}, {2, 2, 64, 64},
          {2, 8, 8, 64}, {2, 8, 8},      {64}};
}

TEST(RuntimeShapes, ReadsTheContractAndChecksArguments) {
  std::string dir = ::testing::TempDir() + "contract";
  writeIn(dir, "k.ptx", ".version 8.0\n");
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(Bundle::parse(kContractBundle, dir, bundle, error)) << error;
  const Function &f = bundle.functions[0];
  EXPECT_EQ(f.contract.argDims[0], (std::vector<int64_t>{-1, 8, -1, 64}));
  EXPECT_EQ(f.argElementBytes, (std::vector<int64_t>{2, 2, 2, 2, 4, 4}));
  ASSERT_EQ(f.contract.constraints.size(), 4u);
  EXPECT_EQ(f.contract.constraints[1].kind, ShapeConstraint::Kind::MultipleOf);
  EXPECT_EQ(f.contract.argName(5), "argument 5");

  auto check = [&](auto change) {
    std::vector<std::vector<int64_t>> shapes = gqaShapes();
    change(shapes);
    return f.checkArguments(shapes);
  };
  EXPECT_EQ(check([](auto &) {}), "");
  EXPECT_EQ(check([](auto &s) { s[3][2] = 5; }),
            "@gqa: out dim 2 (query length) is 5 but q dim 2 is 8");
  EXPECT_EQ(check([](auto &s) { s[1][1] = s[2][1] = 3; }),
            "@gqa: q dim 1 (query heads) is 8, not a multiple of k dim 1, "
            "which is 3");
  EXPECT_EQ(check([](auto &s) { s[1][1] = s[2][1] = 0; }),
            "@gqa: q dim 1 (query heads) is 8, not a multiple of k dim 1, "
            "which is 0");
  EXPECT_EQ(check([](auto &s) { s[5][0] = 1; }),
            "@gqa: argument 5 dim 0 (document ids, indexed by kv position) "
            "is 1 but k dim 2 is 64; it must be at least that");
  EXPECT_EQ(check([](auto &s) { s[1][0] = 1; }),
            "@gqa: k dim 0 (batch) is 1 but q dim 0 is 2");
  EXPECT_EQ(check([](auto &s) { s.pop_back(); }),
            "@gqa: expected 6 arguments, got 5");
  EXPECT_EQ(check([](auto &s) { s[4].push_back(1); }),
            "@gqa: lse has rank 4 but its type has rank 3");
  EXPECT_EQ(check([](auto &s) { s[0][3] = 128; }),
            "@gqa: q dim 3 is 128 but its type fixes it at 64");
  EXPECT_EQ(check([](auto &s) { s[2][2] = -1; }),
            "@gqa: v dim 2 is -1; sizes cannot be negative");
  // --kv-len=4611686018427387904: the element count overflowed.
  EXPECT_EQ(
      check([](auto &s) { s[1][2] = s[2][2] = s[5][0] = int64_t(1) << 62; }),
      "@gqa: k (2x2x4611686018427387904x64) is too large: its size in "
      "bytes overflows int64");
  // Bytes, not just elements: 2^61 i32 elements do not fit, 2^61 bytes do.
  EXPECT_EQ(check([](auto &s) { s[5][0] = int64_t(1) << 61; }),
            "@gqa: argument 5 (2305843009213693952) is too large: its size "
            "in bytes overflows int64");
}

TEST(RuntimeShapes, ContractErrorsAreLoadErrors) {
  std::string dir = ::testing::TempDir() + "contract";
  writeIn(dir, "k.ptx", ".version 8.0\n");
  auto loadWith = [&](const std::string &from, const std::string &to) {
    std::string text = kContractBundle;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    Bundle bundle;
    std::string error;
    EXPECT_FALSE(Bundle::parse(text, dir, bundle, error)) << to;
    return error;
  };
  EXPECT_TRUE(contains(loadWith(R"("lhs": [5, 0])", R"("lhs": [6, 0])"),
                       "function 'gqa': \"shape_contract\" constraint 3 "
                       "names argument 6, but there are 6"));
  EXPECT_TRUE(contains(loadWith(R"("rhs": [1, 2])", R"("rhs": [1, 4])"),
                       "constraint 3 names dim 4 of k, which has rank 4"));
  EXPECT_TRUE(contains(loadWith(R"("rhs": [1, 2])", R"("rhs": [1, -1])"),
                       "constraint 3 needs \"rhs\": [argument, dim]"));
  EXPECT_TRUE(contains(loadWith(R"("rhs": [1, 2])", R"("rhs": [1.5, 2])"),
                       "constraint 3 needs \"rhs\": [argument, dim]"));
  EXPECT_TRUE(contains(loadWith(R"("kind": "equal")", R"("kind": "same")"),
                       "constraint 0 has no kind equal, multiple_of or "
                       "at_least"));
  EXPECT_TRUE(contains(loadWith(R"(, ""])", R"(])"),
                       "\"shape_contract\" names 5 arguments, but it takes 6"));
  EXPECT_TRUE(contains(
      loadWith(R"("memref<?xi32>")", R"("memref<?xi32, strided<[2]>>")"),
      "function 'gqa': argument 5: the runtime cannot pass it: "
      "'memref<?xi32, strided<[2]>>' is not a memref"));
  EXPECT_TRUE(contains(loadWith(R"("memref<?xi32>")", "5"),
                       "function 'gqa': argument 5 has no type (a string)"));
  // Launch expressions may name only arguments and dims that exist.
  EXPECT_TRUE(contains(loadWith(R"("%arg5"])", R"("%arg6"])"),
                       "function 'gqa': launch of 'k': an expression uses "
                       "%arg6, but there are 6 arguments"));
  EXPECT_TRUE(contains(loadWith("dim(%arg0, 2)", "dim(%arg4, 3)"),
                       "takes dim 3 of %arg4, which has rank 3"));

  // A bundle without "shape_contract" loads: sizes from the types only.
  std::string text = kContractBundle;
  text.erase(text.find(R"("shape_contract")"),
             text.find(R"("launches")") - text.find(R"("shape_contract")"));
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(Bundle::parse(text, dir, bundle, error)) << error;
  const Function &f = bundle.functions[0];
  EXPECT_TRUE(f.contract.constraints.empty());
  std::vector<std::vector<int64_t>> shapes = gqaShapes();
  shapes[3][2] = 5;
  EXPECT_EQ(f.checkArguments(shapes), "");
  shapes[3][1] = 4;
  EXPECT_EQ(f.checkArguments(shapes),
            "@gqa: argument 3 dim 1 is 4 but its type fixes it at 8");
}

TEST(RuntimeShapes, ChecksConstraintsOnTheirOwn) {
  ShapeContract contract;
  contract.argDims = {{-1}, {-1}};
  ShapeConstraint c;
  c.kind = ShapeConstraint::Kind::MultipleOf;
  c.lhs = {0, 0};
  c.rhs = {1, 0};
  contract.constraints = {c};
  EXPECT_EQ(contract.check({{0}, {0}}), ""); // 0 is a multiple of 0
  EXPECT_EQ(contract.check({{6}, {3}}), "");
  EXPECT_EQ(contract.check({{6}, {4}}),
            "argument 0 dim 0 is 6, not a multiple of argument 1 dim 0, "
            "which is 4");
  // A constraint on a dim that does not exist is an error, not a crash.
  contract.constraints[0].rhs = {1, 3};
  EXPECT_EQ(contract.check({{6}, {3}}),
            "shape constraint 0 names argument 1 dim 3, which does not exist");
  for (auto kind :
       {ShapeConstraint::Kind::Equal, ShapeConstraint::Kind::MultipleOf,
        ShapeConstraint::Kind::AtLeast}) {
    ShapeConstraint::Kind parsed;
    ASSERT_TRUE(
        ShapeConstraint::parseKind(ShapeConstraint::kindName(kind), parsed));
    EXPECT_EQ(parsed, kind);
  }
  ShapeConstraint::Kind parsed;
  EXPECT_FALSE(ShapeConstraint::parseKind("greater", parsed));
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

TEST(RuntimeHostTensor, RefusesShapesThatOverflowAndSaturatesIntegers) {
  EXPECT_THROW(HostTensor(ElementKind::F32, {-1, 4}), std::length_error);
  EXPECT_THROW(HostTensor(ElementKind::F32, {int64_t(1) << 40, 1 << 24}),
               std::length_error);
  EXPECT_THROW(HostTensor(ElementKind::I64, {int64_t(1) << 61}),
               std::length_error);
  HostTensor ints(ElementKind::I32, {3});
  ints.set(0, std::numeric_limits<double>::quiet_NaN());
  ints.set(1, 1e300);
  ints.set(2, -1e300);
  EXPECT_EQ(ints.get(0), 0);
  EXPECT_EQ(ints.get(1), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(ints.get(2), std::numeric_limits<int32_t>::min());
}
