//===- Harness.h - what attn-run's checks share -----------------*- C++ -*-===//
//
// Bad input ends in fail(): a message on stderr and exit code 2. Each
// case's host memory is counted before anything is allocated, so a size
// too large for this machine is an error, not an abort; sizes come from
// the flags or the input's static shapes.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_RUN_HARNESS_H
#define ATTN_RUN_HARNESS_H

#include "GpuTarget.h"

#include "AttnDialect/Execution/CpuJit.h"
#include "AttnDialect/IR/AttnOps.h"
#include "AttnRuntime/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attn_run {

/// Prints "attn-run: error: `message`" and exits with code 2.
[[noreturn]] void fail(const llvm::Twine &message);

/// The handler for failed allocations (llvm::install_bad_alloc_error_handler):
/// an error naming what was being allocated, exit code 2.
[[noreturn]] void outOfMemory(void *, const char *, bool);

/// The host memory of one case (its buffers and its float64 reference),
/// counted with overflow checks: a count that wrapped would make buffers
/// shorter than the kernel writes.
class Footprint {
public:
  explicit Footprint(std::string name) : name(std::move(name)) {}

  /// Adds `what`, `shape` elements of `elementBytes` each.
  void add(const llvm::Twine &what, llvm::ArrayRef<int64_t> shape,
           int64_t elementBytes);

  /// Fails unless the total fits in this machine's memory: a larger
  /// allocation would fail, or be killed once its pages are touched.
  void checkFits() const;

  /// Names the allocation for the out-of-memory handler.
  void announce() const;

private:
  std::string name;
  int64_t total = 0;
};

/// The runtime's element kind of `type`, if it has one.
std::optional<attn_runtime::ElementKind> kindOf(mlir::Type type);

/// The sizes to try for one dim: the flag's list, else the static size,
/// else the default. A value that contradicts a static size is an error.
std::vector<int64_t> sizesFor(const char *name, llvm::ArrayRef<int64_t> flag,
                              int64_t staticSize, int64_t fallback);

/// The (Hq, Hkv) pairs to try: --heads, else the input's static head
/// counts, else 4 query and 4 kv heads.
std::vector<std::pair<int64_t, int64_t>>
headsFor(llvm::ArrayRef<std::string> pairs, mlir::RankedTensorType qType,
         mlir::RankedTensorType kType);

/// Which captures hold where each run of the preceding integer capture
/// (sorted ids) starts: attn.fill = "run-starts", attn-run's alone, so
/// removed from the function before it is compiled.
llvm::SmallVector<bool>
runStartFills(mlir::func::FuncOp func,
              llvm::function_ref<bool(unsigned)> isCapture);

/// Calls the compiled function on `buffers` (one per argument); returns ms.
double invoke(mlir::attn::CpuKernel &kernel,
              std::vector<std::unique_ptr<attn_runtime::HostTensor>> &buffers);

/// The worse of two errors; NaN when either is (std::max would drop it).
double worseError(double a, double b);

/// Prints the summary line of a sweep (unless `json`); returns the exit
/// code.
int summarize(bool json, unsigned cases, unsigned failures, double worst,
              double allowed);

/// Compiles a function once, for the CPU (JIT: the kernel) or the GPU (the
/// result), and says how long that took.
using CompileFn = llvm::function_ref<std::unique_ptr<GpuTarget>(
    mlir::func::FuncOp, std::unique_ptr<mlir::attn::CpuKernel> &, double &)>;

/// The command line's say over a softmax sweep.
struct SoftmaxSweep {
  llvm::ArrayRef<int64_t> rows, lengths;
  double tolerance = 0; // 0: 1e-5 for f32, 2e-3 otherwise
  unsigned seed = 1;
  bool json = false;
};

/// Checks an attn.softmax: rows of random values spread over [-30, 30], one
/// in 16 entries -inf, and (with more than one row) a last row that is all
/// -inf, against a float64 softmax. Returns the exit code.
int runSoftmax(mlir::attn::SoftmaxOp op, const SoftmaxSweep &sweep,
               CompileFn compile);

/// What an attention check sweeps and how it judges (attn-run's flags).
struct AttentionSweep {
  /// The function to run; empty: the first holding an attn.attention.
  std::string entry;
  llvm::ArrayRef<int64_t> batches, qLens, kvLens;
  /// "Hq:Hkv" pairs.
  llvm::ArrayRef<std::string> headPairs;
  /// auto, cpu or gpu (the plain float64 kernel, for ops without regions).
  std::string reference = "auto";
  /// 0: attn_runtime::attentionTolerance of the element type and target.
  double tolerance = 0;
  unsigned seed = 1;
  bool json = false;
  /// Print each case's block pattern (batch 0, head 0).
  bool showBlockMask = false;
};

/// One case of an attention sweep: its sizes.
struct AttentionCase {
  int64_t b, hq, hkv, m, n, d, dv;
};

/// "B=.. Hq=.. Hkv=.. M=.. N=..".
std::string caseName(const AttentionCase &c);

/// The cases of `sweep` for an op with these Q and K types and head dims,
/// in order: the flags' sizes, else the static ones, else defaults (N: M).
std::vector<AttentionCase> sweepCases(const AttentionSweep &sweep,
                                      mlir::RankedTensorType qType,
                                      mlir::RankedTensorType kType, int64_t d,
                                      int64_t dv);

/// Checks the attn.attention of a function of `module` on every case of the
/// sweep: fresh inputs per case (outputs poisoned) against a float64
/// reference, one line per case. Returns the exit code.
int runAttention(mlir::ModuleOp module, const AttentionSweep &sweep,
                 CompileFn compile);

/// Checks the attn.attention_grad of a function of `module` on every case
/// of the sweep: fresh Q, K, V and dO, the output and logsumexp of the
/// float64 forward, and dQ, dK and dV against the float64 gradients.
/// Returns the exit code.
int runAttentionGrad(mlir::ModuleOp module, const AttentionSweep &sweep,
                     CompileFn compile);

} // namespace attn_run

#endif // ATTN_RUN_HARNESS_H
