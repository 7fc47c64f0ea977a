#!/usr/bin/env python3
"""Concurrent calls: host threads calling the same and different bundles at
once, on their own streams and on one shared stream, must give what the
same calls give one after another, bit for bit.

  python3 bench/concurrent_calls.py gpu-bundles [ROUNDS] [--small]

The jobs use the runtime's workspace and scratch buffer in every way a
bundle can: a block mask built in the call (the document mask), given
block-mask lists (sliding window), the persistent warp-specialized kernel
(causal) and softmax rows split across blocks (rows of 2^18). Each job's
answer is computed once alone; then, per scenario,
two threads run every job ROUNDS times (default 20) in a shuffled order,
each queuing bursts of calls into outputs of its own before waiting, and
every result is compared with the answer. One thread also grows its
stream's workspace while both have work queued (softmax rows getting
longer), so that a buffer is replaced under queued work. Prints one line
per scenario and exits 1 on any difference. --small shrinks every problem
(1024 keys, 4 heads, softmax rows of 2^16 split in two) for compute-sanitizer, under
which the full sizes take minutes a call.
"""

import os
import random
import sys
import threading

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_check import attn  # noqa: E402

# Calls of each job a thread queues before it waits.
BURST = 6


def bundle(directory, name):
    return attn.Kernel(os.path.join(directory, f"{name}-bundle.json"))


def block_lists(n, block, window):
    """The kv-side lists of a sliding window of `window` on n x n, for the
    bundle that takes them (partial blocks only: no full blocks)."""
    blocks = (n + block - 1) // block
    rows = []
    for i in range(blocks):
        lo = max(0, (i * block - window) // block)
        hi = min(blocks - 1, ((i + 1) * block - 1 + window) // block)
        rows.append(list(range(lo, hi + 1)))
    width = blocks
    counts = torch.tensor([len(r) for r in rows], dtype=torch.int32)
    indices = torch.zeros(blocks, width, dtype=torch.int32)
    for i, r in enumerate(rows):
        indices[i, :len(r)] = torch.tensor(r, dtype=torch.int32)
    full_counts = torch.zeros(blocks, dtype=torch.int32)
    full_indices = torch.zeros(blocks, width, dtype=torch.int32)
    return [t.view(1, 1, *t.shape).cuda()
            for t in (counts, indices, full_counts, full_indices)]


def make_jobs(directory, small):
    """name -> (kernel, inputs, output shapes and dtypes)."""
    g = torch.Generator(device="cuda").manual_seed(0)

    def rand(*shape, dtype=torch.bfloat16):
        return torch.randn(*shape, generator=g, device="cuda").to(dtype)

    n, b, h, d = (1024, 1, 4, 128) if small else (4096, 1, 16, 128)
    q, k, v = rand(b, h, n, d), rand(b, h // 4, n, d), rand(b, h // 4, n, d)
    documents = torch.arange(n, device="cuda", dtype=torch.int32) // 512
    out = ((b, h, n, d), torch.bfloat16)
    jobs = {
        "document (mask built in the call)":
            (bundle(directory, "bench-bf16-d128-document512"),
             [q, k, v, None, documents], [out]),
        "sliding window (given lists)":
            (bundle(directory, "bench-bf16-d128-window1024-given"),
             [q, k, v, None] + block_lists(n, 128, 1024), [out]),
        "causal (persistent kernel)":
            (bundle(directory, "bench-bf16-d128-causal"),
             [q, k, v, None], [out]),
    }
    row = 1 << (16 if small else 18)
    rows = rand(8, row, dtype=torch.float32)
    jobs["softmax (split rows)"] = (bundle(directory, "softmax-f32"),
                                    [rows, None],
                                    [((8, row), torch.float32)])
    return jobs


def outputs_of(job):
    return [torch.full(shape, float("nan"), device="cuda", dtype=dtype)
            for shape, dtype in job[2]]


def arguments(job, outputs):
    it = iter(outputs)
    return [a if a is not None else next(it) for a in job[1]]


def call(job, stream=None):
    """Runs `job` into fresh outputs (on `stream`); returns them."""
    outputs = outputs_of(job)
    # The fill is queued on torch's stream, which `stream` does not wait for.
    torch.cuda.current_stream().synchronize()
    job[0](*arguments(job, outputs), stream=stream)
    return outputs


def growing_softmax(directory, small):
    """Softmax jobs whose rows get longer: each needs a larger workspace
    than the last on a fresh stream."""
    kernel = bundle(directory, "softmax-f32")
    g = torch.Generator(device="cuda").manual_seed(1)
    jobs = []
    for log2 in range(12, 19 if small else 21):
        x = torch.randn(16, 1 << log2, generator=g, device="cuda")
        jobs.append((kernel, [x, None], [((16, 1 << log2), torch.float32)]))
    return jobs


def run_scenario(name, jobs, answers, streams, rounds, grow):
    """Two threads on `streams` (one per thread) queue bursts of every job
    (BURST calls each, into outputs of their own, shuffled), then wait for
    their stream and compare every output with the answer, `rounds` times;
    thread 0 also runs the growing jobs one by one in its first round.
    Returns whether every result matched."""
    mismatches = []
    errors = []
    moves = []

    def worker(index, stream):
        try:
            rng = random.Random(index)
            calls = []
            for key, job in jobs.items():
                for _ in range(BURST):
                    outputs = outputs_of(job)
                    run = job[0].prepare(*arguments(job, outputs),
                                         stream=stream)
                    calls.append((key, run, outputs))
            for r in range(rounds):
                rng.shuffle(calls)
                for _, _, outputs in calls:
                    for o in outputs:
                        o.fill_(float("nan"))
                torch.cuda.current_stream().synchronize()
                for i, (_, run, _) in enumerate(calls):
                    run()
                    # The stream's buffers grow while launches are queued
                    # on it (and the other thread's, when they share it).
                    if grow and index == 0 and r == 0 and i % 4 == 0 and \
                            i // 4 < len(grow):
                        job, answer = grow[i // 4]
                        before = attn.runtime.workspace(stream)
                        if not torch.equal(call(job, stream)[0], answer[0]):
                            mismatches.append("growing softmax")
                        if attn.runtime.workspace(stream) != before:
                            moves.append(i)
                attn.runtime.synchronize(stream)
                for key, _, outputs in calls:
                    for a, w in zip(outputs, answers[key]):
                        if not torch.equal(a, w):
                            mismatches.append(key)
        except Exception as e:  # reported with the scenario
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i, s))
               for i, s in enumerate(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    calls = len(streams) * rounds * len(jobs) * BURST
    result = "PASS" if not mismatches and not errors and moves else "FAIL"
    detail = f", the workspace moved {len(moves)} times"
    if mismatches:
        detail += f", {len(mismatches)} differ (first: {mismatches[0]})"
    if errors:
        detail += f", {len(errors)} raised (first: {errors[0]})"
    print(f"concurrent_calls {name}: {calls} calls{detail}: {result}",
          flush=True)
    return result == "PASS"


def main():
    small = "--small" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--small"]
    directory = args[0]
    rounds = int(args[1]) if len(args) > 1 else 20
    jobs = make_jobs(directory, small)
    # The answers come from a stream of their own, so that the default
    # stream's buffers are still to grow when a scenario uses it.
    with attn.Stream() as alone:
        answers = {key: call(job, alone) for key, job in jobs.items()}
        grow = [(job, call(job, alone))
                for job in growing_softmax(directory, small)]
        # Repeated alone, each job must already be bit-for-bit reproducible.
        ok = True
        for key, job in jobs.items():
            again = call(job, alone)
            if not all(torch.equal(a, w) for a, w in zip(again, answers[key])):
                print(f"concurrent_calls {key}: not reproducible alone: FAIL")
                ok = False
    other = attn.Stream()
    torch_stream = torch.cuda.Stream()
    # The growing thread's stream is fresh, so that its buffers grow.
    scenarios = [
        ("two threads, two attn streams", lambda fresh: [fresh, other]),
        ("two threads, one attn stream", lambda fresh: [fresh, fresh]),
        ("two threads, an attn and a torch stream",
         lambda fresh: [fresh, torch_stream]),
        ("two threads, the default stream and a torch stream",
         lambda fresh: [0, torch_stream]),
    ]
    for name, pair in scenarios:
        with attn.Stream() as fresh:
            ok &= run_scenario(name, jobs, answers, pair(fresh), rounds, grow)
    other.close()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
