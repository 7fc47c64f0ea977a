//===- attn-run.cpp - compile attention, run it, check it -----------------===//
//
// attn-run [FILE.mlir] --target=cpu [sizes] [variant flags]
//
// Compiles the function holding an attn.attention (from FILE, or built from
// the variant flags) with attn-lower-to-cpu, JIT-runs it with the MLIR
// ExecutionEngine on fresh random inputs (outputs poisoned first), computes
// a float64 reference from the op's definition, prints the relative
// Frobenius error and exits non-zero past the tolerance.
//
//===----------------------------------------------------------------------===//

#include "HostTensor.h"
#include "Reference.h"
#include "Variants.h"

#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/Pipelines/Pipelines.h"
#include "AttnDialect/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <random>

using namespace mlir;
using namespace attn_run;
namespace cl = llvm::cl;

static cl::OptionCategory category("attn-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::init(""),
                                      cl::desc("[input.mlir]"),
                                      cl::cat(category));
static cl::opt<std::string> target("target", cl::init("cpu"),
                                   cl::desc("where to run: cpu"),
                                   cl::cat(category));
static cl::opt<int64_t> batch("batch", cl::init(-1), cl::desc("B"),
                              cl::cat(category));
static cl::opt<int64_t> qHeads("q-heads", cl::init(-1), cl::desc("Hq"),
                               cl::cat(category));
static cl::opt<int64_t> kvHeads("kv-heads", cl::init(-1), cl::desc("Hkv"),
                                cl::cat(category));
static cl::opt<int64_t> qLen("q-len", cl::init(-1), cl::desc("M"),
                             cl::cat(category));
static cl::opt<int64_t> kvLen("kv-len", cl::init(-1), cl::desc("N"),
                              cl::cat(category));
static cl::opt<int64_t> headDim("head-dim", cl::init(64),
                                cl::desc("D (without an input file)"),
                                cl::cat(category));
static cl::opt<int64_t> valueDim("value-dim", cl::init(0),
                                 cl::desc("Dv (default D)"), cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::init("f32"),
                                  cl::desc("f32, f16 or bf16"),
                                  cl::cat(category));
static cl::opt<bool> causal("causal", cl::desc("causal mask"),
                            cl::cat(category));
static cl::opt<bool> logsumexp("lse", cl::desc("also return the logsumexp"),
                               cl::cat(category));
static cl::opt<std::string>
    mask("mask", cl::init("none"),
         cl::desc("none, sliding-window:W, document or prefix:P"),
         cl::cat(category));
static cl::opt<std::string>
    scoreMod("score-mod", cl::init("none"),
             cl::desc("none, alibi, softcap:C, relative or checkerboard"),
             cl::cat(category));
static cl::opt<bool> emitVariant("emit-variant",
                                 cl::desc("print the generated IR and stop"),
                                 cl::cat(category));
static cl::opt<int64_t> qTile("q-tile", cl::init(64), cl::cat(category));
static cl::opt<int64_t> kvTile("kv-tile", cl::init(64), cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::init(1), cl::cat(category));
static cl::opt<double> tolerance(
    "tolerance", cl::init(0.0),
    cl::desc("relative Frobenius error allowed (default 1e-5 for f32, 2e-3 "
             "for f16/bf16)"),
    cl::cat(category));
static cl::opt<bool> json("json", cl::desc("one JSON line on stdout"),
                          cl::cat(category));

namespace {

[[noreturn]] void fail(const llvm::Twine &message) {
  llvm::errs() << "attn-run: error: " << message << "\n";
  std::exit(2);
}

std::optional<ElementKind> kindOf(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isInteger(32))
    return ElementKind::I32;
  if (type.isInteger(64))
    return ElementKind::I64;
  if (type.isIndex())
    return ElementKind::Index;
  return std::nullopt;
}

/// The size of a dim: the flag if given, else the static size, else the
/// default; a flag that contradicts a static size is an error.
int64_t resolve(const char *name, int64_t flag, int64_t staticSize,
                int64_t fallback) {
  if (flag >= 0 && !ShapedType::isDynamic(staticSize) && flag != staticSize)
    fail(llvm::Twine("--") + name + "=" + llvm::Twine(flag) +
         " contradicts the static size " + llvm::Twine(staticSize) +
         " in the input");
  if (flag == 0 || flag < -1)
    fail(llvm::Twine("--") + name + " must be positive");
  if (flag > 0)
    return flag;
  return ShapedType::isDynamic(staticSize) ? fallback : staticSize;
}

struct Problem {
  int64_t b, hq, hkv, m, n, d, dv;
};

std::string describe(const Problem &p, StringRef elementType,
                     attn::AttentionOp op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "B=" << p.b << " Hq=" << p.hq << " Hkv=" << p.hkv << " M=" << p.m
     << " N=" << p.n << " D=" << p.d << " Dv=" << p.dv
     << " dtype=" << elementType << (op.getCausal() ? " causal" : "")
     << (op.hasMaskMod() ? " mask_mod" : "")
     << (op.hasScoreMod() ? " score_mod" : "");
  return text;
}

double relativeError(const HostTensor &out, const std::vector<double> &ref,
                     bool &allFinite) {
  double diff = 0, norm = 0;
  allFinite = true;
  for (int64_t i = 0; i < out.numElements(); ++i) {
    double o = out.get(i);
    if (!std::isfinite(o))
      allFinite = false;
    diff += (o - ref[i]) * (o - ref[i]);
    norm += ref[i] * ref[i];
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-run: compile attention, run it on fresh random inputs and check "
      "it against a float64 reference\n");

  if (target != "cpu")
    fail("--target=" + target +
         " is not available in this build: the GPU runtime is not built "
         "yet; use --target=cpu");

  // The IR: the input file, or a variant built from the flags.
  std::string source;
  if (inputFile.empty()) {
    VariantSpec spec;
    spec.dtype = dtype;
    spec.headDim = headDim;
    spec.valueDim = valueDim;
    spec.causal = causal;
    spec.logsumexp = logsumexp;
    spec.mask = mask;
    spec.scoreMod = scoreMod;
    llvm::Expected<std::string> text = variantSource(spec);
    if (!text)
      fail(llvm::toString(text.takeError()));
    source = *text;
    if (emitVariant) {
      llvm::outs() << source;
      return 0;
    }
  } else {
    auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
    if (!buffer)
      fail("cannot read '" + inputFile + "': " + buffer.getError().message());
    source = (*buffer)->getBuffer().str();
  }

  DialectRegistry registry;
  registry.insert<attn::AttnDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllPasses();
  attn::registerAttnPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, inputFile.empty()
                                                       ? "<variant>"
                                                       : inputFile.getValue()),
      llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    fail("the input does not parse or verify (see above)");

  // The function to run: the first with an attn.attention.
  func::FuncOp func;
  attn::AttentionOp op;
  module->walk([&](attn::AttentionOp found) {
    if (!op) {
      op = found;
      func = found->getParentOfType<func::FuncOp>();
    }
  });
  if (!op || !func)
    fail("the input has no attn.attention inside a func.func");
  unsigned numAttention = 0;
  func.walk([&](attn::AttentionOp) { ++numAttention; });
  if (numAttention != 1)
    fail("@" + func.getName() + " holds " + llvm::Twine(numAttention) +
         " attn.attention ops; attn-run checks one at a time");
  if (!op.getOffsets().empty())
    fail("the attn.attention is already a tile (it has offsets); give "
         "attn-run the untiled op");
  auto argIndex = [&](Value v, const char *role) -> unsigned {
    auto arg = dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != &func.getBody().front())
      fail(llvm::Twine("the ") + role + " of the attn.attention must be an "
           "argument of @" + func.getName());
    return arg.getArgNumber();
  };

  // Sizes.
  auto qType = op.getQueryType(), kType = op.getKeyType();
  Problem p;
  p.b = resolve("batch", batch, qType.getDimSize(0), 1);
  p.hq = resolve("q-heads", qHeads, qType.getDimSize(1), 4);
  p.hkv = resolve("kv-heads", kvHeads, kType.getDimSize(1), p.hq);
  p.m = resolve("q-len", qLen, qType.getDimSize(2), 64);
  p.n = resolve("kv-len", kvLen, kType.getDimSize(2), p.m);
  p.d = op.getHeadDim();
  p.dv = op.getValueHeadDim();
  if (p.hq % p.hkv != 0)
    fail("--q-heads=" + llvm::Twine(p.hq) + " is not a multiple of --kv-heads=" +
         llvm::Twine(p.hkv));

  // Host buffers, one per function argument.
  std::vector<std::unique_ptr<HostTensor>> buffers(func.getNumArguments());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  llvm::DenseMap<Value, const HostTensor *> captures;
  unsigned qi = argIndex(op.getQuery(), "query"),
           ki = argIndex(op.getKey(), "key"),
           vi = argIndex(op.getValue(), "value"),
           oi = argIndex(op.getOutputs()[0], "output");
  std::optional<unsigned> li;
  if (Value lse = op.getLogsumexpInit())
    li = argIndex(lse, "logsumexp");
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    std::optional<ElementKind> kind =
        type ? kindOf(type.getElementType()) : std::nullopt;
    if (!kind)
      fail("argument #" + llvm::Twine(arg.getArgNumber()) + " of @" +
           func.getName() +
           " is not a ranked tensor of f32/f16/bf16/i32/i64/index");
    unsigned i = arg.getArgNumber();
    std::vector<int64_t> shape;
    if (i == qi || i == oi)
      shape = {p.b, p.hq, p.m, i == qi ? p.d : p.dv};
    else if (i == ki || i == vi)
      shape = {p.b, p.hkv, p.n, i == ki ? p.d : p.dv};
    else if (li && i == *li)
      shape = {p.b, p.hq, p.m};
    else // a captured tensor: dynamic dims cover any b, h, q or kv index
      for (int64_t size : type.getShape())
        shape.push_back(ShapedType::isDynamic(size)
                            ? std::max({p.b, p.hq, p.m, p.n})
                            : size);
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (!ShapedType::isDynamic(size) && size != shape[d])
        fail("argument #" + llvm::Twine(i) + " has static dim " +
             llvm::Twine(d) + " = " + llvm::Twine(size) + ", expected " +
             llvm::Twine(shape[d]));
    auto buffer = std::make_unique<HostTensor>(*kind, shape);
    if (i == oi || (li && i == *li)) {
      buffer->poison();
    } else if (isFloat(*kind)) {
      // Captured floats (slopes, biases) are positive; Q, K, V symmetric.
      bool input = i == qi || i == ki || i == vi;
      for (int64_t e = 0; e < buffer->numElements(); ++e)
        buffer->set(e, input ? uniform(rng) : 0.5 + 0.5 * uniform(rng));
    } else {
      // Captured integers are sorted ids (documents, sequences): a few
      // random boundaries.
      int64_t id = 0;
      for (int64_t e = 0; e < buffer->numElements(); ++e) {
        if (e > 0 && rng() % 37 == 0)
          ++id;
        buffer->set(e, static_cast<double>(id));
      }
    }
    if (i != qi && i != ki && i != vi && i != oi && !(li && i == *li))
      captures[arg] = buffer.get();
    buffers[i] = std::move(buffer);
  }

  RegionInterpreter interpreter(captures);
  for (Region *region : {&op.getScoreMod(), &op.getMaskMod()})
    if (!region->empty())
      if (llvm::Error error = interpreter.check(*region))
        fail(llvm::toString(std::move(error)));

  // Compile.
  auto compileStart = std::chrono::steady_clock::now();
  OwningOpRef<ModuleOp> compiled = module->clone();
  // Upstream drops results that are just the outs buffers only from private
  // functions; then the C interface takes the buffers and returns nothing.
  compiled->lookupSymbol<func::FuncOp>(func.getName()).setPrivate();
  PassManager pm(&context);
  attn::CpuPipelineOptions options;
  options.qTile = qTile;
  options.kvTile = kvTile;
  if (failed(attn::buildCpuPipeline(pm, options, [](const llvm::Twine &msg) {
        llvm::errs() << "attn-run: error: " << msg << "\n";
        return failure();
      })))
    return 2;
  if (failed(pm.run(*compiled)))
    fail("compilation failed (see the diagnostics above)");
  auto llvmFunc = compiled->lookupSymbol<LLVM::LLVMFuncOp>(
      ("_mlir_ciface_" + func.getName()).str());
  if (!llvmFunc)
    fail("the compiled module has no C interface for @" + func.getName());
  if (llvmFunc.getNumArguments() != func.getNumArguments())
    fail("@" + func.getName() +
         " must return only the attn.attention results (written in place "
         "into its outs)");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(3, 0, nullptr);
  engineOptions.transformer = transformer;
  StringRef sharedLibs[] = {ATTN_C_RUNNER_UTILS};
  engineOptions.sharedLibPaths = sharedLibs;
  auto engine = ExecutionEngine::create(*compiled, engineOptions);
  if (!engine)
    fail("JIT compilation failed: " + llvm::toString(engine.takeError()));
  double compileMs = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - compileStart)
                         .count();

  // Run: the C interface takes a pointer to each memref descriptor.
  std::vector<void *> descriptors;
  for (auto &buffer : buffers)
    descriptors.push_back(buffer->descriptor());
  std::vector<void *> packed;
  for (void *&descriptor : descriptors)
    packed.push_back(&descriptor);
  auto runStart = std::chrono::steady_clock::now();
  if (llvm::Error error = (*engine)->invokePacked(
          ("_mlir_ciface_" + func.getName()).str(), packed))
    fail("running the kernel failed: " + llvm::toString(std::move(error)));
  double runMs = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - runStart)
                     .count();

  // Check.
  ReferenceResult ref = referenceAttention(op, interpreter, *buffers[qi],
                                           *buffers[ki], *buffers[vi]);
  bool finite;
  double error = relativeError(*buffers[oi], ref.output, finite);
  double lseError = 0;
  bool lseFinite = true;
  if (li) {
    // -inf rows (nothing unmasked) must come out -inf; compare the rest.
    const HostTensor &lse = *buffers[*li];
    double diff = 0, norm = 0;
    for (int64_t e = 0; e < lse.numElements(); ++e) {
      double got = lse.get(e), want = ref.logsumexp[e];
      if (std::isinf(want)) {
        if (got != want)
          lseFinite = false;
        continue;
      }
      if (!std::isfinite(got))
        lseFinite = false;
      diff += (got - want) * (got - want);
      norm += want * want;
    }
    lseError = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
  }
  Type elementType = op.getQueryType().getElementType();
  double allowed =
      tolerance > 0 ? tolerance.getValue() : (elementType.isF32() ? 1e-5 : 2e-3);
  bool pass = finite && lseFinite && error <= allowed && lseError <= allowed;

  std::string typeName;
  llvm::raw_string_ostream(typeName) << elementType;
  std::string problem = describe(p, typeName, op);
  if (json) {
    llvm::outs() << llvm::formatv(
        "{{\"target\": \"cpu\", \"B\": {0}, \"Hq\": {1}, \"Hkv\": {2}, "
        "\"M\": {3}, \"N\": {4}, \"D\": {5}, \"Dv\": {6}, \"dtype\": \"{7}\", "
        "\"causal\": {8}, \"error\": {9:e}, \"lse_error\": {10:e}, "
        "\"tolerance\": {11:e}, \"compile_ms\": {12:f1}, \"run_ms\": {13:f3}, "
        "\"pass\": {14}}\n",
        p.b, p.hq, p.hkv, p.m, p.n, p.d, p.dv, typeName,
        op.getCausal() ? "true" : "false", error, lseError, allowed, compileMs,
        runMs, pass ? "true" : "false");
  } else {
    llvm::outs() << "attn-run: target=cpu " << problem << "\n"
                 << llvm::formatv("  compile {0:f1} ms, run {1:f3} ms, error "
                                  "{2:e} (tolerance {3:e})",
                                  compileMs, runMs, error, allowed);
    if (li)
      llvm::outs() << llvm::formatv(", logsumexp error {0:e}", lseError);
    if (!finite || !lseFinite)
      llvm::outs() << ", non-finite or unwritten outputs";
    llvm::outs() << ": " << (pass ? "PASS" : "FAIL") << "\n";
  }
  return pass ? 0 : 1;
}
