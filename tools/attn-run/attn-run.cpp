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

#include "AttnRuntime/GpuReference.h"
#include "AttnRuntime/HostTensor.h"
#include "GpuTarget.h"
#include "Harness.h"
#include "Reference.h"

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
#include <random>


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
             "block size as four list arguments after the captures"),
    cl::cat(category));
static cl::opt<bool> emitVariant("emit-variant",
                                 cl::desc("print the generated IR and stop"),
                                 cl::cat(category));
static SizeOpt qTile("q-tile", cl::init(64), cl::cat(category));
static cl::opt<std::string> transformFile(
    "transform", cl::init(""),
    cl::desc("a transform-dialect file whose @__transform_main runs on the "
             "input before the CPU pipeline (e.g. split-kv tiling)"),
    cl::value_desc("FILE.mlir"), cl::cat(category));
static SizeOpt kvTile("kv-tile", cl::init(64), cl::cat(category));
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
             "for f16/bf16)"),
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

/// The argument attribute that says how attn-run fills a captured tensor.
constexpr llvm::StringLiteral kFillAttrName = "attn.fill";

struct Problem {
  int64_t b, hq, hkv, m, n, d, dv;
};

/// Compiles @func of `module` for the CPU (after --transform's script).
std::unique_ptr<attn::CpuKernel>
compileForCpu(ModuleOp module, func::FuncOp func, double &compileMs) {
  auto start = std::chrono::steady_clock::now();
  attn::CpuPipelineOptions options;
  options.qTile = qTile;
  options.kvTile = kvTile;
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
  options.repeat = repeat;
  auto created = GpuTarget::create(module, func, options);
  if (!created)
    fail(llvm::toString(created.takeError()));
  compileMs = (*created)->compileMs();
  return std::move(*created);
}

/// Checks the attn.attention of @entry (or of the first function holding
/// one) on every size of the sweep.
int runAttention(ModuleOp module) {
  // The function to run: the first with an attn.attention.
  func::FuncOp func;
  attn::AttentionOp op;
  module.walk([&](attn::AttentionOp found) {
    auto parent = found->getParentOfType<func::FuncOp>();
    if (!op && parent && (entry.empty() || parent.getName() == entry)) {
      op = found;
      func = parent;
    }
  });
  if (!op || !func)
    fail(entry.empty() ? "the input has no attn.attention inside a func.func"
                       : "the input has no func.func @" + entry +
                             " holding an attn.attention");
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
      fail(llvm::Twine("the ") + role +
           " of the attn.attention must be an "
           "argument of @" +
           func.getName());
    return arg.getArgNumber();
  };

  // Sizes to sweep.
  auto qType = op.getQueryType(), kType = op.getKeyType();
  std::vector<int64_t> bs = sizesFor("batch", batches, qType.getDimSize(0), 1);
  std::vector<std::pair<int64_t, int64_t>> heads;
  if (headPairs.empty()) {
    // Static head counts of the input, else 4 query and 4 kv heads.
    int64_t hq = qType.isDynamicDim(1) ? 4 : qType.getDimSize(1);
    int64_t hkv = kType.isDynamicDim(1) ? hq : kType.getDimSize(1);
    headPairs.push_back(std::to_string(hq) + ":" + std::to_string(hkv));
  }
  for (StringRef pair : headPairs) {
    auto [hqText, hkvText] = pair.split(':');
    int64_t hq, hkv;
    if (hqText.getAsInteger(10, hq) ||
        (hkvText.empty() ? (hkv = hq, false) : hkvText.getAsInteger(10, hkv)) ||
        hq <= 0 || hkv <= 0)
      fail("--heads takes Hq:Hkv pairs of positive integers, not '" + pair +
           "'");
    if (hq % hkv != 0)
      fail("--heads=" + pair + ": Hq is not a multiple of Hkv");
    if (!qType.isDynamicDim(1) && qType.getDimSize(1) != hq)
      fail("--heads=" + pair + " contradicts the static Hq " +
           llvm::Twine(qType.getDimSize(1)));
    if (!kType.isDynamicDim(1) && kType.getDimSize(1) != hkv)
      fail("--heads=" + pair + " contradicts the static Hkv " +
           llvm::Twine(kType.getDimSize(1)));
    heads.push_back({hq, hkv});
  }
  std::vector<int64_t> ms = sizesFor("q-len", qLens, qType.getDimSize(2), 64);
  std::vector<int64_t> ns;
  if (!kvLens.empty() || !kType.isDynamicDim(2))
    ns = sizesFor("kv-len", kvLens, kType.getDimSize(2), 64);

  unsigned qi = argIndex(op.getQuery(), "query"),
           ki = argIndex(op.getKey(), "key"),
           vi = argIndex(op.getValue(), "value"),
           oi = argIndex(op.getOutputs()[0], "output");
  std::optional<unsigned> li;
  if (Value lse = op.getLogsumexpInit())
    li = argIndex(lse, "logsumexp");
  auto isCapture = [&](unsigned i) {
    return i != qi && i != ki && i != vi && i != oi && !(li && i == *li);
  };
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !kindOf(type.getElementType()))
      fail("argument #" + llvm::Twine(arg.getArgNumber()) + " of @" +
           func.getName() +
           " is not a ranked tensor of f32/f16/bf16/i32/i64/index");
  }
  // attn.fill = "run-starts" marks a capture that holds where each run of
  // the preceding integer capture (sorted ids) starts.
  // It is attn-run's alone: removed before compiling.
  bool seenIds = false;
  llvm::SmallVector<bool> fillsRunStarts(func.getNumArguments(), false);
  for (BlockArgument arg : func.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = cast<RankedTensorType>(arg.getType());
    bool integer = isa<IntegerType, IndexType>(type.getElementType());
    Attribute fill = func.removeArgAttr(i, kFillAttrName);
    if (fill && (fill != StringAttr::get(func.getContext(), "run-starts") ||
                 !isCapture(i) || !integer || !seenIds))
      fail("argument #" + llvm::Twine(i) + ": " + kFillAttrName +
           " must be \"run-starts\", on an integer capture after another "
           "integer capture");
    fillsRunStarts[i] = fill != nullptr;
    seenIds |= isCapture(i) && integer && !fill;
  }
  {
    // The reference must be able to evaluate the regions: check once.
    llvm::DenseMap<Value, const HostTensor *> captures;
    HostTensor dummy(ElementKind::F32, {1});
    for (BlockArgument arg : func.getArguments())
      if (isCapture(arg.getArgNumber()))
        captures[arg] = &dummy;
    RegionInterpreter interpreter(captures);
    std::pair<Region *, StringRef> regions[] = {
        {&op.getScoreMod(), "score_mod"}, {&op.getMaskMod(), "mask_mod"}};
    for (auto [region, name] : regions)
      if (!region->empty())
        if (llvm::Error error = interpreter.check(*region, name))
          fail(llvm::toString(std::move(error)));
  }

  // The cases of the sweep, in order.
  std::vector<Problem> problems;
  for (int64_t b : bs)
    for (auto [hq, hkv] : heads)
      for (int64_t m : ms)
        for (int64_t n : ns.empty() ? std::vector<int64_t>{m} : ns)
          problems.push_back(
              {b, hq, hkv, m, n, op.getHeadDim(), op.getValueHeadDim()});
  auto caseName = [](const Problem &p) {
    return llvm::formatv("B={0} Hq={1} Hkv={2} M={3} N={4}", p.b, p.hq, p.hkv,
                         p.m, p.n)
        .str();
  };
  // The shape of an argument's buffer in case `p`.
  auto shapeOf = [&](BlockArgument arg, const Problem &p) {
    auto type = cast<RankedTensorType>(arg.getType());
    unsigned i = arg.getArgNumber();
    std::vector<int64_t> shape;
    if (i == qi || i == oi)
      shape = {p.b, p.hq, p.m, i == qi ? p.d : p.dv};
    else if (i == ki || i == vi)
      shape = {p.b, p.hkv, p.n, i == ki ? p.d : p.dv};
    else if (li && i == *li)
      shape = {p.b, p.hq, p.m};
    else // a capture: dynamic dims cover any b, h, q or kv index
      for (int64_t size : type.getShape())
        shape.push_back(ShapedType::isDynamic(size)
                            ? std::max({p.b, p.hq, p.m, p.n})
                            : size);
    return shape;
  };
  // Every case's shapes and memory, checked before compiling.
  auto footprint = [&](const Problem &p) {
    Footprint footprint(caseName(p));
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      unsigned i = arg.getArgNumber();
      std::vector<int64_t> shape = shapeOf(arg, p);
      if (static_cast<int64_t>(shape.size()) != type.getRank())
        fail("argument #" + llvm::Twine(i) + " has rank " +
             llvm::Twine(type.getRank()) + ", but its role needs " +
             llvm::Twine(shape.size()));
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (!ShapedType::isDynamic(size) && size != shape[d])
          fail("argument #" + llvm::Twine(i) + " has static dim " +
               llvm::Twine(d) + " = " + llvm::Twine(size) +
               ", but this case needs " + llvm::Twine(shape[d]));
      const char *role = i == qi          ? "query"
                         : i == ki        ? "key"
                         : i == vi        ? "value"
                         : i == oi        ? "output"
                         : li && i == *li ? "logsumexp"
                                          : "captured";
      footprint.add("argument #" + llvm::Twine(i) + " (" + role + ")", shape,
                    elementBytes(*kindOf(type.getElementType())));
    }
    // What referenceAttention allocates: float64 copies of Q, K, V, the
    // output and the logsumexp, and one row of scores.
    int64_t doubleBytes = sizeof(double);
    footprint.add("the reference's Q", {p.b, p.hq, p.m, p.d}, doubleBytes);
    footprint.add("the reference's K", {p.b, p.hkv, p.n, p.d}, doubleBytes);
    footprint.add("the reference's V", {p.b, p.hkv, p.n, p.dv}, doubleBytes);
    footprint.add("the reference's output", {p.b, p.hq, p.m, p.dv},
                  doubleBytes);
    footprint.add("the reference's logsumexp", {p.b, p.hq, p.m}, doubleBytes);
    footprint.add("the reference's scores", {p.n}, doubleBytes + 1);
    return footprint;
  };
  for (const Problem &p : problems)
    footprint(p).checkFits();

  // Compile once, for the CPU (JIT) or the GPU (a kernel bundle run through
  // the CUDA driver).
  double compileMs = 0;
  std::unique_ptr<attn::CpuKernel> kernel;
  std::unique_ptr<GpuTarget> gpu = compileFor(module, func, kernel, compileMs);
  std::string where = gpu ? "gpu (" + gpu->chip() + ")" : "cpu";

  Type elementType = op.getQueryType().getElementType();
  std::string typeName;
  llvm::raw_string_ostream(typeName) << elementType;
  double allowed = tolerance > 0 ? tolerance.getValue()
                                 : (elementType.isF32() ? 1e-5 : 2e-3);
  if (!json)
    llvm::outs() << "attn-run: target=" << where << " @" << func.getName()
                 << " dtype=" << typeName << " D=" << op.getHeadDim()
                 << " Dv=" << op.getValueHeadDim()
                 << (op.getCausal() ? " causal" : "")
                 << (op.hasMaskMod() ? " mask_mod" : "")
                 << (op.hasScoreMod() ? " score_mod" : "")
                 << llvm::formatv(", compiled once in {0:f1} ms", compileMs)
                 << "\n";

  // Density: the fraction of blocks holding a position the op keeps (its
  // mask_mod and causal together), in the block sizes of the op's block
  // mask, else of the one the pipeline derives (128 x 128), which lists
  // exactly those blocks.
  std::pair<int64_t, int64_t> blockSizes = {128, 128};
  if (Value blockMask = op.getBlockMask()) {
    auto type = cast<attn::BlockMaskType>(blockMask.getType());
    blockSizes = {type.getQBlock(), type.getKvBlock()};
  }

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  unsigned cases = 0, failures = 0;
  double worst = 0;
  for (const Problem &p : problems) {
    int64_t b = p.b, hq = p.hq, hkv = p.hkv, m = p.m, n = p.n;
    footprint(p).announce();
    // Fresh inputs for every case; outputs poisoned.
    std::vector<std::unique_ptr<HostTensor>> buffers;
    llvm::DenseMap<Value, const HostTensor *> captures;
    const HostTensor *ids = nullptr;
    for (BlockArgument arg : func.getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      unsigned i = arg.getArgNumber();
      ElementKind kind = *kindOf(type.getElementType());
      auto buffer = std::make_unique<HostTensor>(kind, shapeOf(arg, p));
      if (!isCapture(i) && (i == oi || i == li)) {
        buffer->poison();
      } else if (isFloat(kind)) {
        // Q, K, V symmetric; captured floats (slopes, biases) positive.
        bool input = !isCapture(i);
        for (int64_t e = 0; e < buffer->numElements(); ++e)
          buffer->set(e, input ? uniform(rng) : 0.5 + 0.5 * uniform(rng));
      } else if (fillsRunStarts[i]) {
        // The first position of each run of ids (jagged sequences' starts);
        // ids that do not occur start at the end.
        int64_t end = ids->numElements(), next = 0;
        for (int64_t e = 0; e < buffer->numElements(); ++e) {
          while (next < end && ids->get(next) < e)
            ++next;
          buffer->set(e, static_cast<double>(next));
        }
      } else {
        // Captured integers are sorted ids (documents, sequences).
        int64_t id = 0;
        for (int64_t e = 0; e < buffer->numElements(); ++e) {
          if (e > 0 && rng() % 37 == 0)
            ++id;
          buffer->set(e, static_cast<double>(id));
        }
        ids = buffer.get();
      }
      if (isCapture(i))
        captures[arg] = buffer.get();
      buffers.push_back(std::move(buffer));
    }

    // Large problems without regions are checked against the plain
    // float64 kernel on the GPU; the rest on the CPU, whose reference
    // interprets the op's regions.
    double work = static_cast<double>(b) * hq * m * n * (p.d + p.dv);
    bool gpuReference =
        gpu && hasGpuReference() && !op.hasScoreMod() && !op.hasMaskMod() &&
        !op.getBlockMask() &&
        (reference == "gpu" || (reference == "auto" && work > 1e9));
    if (reference == "gpu" && !gpuReference)
      fail("--reference=gpu needs --target=gpu, a runtime built with "
           "nvcc, and an op without score_mod, mask_mod or block mask");
    ReferenceResult ref;
    // The CPU reference first: where a region's result is undefined (a
    // division by zero, a read out of bounds), that is an error before the
    // kernel, whose behaviour there is undefined too, runs and maybe traps.
    if (!gpuReference) {
      RegionInterpreter interpreter(captures);
      llvm::Expected<ReferenceResult> computed =
          referenceAttention(op, interpreter, *buffers[qi], *buffers[ki],
                             *buffers[vi], blockSizes);
      if (!computed)
        fail(caseName(p) + ": " + llvm::toString(computed.takeError()));
      ref = std::move(*computed);
    }
    double runMs;
    if (gpu) {
      GpuTarget::DeviceCallback onDevice;
      if (gpuReference)
        onDevice = [&](CudaDriver &driver, const std::vector<Argument> &args,
                       std::string &message) {
          ReferenceProblem problem{b,
                                   hq,
                                   hkv,
                                   m,
                                   n,
                                   p.d,
                                   p.dv,
                                   buffers[qi]->kind(),
                                   static_cast<double>(op.getScaleValue()),
                                   op.getCausal(),
                                   0};
          return gpuReferenceAttention(driver, problem, args[qi].address,
                                       args[ki].address, args[vi].address,
                                       ref.output, ref.logsumexp, message);
        };
      llvm::Expected<double> ms = gpu->run(buffers, onDevice);
      if (!ms)
        fail(caseName(p) + ": " + llvm::toString(ms.takeError()));
      runMs = *ms;
    } else {
      runMs = invoke(*kernel, buffers);
    }

    if (gpuReference) {
      // The plain kernel has no mask_mod: count causal pairs here.
      int64_t pairs = 0;
      for (int64_t i = 0; i < m; ++i)
        pairs += op.getCausal() ? std::min<int64_t>(n, i + 1) : n;
      ref.visiblePairs = pairs * b * hq;
      ref.blocks = BlockPattern::ofCausal(b, hq, m, n, blockSizes.first,
                                          blockSizes.second, op.getCausal());
    }
    double density = ref.blocks.density();
    // Useful FLOPs: two per multiply-add of Q.K^T and P.V on the
    // elements no mask removes.
    double tflops =
        runMs > 0 ? 2.0 * ref.visiblePairs * (p.d + p.dv) / (runMs * 1e9) : 0;
    bool finite;
    double error = relativeError(*buffers[oi], ref.output, finite);
    double lseError = 0;
    bool lseFinite = true;
    if (li)
      lseError = logsumexpError(*buffers[*li], ref.logsumexp, lseFinite);
    bool pass = finite && lseFinite && error <= allowed && lseError <= allowed;
    ++cases;
    failures += !pass;
    worst = std::max({worst, error, lseError});
    if (json) {
      llvm::outs() << llvm::formatv(
          "{{\"target\": \"{0}\", \"reference\": \"{1}\", ",
          gpu ? "gpu" : "cpu", gpuReference ? "gpu" : "cpu");
      llvm::outs() << llvm::formatv(
          "\"B\": {0}, \"Hq\": {1}, \"Hkv\": {2}, \"M\": {3}, "
          "\"N\": {4}, \"D\": {5}, \"Dv\": {6}, \"dtype\": \"{7}\", "
          "\"causal\": {8}, \"error\": {9:e}, \"lse_error\": {10:e}, "
          "\"tolerance\": {11:e}, \"compile_ms\": {12:f1}, "
          "\"run_ms\": {13:f3}, \"useful_tflops\": {15:f4}, "
          "\"density\": {16:f4}, \"pass\": {14}}\n",
          b, hq, hkv, m, n, p.d, p.dv, typeName,
          op.getCausal() ? "true" : "false", error, lseError, allowed,
          compileMs, runMs, pass ? "true" : "false", tflops, density);
    } else {
      llvm::outs() << llvm::formatv(
          "  B={0} Hq={1} Hkv={2} M={3} N={4}: run {5:f3} ms ({7:f3} "
          "useful TFLOP/s, density {8:f3}), error {6:e}",
          b, hq, hkv, m, n, runMs, error, tflops, density);
      if (li)
        llvm::outs() << llvm::formatv(", logsumexp error {0:e}", lseError);
      if (!finite || !lseFinite)
        llvm::outs() << ", non-finite or unwritten outputs";
      llvm::outs() << ": " << (pass ? "PASS" : "FAIL") << "\n";
    }
    if (showBlockMask && !json)
      llvm::outs() << llvm::formatv("  blocks of {0} x {1}, (b, h) = (0, 0):\n",
                                    blockSizes.first, blockSizes.second)
                   << ref.blocks.picture(0, 0);
  }
  return summarize(json, cases, failures, worst, allowed);
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
    if (givenBlockMask && !emitVariant)
      fail("--given-block-mask needs --emit-variant: attn-run fills no "
           "block-mask lists");
    if (opName != "attention" && opName != "softmax")
      fail("--op must be attention or softmax, not '" + opName + "'");
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

  // A softmax to check?
  attn::SoftmaxOp softmax;
  module->walk([&](attn::SoftmaxOp found) {
    if (!softmax)
      softmax = found;
  });
  bool hasAttention = false;
  module->walk([&](attn::AttentionOp) { hasAttention = true; });
  if (softmax && !hasAttention) {
    SoftmaxSweep sweep;
    sweep.rows = softmaxRows;
    sweep.lengths = rowLens;
    sweep.tolerance = tolerance;
    sweep.seed = seed;
    sweep.json = json;
    auto compile = [&](func::FuncOp func,
                       std::unique_ptr<attn::CpuKernel> &kernel,
                       double &compileMs) {
      return compileFor(*module, func, kernel, compileMs);
    };
    return runSoftmax(softmax, sweep, compile);
  }

  return runAttention(*module);
}
