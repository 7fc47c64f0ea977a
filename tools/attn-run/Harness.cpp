//===- Harness.cpp - what attn-run's checks share -------------------------===//

#include "Harness.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <limits>

#include <unistd.h>

using namespace mlir;
using namespace attn_run;
using namespace attn_runtime;

[[noreturn]] void attn_run::fail(const llvm::Twine &message) {
  llvm::errs() << "attn-run: error: " << message << "\n";
  std::exit(2);
}

/// What attn-run is allocating now, for the out-of-memory message (set
/// beforehand: the handler itself must not allocate).
static std::string allocating;

// Failed allocations end in an error, exit code 2, rather than LLVM's
// "out of memory" abort: a size too large for this machine is bad input.
[[noreturn]] void attn_run::outOfMemory(void *, const char *, bool) {
  llvm::outs().flush();
  llvm::errs() << "attn-run: error: out of memory";
  if (!allocating.empty())
    llvm::errs() << " (" << allocating << ")";
  llvm::errs() << "\n";
  std::_Exit(2);
}

/// Bytes of physical memory, or 0 where the system does not say.
static uint64_t physicalMemory() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
#endif
  return 0;
}

void Footprint::add(const llvm::Twine &what, ArrayRef<int64_t> shape,
                    int64_t elementBytes) {
  std::string dims = llvm::join(
      llvm::map_range(shape, [](int64_t d) { return std::to_string(d); }), "x");
  int64_t elements = 1, bytes;
  for (int64_t dim : shape)
    if (llvm::MulOverflow(elements, dim, elements))
      fail(name + ": " + what + " has " + dims +
           " elements, more than a 64-bit count holds");
  if (llvm::MulOverflow(elements, elementBytes, bytes) ||
      llvm::AddOverflow(total, bytes, total))
    fail(name + ": " + what + " (" + dims + " elements of " +
         llvm::Twine(elementBytes) +
         " bytes) takes more bytes than a 64-bit count holds");
}

void Footprint::checkFits() const {
  uint64_t memory = physicalMemory();
  if (memory && static_cast<uint64_t>(total) > memory)
    fail(llvm::formatv("{0} needs {1} bytes for its buffers and float64 "
                       "reference, more than this machine's {2} bytes of "
                       "memory",
                       name, total, memory));
}

void Footprint::announce() const {
  allocating = llvm::formatv("{0} needs {1} bytes for its buffers and "
                             "float64 reference",
                             name, total);
}

std::optional<ElementKind> attn_run::kindOf(Type type) {
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

std::vector<int64_t> attn_run::sizesFor(const char *name,
                                        ArrayRef<int64_t> flag,
                                        int64_t staticSize, int64_t fallback) {
  std::vector<int64_t> sizes(flag.begin(), flag.end());
  if (sizes.empty())
    sizes.push_back(ShapedType::isDynamic(staticSize) ? fallback : staticSize);
  for (int64_t size : sizes) {
    if (size <= 0)
      fail(llvm::Twine("--") + name + " values must be positive, got " +
           llvm::Twine(size));
    if (!ShapedType::isDynamic(staticSize) && size != staticSize)
      fail(llvm::Twine("--") + name + "=" + llvm::Twine(size) +
           " contradicts the static size " + llvm::Twine(staticSize) +
           " in the input");
  }
  return sizes;
}

double attn_run::invoke(attn::CpuKernel &kernel,
                        std::vector<std::unique_ptr<HostTensor>> &buffers) {
  std::vector<void *> descriptors;
  for (auto &buffer : buffers)
    descriptors.push_back(buffer->descriptor());
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error error = kernel.invoke(descriptors))
    fail(llvm::toString(std::move(error)));
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

double attn_run::worseError(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(a, b);
}

int attn_run::summarize(bool json, unsigned cases, unsigned failures,
                        double worst, double allowed) {
  if (!json)
    llvm::outs() << llvm::formatv(
        "attn-run: {0} of {1} cases pass (worst error {2:e}, tolerance "
        "{3:e})\n",
        cases - failures, cases, worst, allowed);
  return failures ? 1 : 0;
}

/// The argument attribute that says how attn-run fills a captured tensor.
static constexpr llvm::StringLiteral kFillAttrName = "attn.fill";

/// The (Hq, Hkv) pairs to try: --heads, else the input's static head counts,
/// else 4 query and 4 kv heads.
std::vector<std::pair<int64_t, int64_t>> attn_run::headsFor(ArrayRef<std::string> pairs,
                                                  RankedTensorType qType,
                                                  RankedTensorType kType) {
  std::vector<std::string> given(pairs.begin(), pairs.end());
  if (given.empty()) {
    int64_t hq = qType.isDynamicDim(1) ? 4 : qType.getDimSize(1);
    int64_t hkv = kType.isDynamicDim(1) ? hq : kType.getDimSize(1);
    given.push_back(std::to_string(hq) + ":" + std::to_string(hkv));
  }
  std::vector<std::pair<int64_t, int64_t>> heads;
  for (StringRef pair : given) {
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
  return heads;
}

/// Which captures hold where each run of the preceding integer capture
/// (sorted ids) starts: attn.fill = "run-starts", attn-run's alone, so
/// removed from the function before it is compiled.
SmallVector<bool> attn_run::runStartFills(func::FuncOp func,
                                llvm::function_ref<bool(unsigned)> isCapture) {
  bool seenIds = false;
  SmallVector<bool> fills(func.getNumArguments(), false);
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
    fills[i] = fill != nullptr;
    seenIds |= isCapture(i) && integer && !fill;
  }
  return fills;
}

std::string attn_run::caseName(const AttentionCase &c) {
  return llvm::formatv("B={0} Hq={1} Hkv={2} M={3} N={4}", c.b, c.hq, c.hkv,
                       c.m, c.n)
      .str();
}

std::vector<AttentionCase> attn_run::sweepCases(const AttentionSweep &sweep,
                                                RankedTensorType qType,
                                                RankedTensorType kType,
                                                int64_t d, int64_t dv) {
  std::vector<int64_t> bs =
      sizesFor("batch", sweep.batches, qType.getDimSize(0), 1);
  std::vector<std::pair<int64_t, int64_t>> heads =
      headsFor(sweep.headPairs, qType, kType);
  std::vector<int64_t> ms =
      sizesFor("q-len", sweep.qLens, qType.getDimSize(2), 64);
  std::vector<int64_t> ns;
  if (!sweep.kvLens.empty() || !kType.isDynamicDim(2))
    ns = sizesFor("kv-len", sweep.kvLens, kType.getDimSize(2), 64);
  std::vector<AttentionCase> cases;
  for (int64_t b : bs)
    for (auto [hq, hkv] : heads)
      for (int64_t m : ms)
        for (int64_t n : ns.empty() ? std::vector<int64_t>{m} : ns)
          cases.push_back({b, hq, hkv, m, n, d, dv});
  return cases;
}
