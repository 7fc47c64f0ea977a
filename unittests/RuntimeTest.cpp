//===- RuntimeTest.cpp - launch expressions, JSON, shapes, without a GPU --===//

#include "AttnRuntime/Bundle.h"
#include "AttnRuntime/CudaDriver.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Json.h"
#include "AttnRuntime/ShapeCheck.h"

#include "gtest/gtest.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

using namespace attn_runtime;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The arguments expressions refer to: q [?, 8, ?, 64] f16, k [?, ?] i32.
std::vector<ArgumentType> argTypes() {
  return {{"q", "f16", 2, {-1, 8, -1, 64}}, {"k", "i32", 4, {-1, -1}}};
}

/// The error of reading `json` as an expression, or "" when it reads.
std::string readError(const std::string &json, Expr *out = nullptr) {
  JsonValue value;
  std::string error;
  if (!parseJson(json, value, error))
    return "json: " + error;
  Expr expr;
  if (!Expr::fromJson(value, argTypes(), expr, error))
    return error;
  if (out)
    *out = std::move(expr);
  return "";
}

Expr read(const std::string &json) {
  Expr expr;
  std::string error = readError(json, &expr);
  EXPECT_EQ(error, "") << json;
  return expr;
}

/// The error of evaluating `json` (which must read), or "" when it
/// evaluates.
std::string evalError(const std::string &json,
                      const std::vector<Argument> &args = {}) {
  int64_t value;
  std::string error;
  return evaluateIndex(read(json), args, value, error) ? "" : error;
}

int64_t eval(const std::string &json, const std::vector<Argument> &args = {}) {
  int64_t value = -1;
  std::string error;
  EXPECT_TRUE(evaluateIndex(read(json), args, value, error)) << error;
  return value;
}

std::string c(int64_t value) {
  return "{\"const\": " + std::to_string(value) + "}";
}

std::string dim(const std::string &arg, int64_t index) {
  return "{\"dim\": {\"arg\": \"" + arg +
         "\", \"index\": " + std::to_string(index) + "}}";
}

std::string op(const std::string &name, const std::string &lhs,
               const std::string &rhs) {
  return "{\"op\": \"" + name + "\", \"lhs\": " + lhs + ", \"rhs\": " + rhs +
         "}";
}

std::string select(const std::string &cond, const std::string &then,
                   const std::string &otherwise) {
  return "{\"op\": \"select\", \"cond\": " + cond + ", \"then\": " + then +
         ", \"else\": " + otherwise + "}";
}

std::vector<Argument> qk(std::vector<int64_t> q, std::vector<int64_t> k) {
  std::vector<Argument> args(2);
  args[0].shape = std::move(q);
  args[1].shape = std::move(k);
  return args;
}

//===- Expressions --------------------------------------------------------===//

TEST(RuntimeExpr, EvaluatesTrees) {
  std::vector<Argument> args = qk({2, 8, 130, 64}, {3, 4});
  EXPECT_EQ(eval(c(64), args), 64);
  EXPECT_EQ(eval(dim("q", 2), args), 130);
  EXPECT_EQ(eval(dim("k", 1), args), 4);
  EXPECT_EQ(eval(op("ceildiv", dim("q", 2), c(64)), args), 3);
  EXPECT_EQ(eval(op("floordiv", c(-7), c(2))), -4);
  EXPECT_EQ(eval(op("div", c(-7), c(2))), -3);
  EXPECT_EQ(eval(op("ceildiv", c(-7), c(2))), -3);
  EXPECT_EQ(eval(op("mod", c(-7), c(-3))), 2);
  EXPECT_EQ(eval(op("mod", c(kMin), c(-1))), 0);
  EXPECT_EQ(eval(op("sub", dim("q", 2), c(30)), args), 100);
  EXPECT_EQ(eval(op("add", op("mul", c(6), c(7)), c(-2))), 40);
  // The softmax kernel's block size: whole warps, 64 to 1024 threads.
  std::string threads =
      op("min",
         op("max", op("mul", op("ceildiv", dim("q", 2), c(512)), c(32)), c(64)),
         c(1024));
  EXPECT_EQ(eval(threads, args), 64);
  args[0].shape[2] = 1 << 20;
  EXPECT_EQ(eval(threads, args), 1024);
  args[0].shape[2] = 5000;
  EXPECT_EQ(eval(threads, args), 320);
  std::vector<ArgumentType> types = argTypes();
  EXPECT_EQ(read(threads).str(&types),
            "min(max(mul(ceildiv(dim(q, 2), 512), 32), 64), 1024)");
  EXPECT_EQ(read(dim("k", 0)).str(), "dim(arg1, 0)");
}

TEST(RuntimeExpr, ComparisonsAreOneOrZero) {
  struct Case {
    const char *op;
    int64_t less, equal, greater;
  } cases[] = {{"lt", 1, 0, 0}, {"le", 1, 1, 0}, {"gt", 0, 0, 1},
               {"ge", 0, 1, 1}, {"eq", 0, 1, 0}, {"ne", 1, 0, 1}};
  for (const Case &k : cases) {
    EXPECT_EQ(eval(op(k.op, c(1), c(2))), k.less) << k.op;
    EXPECT_EQ(eval(op(k.op, c(2), c(2))), k.equal) << k.op;
    EXPECT_EQ(eval(op(k.op, c(3), c(2))), k.greater) << k.op;
  }
}

TEST(RuntimeExpr, SelectEvaluatesTheBranchItTakes) {
  // SoftmaxToGpu's block size: split-threads when a row is split, else
  // enough threads for the row.
  std::string fit = op("mul", op("ceildiv", dim("k", 1), c(64)), c(32));
  std::string threads =
      select(op("gt", fit, c(512)), c(256), op("max", fit, c(32)));
  EXPECT_EQ(eval(threads, qk({1, 8, 1, 64}, {1, 100})), 64);
  EXPECT_EQ(eval(threads, qk({1, 8, 1, 64}, {1, 1 << 20})), 256);
  // Any non-zero condition takes "then"; the branch not taken is not
  // evaluated, so it may divide by zero.
  std::string guarded = select(dim("k", 1), op("div", c(100), dim("k", 1)),
                               op("div", c(1), c(0)));
  EXPECT_EQ(eval(guarded, qk({1, 8, 1, 64}, {1, 5})), 20);
  EXPECT_EQ(evalError(guarded, qk({1, 8, 1, 64}, {1, 0})),
            "division by zero in a launch expression: div(1, 0)");
  EXPECT_EQ(read(select(op("lt", c(1), c(2)), c(3), c(4))).str(),
            "select(lt(1, 2), 3, 4)");
}

TEST(RuntimeExpr, ReadingNamesWhatIsWrong) {
  EXPECT_TRUE(contains(readError(op("sqrt", c(4), c(1))),
                       "has unknown op 'sqrt' (expected sm_count, select, "
                       "add, sub, mul, div, ceildiv, floordiv, mod, min, max, "
                       "lt, le, gt, ge, eq, ne)"));
  EXPECT_EQ(readError(R"({"op": "add", "lhs": {"const": 1}})"),
            "has no \"rhs\"");
  EXPECT_EQ(readError(R"({"op": "add", "lhs": {"const": 1}, "rsh": {}})"),
            "has unknown member 'rsh'");
  EXPECT_EQ(readError(R"({"op": "select", "cond": {"const": 1},
                          "then": {"const": 1}})"),
            "has no \"else\"");
  EXPECT_EQ(readError(dim("kk", 0)),
            "names argument 'kk', which the function does not have (it has "
            "q, k)");
  EXPECT_EQ(readError(dim("q", 4)), "takes dim 4 of 'q', which has rank 4");
  EXPECT_EQ(readError(dim("q", -1)), "takes dim -1 of 'q', which has rank 4");
  EXPECT_EQ(readError(R"({"dim": {"arg": "q", "index": 1.5}})"),
            "has a \"dim\" index that is not an integer");
  EXPECT_EQ(readError(R"({"dim": {"arg": "q"}})"),
            "has a \"dim\" that is not {\"arg\": NAME, \"index\": N}");
  EXPECT_EQ(readError(R"("64")"), "is not an expression (a JSON object)");
  EXPECT_EQ(readError(R"({"value": 64})"),
            "has none of \"const\", \"dim\" and \"op\"");
  EXPECT_EQ(readError(R"({"const": 1.5})"),
            "has a constant that is not an integer of 64 bits: '1.5'");
  EXPECT_EQ(readError(R"({"const": 99999999999999999999})"),
            "has a constant that is not an integer of 64 bits: "
            "'99999999999999999999'");
  EXPECT_EQ(readError(R"({"const": "1"})"),
            "has a constant that is not an integer of 64 bits: '1'");
  EXPECT_EQ(readError(R"({"op": "sm_count", "lhs": 1})"),
            "has unknown member 'lhs'");
}

TEST(RuntimeExpr, LimitsNesting) {
  auto nested = [](int depth) {
    std::string text = c(1);
    for (int i = 0; i < depth; ++i)
      text = op("add", text, c(1));
    return text;
  };
  EXPECT_EQ(eval(nested(kMaxExprDepth - 1)), kMaxExprDepth);
  EXPECT_EQ(readError(nested(kMaxExprDepth)),
            "is nested deeper than 64 levels");
  EXPECT_EQ(readError(nested(100)), "is nested deeper than 64 levels");
  // Deeper than the JSON reader allows: its limit, not a stack overflow.
  EXPECT_TRUE(contains(readError(nested(1000)),
                       "json: JSON nested deeper than 128 levels"));

  // An Expr built in code is bounded when evaluated, too.
  Expr one, deep;
  one.value = deep.value = 1;
  for (int i = 0; i < 200; ++i) {
    Expr parent;
    parent.kind = Expr::Kind::Binary;
    parent.op = Expr::Op::Add;
    parent.operands = {std::move(deep), one};
    deep = std::move(parent);
  }
  int64_t value;
  std::string error;
  EXPECT_FALSE(evaluateIndex(deep, {}, value, error));
  EXPECT_EQ(error, "launch expression nested deeper than 64 levels");
}

TEST(RuntimeExpr, EvaluationIsOverflowChecked) {
  // intmin.json: INT64_MIN / -1 trapped with SIGFPE.
  for (const char *name : {"div", "ceildiv", "floordiv"})
    EXPECT_EQ(evalError(op(name, c(kMin), c(-1))),
              std::string("integer overflow in a launch expression: ") + name +
                  "(-9223372036854775808, -1)");
  EXPECT_EQ(evalError(op("add", c(kMax), c(1))),
            "integer overflow in a launch expression: "
            "add(9223372036854775807, 1)");
  EXPECT_EQ(evalError(op("sub", c(kMin), c(1))),
            "integer overflow in a launch expression: "
            "sub(-9223372036854775808, 1)");
  EXPECT_EQ(evalError(op("mul", c(int64_t(1) << 62), c(2))),
            "integer overflow in a launch expression: "
            "mul(4611686018427387904, 2)");
  EXPECT_EQ(evalError(op("div", c(7), c(0))),
            "division by zero in a launch expression: div(7, 0)");
  EXPECT_EQ(evalError(op("mod", c(7), op("sub", c(3), c(3)))),
            "division by zero in a launch expression: mod(7, 0)");
  // Integers beyond 2^53 keep their digits.
  EXPECT_EQ(eval(c(kMin)), kMin);
  EXPECT_EQ(eval(c(kMax)), kMax);
  EXPECT_EQ(eval(c(9007199254740993)), 9007199254740993);
  std::vector<Argument> args = qk({kMax, -5, 0, 0}, {0, 0});
  EXPECT_EQ(eval(op("ceildiv", dim("q", 1), c(2)), args), -2);
  EXPECT_EQ(eval(op("min", dim("q", 0), dim("q", 1)), args), -5);
  EXPECT_EQ(evalError(op("add", dim("q", 0), c(1)), args),
            "integer overflow in a launch expression: "
            "add(9223372036854775807, 1)");
  // A dim the given argument does not have: an error, not a read past it.
  EXPECT_EQ(evalError(dim("q", 3), qk({1, 2}, {})),
            "dim 3 of argument 0, which has rank 2");
  std::vector<Argument> one(1);
  EXPECT_EQ(evalError(dim("k", 0), one),
            "the launch needs argument 1, but only 1 were given");
}

TEST(RuntimeExpr, SmCountAndWorkspaceComeFromTheEnvironment) {
  std::vector<Argument> args = qk({64, 1 << 20, 0, 0}, {0, 0});
  // The softmax kernel's blocks: a row split across up to one block per SM.
  std::string blocks = op(
      "mul", dim("q", 0),
      op("min", op("ceildiv", dim("q", 1), c(8192)), R"({"op": "sm_count"})"));
  int64_t value = 0;
  std::string error;
  EXPECT_FALSE(evaluateIndex(read(blocks), args, value, error));
  EXPECT_TRUE(contains(error, "needs the GPU's SM count (sm_count)")) << error;
  Environment environment;
  environment.smCount = 132;
  ASSERT_TRUE(evaluateIndex(read(blocks), args, value, error, &environment))
      << error;
  EXPECT_EQ(value, 64 * 128);
  environment.smCount = 100;
  ASSERT_TRUE(evaluateIndex(read(blocks), args, value, error, &environment))
      << error;
  EXPECT_EQ(value, 64 * 100);

  // The workspace is a memref<?xi32> operand: a 1-D descriptor of words.
  Launch launch;
  launch.workspaceBytes.value = 64;
  launch.operands.resize(2);
  launch.operands[0].kind = Operand::Kind::Workspace;
  launch.operands[1].value = read(R"({"op": "sm_count"})");
  std::vector<Param> params;
  EXPECT_FALSE(launch.params(args, params, error, &environment));
  EXPECT_TRUE(contains(error, "needs the runtime's workspace")) << error;
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
}

TEST(RuntimeExpr, ScratchIsTheOtherBuffer) {
  std::vector<Argument> args = qk({64, 128, 0, 0}, {0, 0});
  // A scratch operand is the scratch buffer's descriptor, never the
  // workspace's, and its absence is an error naming it.
  Launch launch;
  launch.operands.resize(2);
  launch.operands[0].kind = Operand::Kind::Workspace;
  launch.operands[1].kind = Operand::Kind::Scratch;
  launch.scratchBytes.value = 400;
  Environment environment;
  environment.workspace = 0x2000;
  environment.workspaceBytes = 64;
  std::vector<Param> params;
  std::string error;
  EXPECT_FALSE(launch.params(args, params, error, &environment));
  EXPECT_TRUE(contains(error, "needs the runtime's scratch buffer")) << error;
  // A launch that needs no bytes of it (an empty problem) gets a null
  // descriptor of size 0.
  launch.scratchBytes.value = 0;
  params.clear();
  ASSERT_TRUE(launch.params(args, params, error, &environment)) << error;
  ASSERT_EQ(params.size(), 10u);
  EXPECT_EQ(params[5].pointer, 0u);
  EXPECT_EQ(params[8].i64, 0);
  launch.scratchBytes.value = 400;
  environment.scratch = 0x8000;
  environment.scratchBytes = 400;
  params.clear();
  ASSERT_TRUE(launch.params(args, params, error, &environment)) << error;
  ASSERT_EQ(params.size(), 10u);
  EXPECT_EQ(params[0].pointer, 0x2000u);
  EXPECT_EQ(params[3].i64, 16);
  EXPECT_EQ(params[5].pointer, 0x8000u);
  EXPECT_EQ(params[6].pointer, 0x8000u);
  EXPECT_EQ(params[7].i64, 0);
  EXPECT_EQ(params[8].i64, 100);
  EXPECT_EQ(params[9].i64, 1);
}

//===- Kernel parameters --------------------------------------------------===//

TEST(RuntimeLaunch, PacksMemrefDescriptorsAndScalars) {
  Launch launch;
  launch.operands.resize(4);
  launch.operands[0].value = read(dim("q", 1));
  launch.operands[1].kind = Operand::Kind::Buffer;
  launch.operands[1].arg = 0;
  launch.operands[2].kind = Operand::Kind::F32;
  launch.operands[2].f32 = -std::numeric_limits<float>::infinity();
  launch.operands[3].value = read(c(7));
  std::vector<Argument> args(1);
  args[0].address = 0x1000;
  args[0].shape = {2, 3, 4};
  std::vector<Param> params;
  std::string error;
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

TEST(RuntimeLaunch, TensorMapsComeFromTheEncoder) {
  Launch launch;
  launch.operands.resize(2);
  launch.operands[0].kind = Operand::Kind::TensorMap;
  launch.operands[0].arg = 0;
  launch.operands[0].dtype = "bf16";
  launch.operands[0].box = {1, 1, 128, 64};
  launch.operands[1].value = read(c(7));
  std::vector<Argument> args(1);
  args[0].address = 0x1000;
  args[0].shape = {2, 8, 300, 128};
  std::vector<Param> params;
  std::string error;
  // Without the driver there is no map to pass.
  EXPECT_FALSE(launch.params(args, params, error));
  EXPECT_EQ(error, "the kernel takes a tensor map of argument 0, which needs "
                   "the CUDA driver");
  Environment environment;
  TensorMapRequest seen;
  environment.encodeTensorMap = [&](const TensorMapRequest &request,
                                    unsigned char *map, std::string &) {
    seen = request;
    for (int i = 0; i < 128; ++i)
      map[i] = static_cast<unsigned char>(i);
    return true;
  };
  ASSERT_TRUE(launch.params(args, params, error, &environment)) << error;
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].kind, Param::Kind::TensorMap);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(params[0].tensorMap) % 64, 0u);
  EXPECT_EQ(params[0].tensorMap[127], 127);
  EXPECT_EQ(params[1].i64, 7);
  EXPECT_EQ(seen.address, 0x1000u);
  EXPECT_EQ(seen.dtype, "bf16");
  EXPECT_EQ(seen.shape, args[0].shape);
  EXPECT_EQ(seen.box, launch.operands[0].box);
  // The encoder's refusal names the argument.
  environment.encodeTensorMap = [](const TensorMapRequest &, unsigned char *,
                                   std::string &why) {
    why = "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE";
    return false;
  };
  EXPECT_FALSE(launch.params(args, params, error, &environment));
  EXPECT_EQ(error, "cannot make the tensor map of argument 0: "
                   "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE");
  // An empty argument's map is zeros, without the encoder (the driver
  // encodes no empty tensor, and the kernel copies nothing from it).
  args[0].shape = {2, 8, 0, 128};
  ASSERT_TRUE(launch.params(args, params, error, &environment)) << error;
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].kind, Param::Kind::TensorMap);
  EXPECT_EQ(params[0].tensorMap[127], 0);
}

TEST(RuntimeLaunch, StridesAreOverflowChecked) {
  Launch launch;
  launch.operands.resize(1);
  launch.operands[0].kind = Operand::Kind::Buffer;
  std::vector<Argument> args(1);
  args[0].shape = {2, int64_t(1) << 32, int64_t(1) << 32};
  std::vector<Param> params;
  std::string error;
  EXPECT_FALSE(launch.params(args, params, error));
  EXPECT_EQ(error, "a memref operand's strides overflow int64");
}

//===- JSON ---------------------------------------------------------------===//

std::string nestedArrays(int depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(RuntimeJson, LimitsNesting) {
  // deep.json: 100,000 nested brackets overflowed the stack.
  JsonValue value;
  std::string error;
  EXPECT_FALSE(parseJson(std::string(100000, '['), value, error));
  EXPECT_EQ(error, "JSON nested deeper than 128 levels at byte 128");
  EXPECT_FALSE(parseJson(nestedArrays(100000), value, error));
  EXPECT_TRUE(parseJson(nestedArrays(kMaxJsonDepth), value, error)) << error;
  EXPECT_FALSE(parseJson(nestedArrays(kMaxJsonDepth + 1), value, error));
  std::string objects;
  for (int i = 0; i < 1000; ++i)
    objects += "{\"a\":";
  EXPECT_FALSE(parseJson(objects + "1" + std::string(1000, '}'), value, error));
  EXPECT_TRUE(contains(error, "nested deeper than 128 levels")) << error;
}

TEST(RuntimeJson, LimitsTheNumberOfValues) {
  // Each value takes about 150 bytes: 16 MiB of "0," would take gigabytes.
  // The limit bounds launch expressions too: each node is a value.
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

TEST(RuntimeJson, ReadsJsonNumbersOnlyAndKeepsTheirDigits) {
  JsonValue value;
  std::string error;
  for (const char *bad : {"inf", "nan", "0x10", "+1", ".5", "1.", "1e", "-"})
    EXPECT_FALSE(parseJson(bad, value, error)) << bad;
  for (const char *good : {"0", "-0", "1.5", "-2e-3", "1E+9", "12"})
    EXPECT_TRUE(parseJson(good, value, error)) << good;
  int64_t integer = 0;
  ASSERT_TRUE(parseJson("-9223372036854775808", value, error));
  EXPECT_TRUE(value.integer(integer));
  EXPECT_EQ(integer, kMin);
  ASSERT_TRUE(parseJson("9223372036854775808", value, error));
  EXPECT_FALSE(value.integer(integer));
  ASSERT_TRUE(parseJson("4e2", value, error));
  EXPECT_FALSE(value.integer(integer));
  EXPECT_EQ(value.number, 400);
}

//===- Shape contracts ----------------------------------------------------===//

TEST(RuntimeShapes, ChecksConstraintsOnTheirOwn) {
  ShapeContract contract;
  contract.argDims = {{-1}, {-1}};
  ShapeConstraint k;
  k.kind = ShapeConstraint::Kind::MultipleOf;
  k.lhs = {0, 0};
  k.rhs = {1, 0};
  contract.constraints = {k};
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
        ShapeConstraint::Kind::AtLeast, ShapeConstraint::Kind::AtMost,
        ShapeConstraint::Kind::OneOrEqual}) {
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
