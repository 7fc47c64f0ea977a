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

#include "AttnRuntime/HostTensor.h"
#include "GpuTarget.h"
#include "Harness.h"

#include "AttnDialect/Execution/CpuJit.h"
#include "AttnDialect/Execution/Variants.h"
#include "AttnDialect/IR/AttnDialect.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnDialect/InitAll.h"
#include "AttnDialect/Pipelines/Pipelines.h"

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
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <optional>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;
namespace cl = llvm::cl;

namespace {

/// Parses a size flag strictly: decimal digits only, up to INT64_MAX. LLVM's
/// own integer parser also takes a sign and 0x or octal (010 = 8) prefixes,
/// which no size means. (A parser<long long> so that cl::opt can print it.)
class SizeParser : public cl::parser<long long> {
public:
  using cl::parser<long long>::parser;

  // Returns true on error, as cl parsers do.
  bool parse(cl::Option &option, StringRef, StringRef arg, long long &value) {
    if (arg.empty() || !llvm::all_of(arg, llvm::isDigit) ||
        arg.getAsInteger(10, value))
      return option.error("'" + arg +
                          "' is not a size: sizes are decimal integers from "
                          "0 to 9223372036854775807");
    return false;
  }
  StringRef getValueName() const override { return "int"; }
};

using SizeList = cl::list<int64_t, bool, SizeParser>;
using SizeOpt = cl::opt<int64_t, false, SizeParser>;

} // namespace

static cl::OptionCategory category("attn-run options");
static cl::opt<std::string> inputFile(cl::Positional, cl::init(""),
                                      cl::desc("[input.mlir]"),
                                      cl::cat(category));
static cl::opt<std::string>
    target("target", cl::init("cpu"),
           cl::desc("where to run: cpu (JIT) or gpu (through the CUDA driver)"),
           cl::cat(category));
static cl::opt<std::string> chip("chip", cl::init(""),
                                 cl::desc("--target=gpu: the chip to compile "
                                          "for (default: the GPU's own)"),
                                 cl::cat(category));
static SizeOpt blockThreads("block-threads", cl::init(128),
                            cl::desc("--target=gpu: threads per block"),
                            cl::cat(category));
static cl::opt<std::string> reference(
    "reference", cl::init("auto"),
    cl::desc("auto (the GPU's float64 kernel for large problems without "
             "regions when --target=gpu, else the CPU), cpu or gpu"),
    cl::cat(category));
static cl::opt<int> repeat("repeat", cl::init(0),
                           cl::desc("--target=gpu: time this many more runs "
                                    "per case and report their median"),
                           cl::cat(category));
// Sizes are lists: attn-run compiles once and runs every combination, which
// is also the proof that one kernel serves every B, H, M and N.
static SizeList batches("batch", cl::CommaSeparated,
                        cl::desc("B values (default 1)"), cl::cat(category));
static cl::list<std::string>
    headPairs("heads", cl::CommaSeparated,
              cl::desc("Hq:Hkv pairs, e.g. 8:2 (default 4:4)"),
              cl::cat(category));
static SizeList qLens("q-len", cl::CommaSeparated,
                      cl::desc("M values (default 64)"), cl::cat(category));
static SizeList kvLens("kv-len", cl::CommaSeparated,
                       cl::desc("N values (default: M)"), cl::cat(category));
static SizeOpt headDim("head-dim", cl::init(64),
                       cl::desc("D (without an input file)"),
                       cl::cat(category));
static SizeOpt valueDim("value-dim", cl::init(0), cl::desc("Dv (default D)"),
                        cl::cat(category));
static cl::opt<std::string> dtype("dtype", cl::init("f32"),
                                  cl::desc("f32, f16 or bf16"),
                                  cl::cat(category));
static cl::opt<bool> causal("causal", cl::desc("causal mask"),
                            cl::cat(category));
static cl::opt<bool>
    backward("backward",
             cl::desc("check the attention's backward (attn.attention_grad: "
                      "dQ, dK and dV against float64 gradients) on "
                      "--target"),
             cl::init(false), cl::cat(category));
static cl::opt<bool> captureGrads(
    "capture-grads",
    cl::desc("with --backward: also check the gradient of the score_mod's "
             "float capture (alibi's slopes)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> logsumexp("lse", cl::desc("also return the logsumexp"),
                               cl::cat(category));
static cl::opt<std::string>
    mask("mask", cl::init("none"),
         cl::desc("none, sliding-window:W, document, prefix:P, jagged:P, "
                  "sasa:W:K or natten:H:W:K"),
         cl::cat(category));
static cl::opt<std::string>
    scoreMod("score-mod", cl::init("none"),
             cl::desc("none, alibi, softcap:C, relative or checkerboard"),
             cl::cat(category));
static cl::opt<std::string> entry("entry", cl::init(""),
                                  cl::desc("the function to run (default: "
                                           "the first with an attn op)"),
                                  cl::cat(category));
static cl::opt<std::string> opName("op", cl::init("attention"),
                                   cl::desc("attention or softmax (without "
                                            "an input file)"),
                                   cl::cat(category));
static SizeList softmaxRows("rows", cl::CommaSeparated,
                            cl::desc("softmax rows (default 4)"),
                            cl::cat(category));
static SizeList rowLens("row-len", cl::CommaSeparated,
                        cl::desc("softmax row lengths (default 1000)"),
                        cl::cat(category));
static SizeOpt givenBlockMask(
    "given-block-mask", cl::init(0),
    cl::desc("with --emit-variant: the function takes a block mask of this "
             "block size as list arguments after the captures (four, the "
             "kv side; eight with --backward, the q side too)"),
    cl::cat(category));
static cl::opt<bool> emitVariant("emit-variant",
                                 cl::desc("print the generated IR and stop"),
                                 cl::cat(category));
static SizeOpt qTile("q-tile", cl::init(0),
                     cl::desc("query rows per tile (0: 64 on the CPU, the "
                              "pipeline's choice per kernel on the GPU)"),
                     cl::cat(category));
static cl::opt<std::string> transformFile(
    "transform", cl::init(""),
    cl::desc("a transform-dialect file whose @__transform_main runs on the "
             "input before the CPU pipeline (e.g. split-kv tiling)"),
    cl::value_desc("FILE.mlir"), cl::cat(category));
static SizeOpt kvTile("kv-tile", cl::init(0),
                      cl::desc("keys per kv step (0: 64 on the CPU, the "
                               "pipeline's choice on the GPU)"),
                      cl::cat(category));
static cl::opt<attn::KernelStrategy> strategy(
    "strategy", cl::init(attn::KernelStrategy::Auto),
    cl::desc("--target=gpu: the attention kernels (attn-lower-to-nvvm's "
             "strategy; default auto, the pipeline's choice)"),
    attn::kernelStrategyValues(), cl::cat(category));
static cl::opt<bool> boundsChecks(
    "bounds-checks", cl::init(true),
    cl::desc("compile the CPU kernel with region bounds checks: a captured "
             "read out of bounds or a division by zero is an error naming "
             "the argument and the index (default on; "
             "--bounds-checks=false measures the unchecked kernel)"),
    cl::cat(category));
static SizeOpt rowTile("row-tile", cl::init(4096),
                       cl::desc("softmax elements per step"),
                       cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::init(1), cl::cat(category));
static cl::opt<double> tolerance(
    "tolerance", cl::init(0.0),
    cl::desc("relative Frobenius error allowed (default 1e-5 for f32, 2e-3 "
             "for f16/bf16; 1.6e-2 for bf16 attention on the GPU, whose "
             "tensor cores take P in bf16)"),
    cl::cat(category));
static cl::opt<bool> json("json", cl::desc("one JSON line on stdout"),
                          cl::cat(category));
static cl::opt<bool> showBlockMask(
    "show-block-mask",
    cl::desc("print each case's block pattern (batch 0, head 0): which "
             "blocks (of the op's block mask's sizes, else 128 x 128) hold "
             "positions the op keeps"),
    cl::cat(category));

namespace {

/// Compiles @func of `module` for the CPU (after --transform's script).
std::unique_ptr<attn::CpuKernel>
compileForCpu(ModuleOp module, func::FuncOp func, double &compileMs) {
  auto start = std::chrono::steady_clock::now();
  attn::CpuPipelineOptions options;
  // The CPU pipeline takes tiles as given.
  options.qTile = qTile > 0 ? qTile.getValue() : 64;
  options.kvTile = kvTile > 0 ? kvTile.getValue() : 64;
  options.rowTile = rowTile;
  options.boundsChecks = boundsChecks;
  auto kernel =
      attn::CpuKernel::compile(module, func.getName(), options, transformFile);
  if (!kernel)
    fail(llvm::toString(kernel.takeError()));
  compileMs = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  return std::move(*kernel);
}

/// Compiles @func once, for the CPU (JIT: `kernel`) or the GPU (a kernel
/// bundle run through the CUDA driver: the result).
std::unique_ptr<GpuTarget> compileFor(ModuleOp module, func::FuncOp func,
                                      std::unique_ptr<attn::CpuKernel> &kernel,
                                      double &compileMs) {
  if (target != "gpu") {
    kernel = compileForCpu(module, func, compileMs);
    return nullptr;
  }
  GpuOptions options;
  options.chip = chip;
  options.qTile = qTile;
  options.kvTile = kvTile;
  options.threads = blockThreads;
  options.strategy = strategy;
  options.repeat = repeat;
  // Gradients must come out the same on every run.
  options.checkRepeatable =
      func.walk([](attn::AttentionGradOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
  auto created = GpuTarget::create(module, func, options);
  if (!created)
    fail(llvm::toString(created.takeError()));
  compileMs = (*created)->compileMs();
  return std::move(*created);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // A failed allocation (operator new included) is an error naming what
  // was being allocated, not LLVM's "out of memory" abort.
  llvm::install_bad_alloc_error_handler(outOfMemory);
  llvm::install_out_of_memory_new_handler();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "attn-run: compile attention, run it on fresh random inputs and check "
      "it against a float64 reference\n");

  if (target != "cpu" && target != "gpu")
    fail("--target must be cpu or gpu, not '" + target + "'");
  if (reference != "auto" && reference != "cpu" && reference != "gpu")
    fail("--reference must be auto, cpu or gpu, not '" + reference + "'");
  // 0 (the default) picks the dtype's tolerance; a given one must be usable.
  if (tolerance.getNumOccurrences() && !(tolerance > 0))
    fail("--tolerance must be positive, got " +
         std::to_string(tolerance.getValue()));
  if (repeat < 0)
    fail("--repeat must be 0 or more, got " + llvm::Twine(repeat));
  if (!transformFile.empty() && !llvm::sys::fs::exists(transformFile))
    fail("--transform: no file '" + transformFile + "'");
  if (target == "gpu" && !transformFile.empty())
    fail("--transform applies to --target=cpu only");

  // The IR: the input file, or a variant built from the flags.
  std::string source;
  if (inputFile.empty()) {
    attn::VariantSpec spec;
    spec.dtype = dtype;
    spec.headDim = headDim;
    spec.valueDim = valueDim;
    spec.causal = causal;
    spec.logsumexp = logsumexp;
    spec.mask = mask;
    spec.scoreMod = scoreMod;
    spec.fillHints = true;
    spec.givenBlockMask = givenBlockMask;
    spec.backward = backward;
    spec.captureGrads = captureGrads;
    if (captureGrads && !backward)
      fail("--capture-grads needs --backward");
    if (givenBlockMask && !emitVariant)
      fail("--given-block-mask needs --emit-variant: attn-run fills no "
           "block-mask lists");
    if (opName != "attention" && opName != "softmax")
      fail("--op must be attention or softmax, not '" + opName + "'");
    if (backward && opName == "softmax")
      fail("--backward checks attention's gradients; --op=softmax has none");
    llvm::Expected<std::string> text = opName == "softmax"
                                           ? attn::softmaxSource(dtype)
                                           : attn::variantSource(spec);
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
  attn::registerAllDialectsAndAttn(registry);
  attn::registerAllPassesAndAttn();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          source, inputFile.empty() ? "<variant>" : inputFile.getValue()),
      llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    fail("the input does not parse or verify (see above)");

  // Either check compiles its function once, for --target.
  auto compile = [&](func::FuncOp func,
                     std::unique_ptr<attn::CpuKernel> &kernel,
                     double &compileMs) {
    return compileFor(*module, func, kernel, compileMs);
  };

  // A softmax to check?
  attn::SoftmaxOp softmax;
  module->walk([&](attn::SoftmaxOp found) {
    if (!softmax)
      softmax = found;
  });
  bool hasAttention = false, hasGrad = false;
  module->walk([&](attn::AttentionOp) { hasAttention = true; });
  module->walk([&](attn::AttentionGradOp) { hasGrad = true; });
  if (softmax && !hasAttention) {
    SoftmaxSweep sweep;
    sweep.rows = softmaxRows;
    sweep.lengths = rowLens;
    sweep.tolerance = tolerance;
    sweep.seed = seed;
    sweep.json = json;
    return runSoftmax(softmax, sweep, compile);
  }

  AttentionSweep sweep;
  sweep.entry = entry;
  sweep.batches = batches;
  sweep.qLens = qLens;
  sweep.kvLens = kvLens;
  std::vector<std::string> pairs(headPairs.begin(), headPairs.end());
  sweep.headPairs = pairs;
  sweep.reference = reference;
  sweep.tolerance = tolerance;
  sweep.seed = seed;
  sweep.json = json;
  sweep.showBlockMask = showBlockMask;
  if (hasGrad && (backward || !hasAttention))
    return runAttentionGrad(*module, sweep, compile);
  if (backward)
    fail("--backward checks an attn.attention_grad, and the input has none");
  return runAttention(*module, sweep, compile);
}
