//===- Backward.h - attn-bundle-run on a backward bundle -------*- C++ -*-===//

#ifndef ATTN_BUNDLE_RUN_BACKWARD_H
#define ATTN_BUNDLE_RUN_BACKWARD_H

#include "Options.h"

#include "AttnRuntime/Bundle.h"

namespace attn_bundle_run {

/// Runs `function`, which records that it computes attention_grad and
/// takes (q, k, v, out, grad_out, logsumexp, dq, dk, dv, captures...) as
/// attn-run's backward variants do: fills Q, K, V and dO at random, the
/// output and logsumexp from the float64 forward, launches the kernels,
/// checks dQ, dK and dV against the float64 gradients and times the
/// repeats. Returns the exit status; fails (status 2) on bad input.
int runBackward(const Options &o, const attn_runtime::Bundle &bundle,
                const attn_runtime::Function &function);

} // namespace attn_bundle_run

#endif // ATTN_BUNDLE_RUN_BACKWARD_H
