//===- BundleTest.cpp - reading and validating kernel bundles -------------===//

#include "AttnRuntime/Bundle.h"

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

using namespace attn_runtime;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

const char *kBundle = R"json({
  "format": "attn-kernel-bundle",
  "version": 2,
  "binaries": [{"name": "k", "file": "NAME-k.ptx", "format": "ptx",
                "target": "#nvvm.target<chip = \"sm_90\">"}],
  "functions": [{"name": "attention",
    "args": [{"name": "q", "dtype": "f16", "shape": [null, 8, null, 64]},
             {"name": "out", "dtype": "f16", "shape": [null, 8, null, 64]}],
    "computes": [{"op": "attention", "dtype": "f16", "head_dim": 64,
      "value_head_dim": 64, "scale": 0.125, "causal": true,
      "logsumexp": false, "block_mask": false,
      "mask_mod": {"name": "sliding-window:32", "digest": "0123456789abcdef"},
      "score_mod": null}],
    "launches": [{"module": "k", "kernel": "k",
      "grid": [{"op": "ceildiv", "lhs": {"dim": {"arg": "q", "index": 2}},
                "rhs": {"const": 64}}, {"const": 8}, {"const": 1}],
      "block": [{"const": 64}, {"const": 1}, {"const": 1}],
      "operands": [{"kind": "buffer", "arg": "q"},
                   {"kind": "buffer", "arg": "out"},
                   {"kind": "f32", "value": 1.25E-1},
                   {"kind": "int", "value": {"dim": {"arg": "q", "index": 0}}}]
    }]}]
})json";

std::string bundleText(const std::string &name) {
  std::string text = kBundle;
  text.replace(text.find("NAME"), 4, name);
  return text;
}

std::string writeBundle(const std::string &name, const std::string &json,
                        bool withPtx = true) {
  std::string dir = ::testing::TempDir();
  std::ofstream(dir + name + "-bundle.json") << json;
  if (withPtx)
    std::ofstream(dir + name + "-k.ptx") << ".version 8.0\n.target sm_90\n";
  return dir + name + "-bundle.json";
}

std::string writeIn(const std::string &dir, const std::string &name,
                    const std::string &text) {
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

/// A directory of this process's own: ctest runs each test in a process of
/// its own, in parallel, and they must not rewrite each other's files.
std::string variantsDir() {
  return ::testing::TempDir() + "variants-" + std::to_string(::getpid());
}

/// The error of loading kBundle with `from` replaced by `to` (its binary in
/// place), or "" when it loads.
std::string loadWith(const std::string &from, const std::string &to) {
  std::string dir = variantsDir();
  writeIn(dir, "k.ptx", ".version 8.0\n");
  std::string text = bundleText("");
  text.replace(text.find("-k.ptx"), 6, "k.ptx");
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  Bundle bundle;
  std::string error;
  return Bundle::parse(text, dir, bundle, error) ? "" : error;
}

TEST(RuntimeBundle, LoadsBundles) {
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(
      Bundle::load(writeBundle("good", bundleText("good")), bundle, error))
      << error;
  ASSERT_NE(bundle.binary("k"), nullptr);
  EXPECT_EQ(bundle.binary("k")->format, "ptx");
  EXPECT_TRUE(contains(bundle.binary("k")->image, ".target sm_90"));
  const Function *f = bundle.function("attention");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->args.size(), 2u);
  EXPECT_EQ(f->args[1].name, "out");
  EXPECT_EQ(f->args[1].dtype, "f16");
  EXPECT_EQ(f->args[1].elementBytes, 2);
  EXPECT_EQ(f->args[1].shape, (std::vector<int64_t>{-1, 8, -1, 64}));
  EXPECT_EQ(f->args[1].str(), "memref<?x8x?x64xf16>");
  EXPECT_EQ(f->argIndex("out"), 1);
  EXPECT_EQ(f->argIndex("lse"), -1);
  EXPECT_EQ(f->contract.argName(1), "out");

  ASSERT_EQ(f->computes.size(), 1u);
  const Computation &c = f->computes[0];
  EXPECT_EQ(c.op, "attention");
  EXPECT_EQ(c.dtype, "f16");
  EXPECT_EQ(c.headDim, 64);
  EXPECT_EQ(c.scale, 0.125f);
  EXPECT_TRUE(c.causal);
  EXPECT_FALSE(c.logsumexp);
  EXPECT_TRUE(c.maskMod.present);
  EXPECT_EQ(c.maskMod.name, "sliding-window:32");
  EXPECT_EQ(c.maskMod.digest, "0123456789abcdef");
  EXPECT_FALSE(c.scoreMod.present);

  const Launch &launch = f->launches[0];
  std::vector<Argument> args(2);
  args[0].shape = args[1].shape = {3, 8, 130, 64};
  int64_t gridX;
  ASSERT_TRUE(evaluateIndex(launch.grid[0], args, gridX, error));
  EXPECT_EQ(gridX, 3);
  // A launch without "shared_memory_bytes" needs no dynamic shared memory.
  int64_t shared = -1;
  ASSERT_TRUE(evaluateIndex(launch.sharedMemoryBytes, args, shared, error));
  EXPECT_EQ(shared, 0);
  ASSERT_EQ(launch.operands.size(), 4u);
  EXPECT_EQ(launch.operands[1].kind, Operand::Kind::Buffer);
  EXPECT_EQ(launch.operands[1].arg, 1);
  EXPECT_EQ(launch.operands[2].f32, 0.125f);
  std::vector<Param> params;
  ASSERT_TRUE(launch.params(args, params, error)) << error;
  EXPECT_EQ(params.back().i64, 3);

  std::string withShared = bundleText("shared");
  withShared.replace(withShared.find(R"("block")"), 0,
                     R"("shared_memory_bytes": {"const": 76288}, )");
  ASSERT_TRUE(Bundle::load(writeBundle("shared", withShared), bundle, error))
      << error;
  ASSERT_TRUE(
      evaluateIndex(bundle.function("attention")->launches[0].sharedMemoryBytes,
                    args, shared, error));
  EXPECT_EQ(shared, 76288);
}

TEST(RuntimeBundle, RefusesADanglingOperandAtLoadByName) {
  EXPECT_EQ(loadWith(R"({"kind": "buffer", "arg": "out"})",
                     R"({"kind": "buffer", "arg": "kk"})"),
            "'bundle.json' is not a valid kernel bundle: function "
            "'attention': kernel 'k' operand 1 names argument 'kk', which the "
            "function does not have (it has q, out)");
}

TEST(RuntimeBundle, ReadsTensorMapOperands) {
  // kBundle with its second operand replaced by `operand`: "" when it loads.
  auto withOperand = [](const std::string &operand) {
    return loadWith(R"({"kind": "buffer", "arg": "out"})", operand);
  };
  // The box: one size per dim, outermost first; 64 f16 make 128-byte rows.
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "q", "box": [1, 1, 128, 64]})"),
      "");
  std::string prefix = "'bundle.json' is not a valid kernel bundle: function "
                       "'attention': kernel 'k' operand 1 ";
  EXPECT_EQ(withOperand(R"({"kind": "tensor_map", "arg": "q"})"),
            prefix + "has no \"box\" list (the sizes of a copy's box)");
  EXPECT_EQ(
      withOperand(R"({"kind": "tensor_map", "arg": "q", "box": [128, 64]})"),
      prefix + "has a box of 2 sizes for argument 'q' of rank 4 (a tensor map "
               "takes 1 to 5 dims, one size each)");
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "q", "box": [1, 1, 512, 64]})"),
      prefix + "has a \"box\" size that is not an integer from 1 to 256");
  // Rows of 64 and 32 bytes take the 64- and 32-byte swizzles.
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "q", "box": [1, 1, 128, 32]})"),
      "");
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "q", "box": [1, 1, 128, 16]})"),
      "");
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "q", "box": [1, 1, 128, 48]})"),
      prefix + "has a box whose rows are 96 bytes (the swizzles take 32, 64 "
               "or 128)");
  EXPECT_EQ(
      withOperand(
          R"({"kind": "tensor_map", "arg": "x", "box": [1, 1, 128, 64]})"),
      prefix + "names argument 'x', which the function does not have (it "
               "has q, out)");
}

TEST(RuntimeBundle, RejectsBrokenBundlesWithAReason) {
  Bundle bundle;
  std::string error;
  EXPECT_FALSE(Bundle::load(::testing::TempDir() + "missing-bundle.json",
                            bundle, error));
  EXPECT_TRUE(contains(error, "cannot read")) << error;

  std::string text = bundleText("cut");
  EXPECT_FALSE(Bundle::load(writeBundle("cut", text.substr(0, text.size() / 2)),
                            bundle, error));
  EXPECT_TRUE(contains(error, "is not a kernel bundle: invalid JSON at byte"))
      << error;

  EXPECT_FALSE(Bundle::load(writeBundle("noptx", bundleText("noptx"), false),
                            bundle, error));
  EXPECT_TRUE(contains(error, "cannot read")) << error;
}

TEST(RuntimeBundle, ChecksTheFormatAndVersion) {
  const std::string why =
      "; this runtime reads version 2 (write the bundle again with a "
      "matching attn)";
  EXPECT_TRUE(contains(loadWith(R"("version": 2)", R"("version": 1)"),
                       "is not a valid kernel bundle: it has version 1" + why));
  EXPECT_TRUE(
      contains(loadWith(R"("version": 2)", R"("version": "2")"), "'2'" + why));
  EXPECT_TRUE(
      contains(loadWith(R"("version": 2,)", ""), "it has version none" + why));
  EXPECT_TRUE(contains(
      loadWith(R"("format": "attn-kernel-bundle")", R"("format": "other")"),
      "\"format\" is not \"attn-kernel-bundle\""));
  EXPECT_TRUE(contains(loadWith(R"("format": "attn-kernel-bundle",)", ""),
                       "\"format\" is not \"attn-kernel-bundle\""));
}

TEST(RuntimeBundle, ValidationErrorsNameWhatIsWrong) {
  struct Case {
    const char *from, *to, *error;
  } cases[] = {
      // Arguments.
      {R"("dtype": "f16", "shape")", R"("dtype": "f8", "shape")",
       "function 'attention': argument 0 ('q') has unknown dtype 'f8' "
       "(expected f16, bf16, f32, f64, i1, i8, i16, i32, i64 or index)"},
      {R"({"name": "out")", R"({"name": "q")",
       "argument 1 ('q') has the name of argument 0"},
      {"[null, 8, null, 64]", "[null, -8, null, 64]",
       "argument 0 ('q') has a size that is neither a non-negative integer "
       "nor null (dynamic)"},
      {R"(, "shape": [null, 8, null, 64]},)", "},",
       "argument 0 is not {\"name\": NAME, \"dtype\": TYPE, \"shape\": "
       "[...]}"},
      // What it computes.
      {R"("op": "attention")", R"("op": "matmul")",
       "\"computes\" entry 0 has unknown op 'matmul' (expected attention, "
       "attention_grad or softmax)"},
      {R"("dtype": "f16", "head_dim")", R"("dtype": "fp16", "head_dim")",
       "\"computes\" entry 0 has unknown dtype 'fp16'"},
      {R"("head_dim": 64,)", "",
       "\"computes\" entry 0 needs integers \"head_dim\", \"value_head_dim\" "
       "and an f32 \"scale\""},
      {R"("scale": 0.125)", R"("scale": 1e300)", "an f32 \"scale\""},
      {R"("causal": true)", R"("causal": 1)",
       "\"computes\" entry 0 has a \"causal\" that is not true or false"},
      {R"("mask_mod": {"name": "sliding-window:32", "digest": "0123456789abcdef"})",
       R"("mask_mod": "sliding-window:32")",
       "has a \"mask_mod\" that is neither null nor {\"name\": NAME, "
       "\"digest\": HEX}"},
      {R"("causal": true)", R"("causal": true, "wrt": {"tensor": 1})",
       "\"computes\" entry 0 has a \"wrt\" that is not a list"},
      {R"("causal": true)",
       R"("causal": true, "wrt": [{"tensor": 1, "grad": 2}])",
       "\"computes\" entry 0 has a \"wrt\" entry whose \"tensor\" and "
       "\"grad\" are not argument numbers (or -1)"},
      // Launches.
      {R"("module": "k")", R"("module": "m")",
       "kernel 'k' names binary 'm', which the bundle does not have"},
      {R"({"const": 8}, {"const": 1}],)", R"({"const": 8}],)",
       "kernel 'k' needs \"grid\": a list of 3 expressions"},
      {R"("op": "ceildiv")", R"("op": "roundup")",
       "kernel 'k' grid[0] has unknown op 'roundup'"},
      {R"("index": 2}})", R"("index": 4}})",
       "kernel 'k' grid[0] takes dim 4 of 'q', which has rank 4"},
      {R"("block": [{"const": 64})",
       R"("block": [{"dim": {"arg": "v", "index": 0}})",
       "kernel 'k' block[0] names argument 'v', which the function does not "
       "have (it has q, out)"},
      {R"("block")",
       R"("shared_memory_bytes": {"op": "mul", "lhs": {"const": 2}}, "block")",
       "kernel 'k' shared_memory_bytes has no \"rhs\""},
      {R"("block")", R"("workspace_bytes": 4096, "block")",
       "kernel 'k' workspace_bytes is not an expression (a JSON object)"},
      {R"("block")", R"("scratch_bytes": 4096, "block")",
       "kernel 'k' scratch_bytes is not an expression (a JSON object)"},
      // Kernel operands.
      {R"("kind": "f32")", R"("kind": "f64")",
       "kernel 'k' operand 2 has unknown kind 'f64' (expected buffer, "
       "tensor_map, workspace, scratch, int or f32)"},
      {"1.25E-1", "1e39",
       "kernel 'k' operand 2 has a \"value\" that is no f32 (a number f32 "
       "holds, \"inf\", \"-inf\" or \"nan\")"},
      {"1.25E-1", R"("1.25E-1")",
       "kernel 'k' operand 2 has a \"value\" that "
       "is no f32"},
      {R"("kind": "int", "value")", R"("kind": "int", "valu")",
       "kernel 'k' operand 3 has no \"value\""},
      {R"({"kind": "buffer", "arg": "q"})", R"({"kind": "buffer"})",
       "kernel 'k' operand 0 has no \"arg\" (the argument's name)"},
      {R"({"kind": "buffer", "arg": "q"})", R"({"arg": "q"})",
       "kernel 'k' operand 0 has no \"kind\""},
      {R"("index": 0}}}])", R"("index": 0}, "op": "add"}}])",
       "kernel 'k' operand 3 has unknown member 'op'"},
  };
  for (const Case &k : cases) {
    std::string error = loadWith(k.from, k.to);
    EXPECT_TRUE(contains(error, k.error)) << k.to << "\n" << error;
  }
}

TEST(RuntimeBundle, ReadsF32ConstantsExactly) {
  std::string dir = variantsDir();
  auto f32 = [&](const std::string &value) {
    std::string text = bundleText("");
    text.replace(text.find("-k.ptx"), 6, "k.ptx");
    text.replace(text.find("1.25E-1"), 7, value);
    writeIn(dir, "k.ptx", ".version 8.0\n");
    Bundle bundle;
    std::string error;
    EXPECT_TRUE(Bundle::parse(text, dir, bundle, error)) << error;
    return bundle.functions.empty()
               ? 0.0f
               : bundle.functions[0].launches[0].operands[2].f32;
  };
  EXPECT_EQ(f32("0.1"), 0.1f);
  EXPECT_EQ(f32("3.40282347E+38"), 3.40282347e38f);
  EXPECT_EQ(f32("1.0E-45"), 1e-45f);
  EXPECT_TRUE(std::isinf(f32(R"("-inf")")) && f32(R"("-inf")") < 0);
  EXPECT_TRUE(std::isinf(f32(R"("inf")")));
  EXPECT_TRUE(std::isnan(f32(R"("nan")")));
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

//===- Shape contracts ----------------------------------------------------===//

const char *kContractBundle = R"json({
  "format": "attn-kernel-bundle", "version": 2,
  "binaries": [{"name": "k", "file": "k.ptx", "format": "ptx", "target": ""}],
  "functions": [{"name": "gqa",
    "args": [{"name": "q", "dtype": "f16", "shape": [null, 8, null, 64]},
             {"name": "k", "dtype": "f16", "shape": [null, null, null, 64]},
             {"name": "v", "dtype": "f16", "shape": [null, null, null, 64]},
             {"name": "out", "dtype": "f16", "shape": [null, 8, null, 64]},
             {"name": "lse", "dtype": "f32", "shape": [null, 8, null]},
             {"name": "argument 5", "dtype": "i32", "shape": [null]}],
    "shape_contract": {"constraints": [
        {"kind": "equal", "lhs": [1, 0], "rhs": [0, 0], "what": "batch"},
        {"kind": "multiple_of", "lhs": [0, 1], "rhs": [1, 1],
         "what": "query heads"},
        {"kind": "equal", "lhs": [3, 2], "rhs": [0, 2],
         "what": "query length"},
        {"kind": "at_least", "lhs": [5, 0], "rhs": [1, 2],
         "what": "document ids, indexed by kv position"}]},
    "launches": [{"module": "k", "kernel": "k",
      "grid": [{"dim": {"arg": "q", "index": 2}}, {"const": 1}, {"const": 1}],
      "block": [{"const": 128}, {"const": 1}, {"const": 1}],
      "operands": [{"kind": "buffer", "arg": "q"},
                   {"kind": "buffer", "arg": "argument 5"}]}]}]
})json";

std::vector<std::vector<int64_t>> gqaShapes() {
  return {{2, 8, 8, 64}, {2, 2, 64, 64}, {2, 2, 64, 64},
          {2, 8, 8, 64}, {2, 8, 8},      {64}};
}

// Each test writes its own directory: ctest runs them in parallel, and a
// test rewriting k.ptx would let another read it empty.
TEST(RuntimeShapes, ReadsTheContractAndChecksArguments) {
  std::string dir = ::testing::TempDir() + "contract-arguments";
  writeIn(dir, "k.ptx", ".version 8.0\n");
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(Bundle::parse(kContractBundle, dir, bundle, error)) << error;
  const Function &f = bundle.functions[0];
  EXPECT_EQ(f.contract.argDims[0], (std::vector<int64_t>{-1, 8, -1, 64}));
  EXPECT_EQ(f.args[4].elementBytes, 4);
  ASSERT_EQ(f.contract.constraints.size(), 4u);
  EXPECT_EQ(f.contract.constraints[1].kind, ShapeConstraint::Kind::MultipleOf);
  EXPECT_EQ(f.contract.argName(5), "argument 5");
  EXPECT_EQ(f.launches[0].operands[1].arg, 5);

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

// A block mask's lists given as arguments 6 and 7: batch and heads 1 or
// q's, rows covering q's 128-row blocks; the mask's kv_len fixed at 300.
TEST(RuntimeShapes, ReadsBlockMaskConstraints) {
  std::string dir = ::testing::TempDir() + "contract-block-mask";
  writeIn(dir, "k.ptx", ".version 8.0\n");
  std::string text = kContractBundle;
  std::string extra =
      R"json({"kind": "one_or_equal", "lhs": [5, 0], "rhs": [0, 1],
              "what": "the block mask's heads"},
             {"kind": "at_least", "lhs": [5, 0], "rhs": [0, 2],
              "rhs_block": 128, "what": "the block mask's rows"},
             {"kind": "equal", "lhs": [1, 2], "rhs_value": 300,
              "what": "the kv length, fixed by the block mask's kv_len"},
             )json";
  // In place of the document ids' constraint.
  size_t ids = text.find(R"({"kind": "at_least", "lhs": [5, 0])");
  text.replace(ids, text.find("]}", ids) - ids,
               extra.substr(0, extra.rfind(',')));
  Bundle bundle;
  std::string error;
  ASSERT_TRUE(Bundle::parse(text, dir, bundle, error)) << error;
  const Function &f = bundle.functions[0];
  ASSERT_EQ(f.contract.constraints.size(), 6u);
  EXPECT_EQ(f.contract.constraints[3].kind, ShapeConstraint::Kind::OneOrEqual);
  EXPECT_EQ(f.contract.constraints[4].rhsBlock, 128);
  EXPECT_EQ(f.contract.constraints[5].rhsValue, std::optional<int64_t>(300));

  // Argument 5 stands for the mask's lists here: 1 or 8 of them, at least
  // ceil(M / 128) of them; k's length must be 300.
  auto shapes = [](int64_t lists, int64_t m, int64_t n) {
    return std::vector<std::vector<int64_t>>{{2, 8, m, 64}, {2, 2, n, 64},
                                             {2, 2, n, 64}, {2, 8, m, 64},
                                             {2, 8, m},     {lists}};
  };
  EXPECT_EQ(f.checkArguments(shapes(8, 1024, 300)), "");
  EXPECT_EQ(f.checkArguments(shapes(1, 129, 300)),
            "@gqa: argument 5 dim 0 (the block mask's rows) is 1 but the "
            "128-blocks of q dim 2 is 2; it must be at least that");
  EXPECT_EQ(f.checkArguments(shapes(3, 129, 300)),
            "@gqa: argument 5 dim 0 (the block mask's heads) is 3 but q dim "
            "1 is 8; it must be 1 or that");
  EXPECT_EQ(f.checkArguments(shapes(8, 1024, 301)),
            "@gqa: k dim 2 (the kv length, fixed by the block mask's kv_len) "
            "is 301; it must be 300");
}

TEST(RuntimeShapes, ContractErrorsAreLoadErrors) {
  std::string dir = ::testing::TempDir() + "contract-errors";
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
                       "constraint 0 has no kind equal, multiple_of, "
                       "at_least, at_most or one_or_equal"));
  EXPECT_TRUE(contains(loadWith(R"("rhs": [1, 2])", R"("rhs_value": -3)"),
                       "constraint 3 needs \"rhs_value\": a size >= 0"));
  EXPECT_TRUE(
      contains(loadWith(R"("rhs": [1, 2])", R"("rhs": [1, 2], "rhs_block": 0)"),
               "constraint 3 needs \"rhs_block\": a block size >= 1"));
  EXPECT_TRUE(contains(loadWith(R"({"constraints": [)", R"({"names": [)"),
                       "\"shape_contract\" must be an object with a list "
                       "\"constraints\""));

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
            "@gqa: out dim 1 is 4 but its type fixes it at 8");
}

} // namespace
