//===- RegionTest.cpp - region programs: reading, checking, evaluating ----===//

#include "AttnRuntime/Region.h"
#include "AttnRuntime/HostTensor.h"
#include "AttnRuntime/Json.h"
#include "AttnRuntime/Reference.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

using namespace attn_runtime;

namespace {

/// The program of `json`, or the reader's error in `error`.
bool read(const std::string &json, RegionProgram &program, std::string &error) {
  JsonValue value;
  if (!parseJson(json, value, error))
    return false;
  return RegionProgram::fromJson(value, program, error);
}

std::string readError(const std::string &json) {
  RegionProgram program;
  std::string error;
  EXPECT_FALSE(read(json, program, error)) << json;
  return error;
}

// The document mask: ids[q] == ids[kv], ids being argument 4.
const char *kDocument =
    R"({"args": ["index", "index", "index", "index"],
        "ops": [{"op": "tensor.extract", "type": "i32", "operands": [2], "tensor": 4},
                {"op": "tensor.extract", "type": "i32", "operands": [3], "tensor": 4},
                {"op": "arith.cmpi", "type": "i1", "operands": [4, 5], "predicate": "eq"}],
        "yield": 6})";

TEST(RegionProgram, EvaluatesTheDocumentMask) {
  RegionProgram program;
  std::string error;
  ASSERT_TRUE(read(kDocument, program, error)) << error;
  HostTensor ids(ElementKind::I32, {4});
  for (int64_t i = 0; i < 4; ++i)
    ids.set(i, i < 2 ? 0 : 1);
  std::vector<const HostTensor *> arguments(5, nullptr);
  arguments[4] = &ids;
  auto keep = [&](int64_t q, int64_t kv) {
    Scalar result;
    std::string why;
    EXPECT_TRUE(evaluateRegion(program,
                               {Scalar::ofInt(0), Scalar::ofInt(0),
                                Scalar::ofInt(q), Scalar::ofInt(kv)},
                               arguments, result, why))
        << why;
    return result.i != 0;
  };
  EXPECT_TRUE(keep(0, 1));
  EXPECT_FALSE(keep(1, 2));
  EXPECT_TRUE(keep(3, 2));
  // A read past the end names the op, the index and the argument.
  Scalar result;
  EXPECT_FALSE(evaluateRegion(
      program,
      {Scalar::ofInt(0), Scalar::ofInt(0), Scalar::ofInt(4), Scalar::ofInt(0)},
      arguments, result, error));
  EXPECT_EQ(error, "'tensor.extract' reads index 4 of dim 0 of argument #4, "
                   "whose size is 4: out of bounds");
}

TEST(RegionProgram, WrapsIntegersAndReportsPoison) {
  // (q + 100) as i8 with nsw: poison from q = 28 on; without the flag,
  // 28 + 100 wraps to -128.
  auto program = [](const char *flags) {
    return std::string(
               R"({"args": ["i8"], "ops": [{"op": "arith.constant", "type": "i8", "value": 100},
                  {"op": "arith.addi", "type": "i8", "operands": [0, 1])") +
           flags + R"(}], "yield": 2})";
  };
  RegionProgram wraps, poison;
  std::string error;
  ASSERT_TRUE(read(program(""), wraps, error)) << error;
  ASSERT_TRUE(read(program(R"(, "flags": ["nsw"])"), poison, error)) << error;
  Scalar result;
  ASSERT_TRUE(evaluateRegion(wraps, {Scalar::ofInt(28)}, {}, result, error));
  EXPECT_EQ(result.i, -128);
  EXPECT_FALSE(evaluateRegion(poison, {Scalar::ofInt(28)}, {}, result, error));
  EXPECT_EQ(error, "'arith.addi' overflows a signed i8 with overflow<nsw>, "
                   "which is poison");
  ASSERT_TRUE(evaluateRegion(poison, {Scalar::ofInt(27)}, {}, result, error));
  EXPECT_EQ(result.i, 127);
}

TEST(RegionProgram, EvaluatesFloatsInDoublePrecision) {
  // 30 * tanh(s / 30), the softcap.
  RegionProgram program;
  std::string error;
  ASSERT_TRUE(read(
      R"({"args": ["f32"], "ops": [{"op": "arith.constant", "type": "f32", "value": 30},
          {"op": "arith.divf", "type": "f32", "operands": [0, 1]},
          {"op": "math.tanh", "type": "f32", "operands": [2]},
          {"op": "arith.mulf", "type": "f32", "operands": [3, 1]}], "yield": 4})",
      program, error))
      << error;
  Scalar result;
  ASSERT_TRUE(
      evaluateRegion(program, {Scalar::ofFloat(45.0)}, {}, result, error));
  EXPECT_DOUBLE_EQ(result.f, 30 * std::tanh(1.5));
}

TEST(RegionProgram, RefusesMalformedPrograms) {
  EXPECT_EQ(readError(R"({"args": ["index"], "ops": [], "yield": 1})"),
            "the region yields value 1, which it does not define");
  EXPECT_EQ(readError(R"({"args": ["index"], "ops": [{"op": "arith.addi",
              "type": "index", "operands": [0, 1]}], "yield": 1})"),
            "op 0 ('arith.addi') uses value 1, which is not defined before "
            "it");
  EXPECT_EQ(readError(R"({"args": ["f32"], "ops": [{"op": "arith.addi",
              "type": "i32", "operands": [0, 0]}], "yield": 1})"),
            "op 0 ('arith.addi') takes a f32 operand 0");
  EXPECT_EQ(readError(R"({"args": ["i32"], "ops": [{"op": "arith.cmpi",
              "type": "i1", "operands": [0, 0], "predicate": "olt"}],
              "yield": 1})"),
            "op 0 ('arith.cmpi') has an unknown predicate 'olt'");
  EXPECT_EQ(readError(R"({"args": ["i32"], "ops": [{"op": "math.erf",
              "type": "f32", "operands": [0]}], "yield": 1})"),
            "op 0 of a program is not an op regions may hold");
  EXPECT_EQ(readError(R"({"args": ["f8E4M3"], "ops": [], "yield": 0})"),
            "a \"program\" has an argument of unknown type");
  EXPECT_EQ(readError(R"({"args": ["index"], "ops": [{"op": "tensor.extract",
              "type": "i32", "operands": [0]}], "yield": 1})"),
            "op 0 of a program reads no \"tensor\" (a function argument "
            "number)");
}

} // namespace

namespace {

TEST(ReferenceAttention, EmulatesTheFloat32KernelRoundedAsOurs) {
  // bf16 inputs: the emulated kernel errs by P's rounding to bf16, about a
  // unit of bf16's roundoff (2^-8), and a kernel within 1.25x of it passes.
  HostTensor q(ElementKind::BF16, {1, 2, 8, 16}),
      k(ElementKind::BF16, {1, 1, 40, 16}),
      v(ElementKind::BF16, {1, 1, 40, 16});
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> uniform(-1, 1);
  for (HostTensor *t : {&q, &k, &v})
    for (int64_t e = 0; e < t->numElements(); ++e)
      t->set(e, uniform(rng));
  ReferenceAttention problem;
  problem.q = &q;
  problem.k = &k;
  problem.v = &v;
  problem.scale = 0.25;
  problem.causal = true;
  problem.emulate = ElementKind::BF16;
  ReferenceResult result;
  std::string error;
  ASSERT_TRUE(referenceAttention(problem, result, error)) << error;
  ASSERT_EQ(result.emulated.size(), result.output.size());
  HostTensor peer(ElementKind::BF16, {1, 2, 8, 16});
  for (int64_t e = 0; e < peer.numElements(); ++e)
    peer.set(e, result.emulated[e]);
  bool finite;
  double peerError = relativeError(peer, result.output, finite);
  EXPECT_TRUE(finite);
  EXPECT_GT(peerError, 1e-4);
  EXPECT_LT(peerError, 1.6e-2);
  EXPECT_DOUBLE_EQ(peerBound(ElementKind::BF16, peerError),
                   1.25 * peerError + std::ldexp(1.0, -9));
  // A peer that rounded every output exactly still leaves a correct kernel
  // half a unit roundoff: an f16 program erred 1.3e-4 next to such a peer.
  EXPECT_DOUBLE_EQ(peerBound(ElementKind::F16, 0), std::ldexp(1.0, -12));
  // f32 has no peer to emulate.
  problem.emulate = ElementKind::F32;
  ASSERT_TRUE(referenceAttention(problem, result, error)) << error;
  EXPECT_TRUE(result.emulated.empty());
}

} // namespace
