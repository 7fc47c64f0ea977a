#!/usr/bin/env python3
"""Differential fuzzing of compiled attention programs.

Generates random valid attention programs (a random score_mod over the
score, the positions and a captured float tensor; a random mask_mod of
comparisons, modular arithmetic and a captured int tensor, both read at a
position or at an index computed from positions; random dtype, head dims,
causal, logsumexp, a block mask built in the function (sometimes for other
sizes than the attention's, which must be refused) or derived by the
pipeline) and runs each through `attn-run`, which compiles it for the
target (the CPU JIT, or the GPU through the CUDA driver) and compares every
case of a random shape sweep (B, Hq:Hkv, M, N with 1, odd and multi-block
lengths) with its float64 reference interpreter of the same program.
With --compile, each program is also compiled to a kernel bundle for the
chips given (sm_90a's wgmma and TMA kernels, sm_80's mma.sync) without a
GPU. With --backward, each program is instead the attn.attention_grad of
such an attention (no block mask, no logsumexp output), with the captured
float tensor in `wrt` where the score_mod reads it, run by
`attn-run --backward` against float64 gradients whose derivatives are
central differences of the same region (the CPU only). A program that
crashes, hangs (a watchdog), fails to compile although it verifies, or
disagrees with the reference is kept under --out with the command that
reproduces it.

  python3 fuzz/random_programs.py --count=N [--seed=S] [--target=cpu|gpu]
      [--attn-run=build/bin/attn-run] [--attn-opt=build/bin/attn-opt]
      [--out=DIR] [--chip=sm_90a,sm_80] [--max-head-dim=256] [--timeout=120]
      [--compile=sm_90a,sm_80] [--jobs=J] [--backward]

Exits 1 when any program is kept. Every program is deterministic in
(seed, its number): --only=K regenerates program K of a run.
"""

import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile


class Region:
    """Builds one region's body as SSA lines."""

    def __init__(self, rng, indent="        "):
        self.rng = rng
        self.lines = []
        self.count = 0
        self.indent = indent

    def emit(self, text, type_):
        self.count += 1
        name = f"%v{self.count}"
        self.lines.append(f"{self.indent}{name} = {text} : {type_}")
        return name

    def emit_raw(self, rhs):
        self.count += 1
        name = f"%v{self.count}"
        self.lines.append(f"{self.indent}{name} = {rhs}")
        return name

    def index_const(self, value):
        return self.emit(f"arith.constant {value}", "index")

    def f32_const(self, value):
        return self.emit(f"arith.constant {value:.6e}", "f32")

    def position_f32(self, position):
        i = self.emit_raw(f"arith.index_cast {position} : index to i64")
        return self.emit_raw(f"arith.sitofp {i} : i64 to f32")


def computed_index(r, a, b):
    """An index computed from positions a and b that is at most max(a, b),
    so that it stays inside a capture that a or b may index."""
    op = r.rng.randrange(5)
    if op == 0:
        return r.emit(f"arith.maxui {a}, {b}", "index")
    if op == 1:
        return r.emit(f"arith.minui {a}, {b}", "index")
    if op == 2:
        total = r.emit(f"arith.addi {a}, {b}", "index")
        return r.emit(f"arith.shrui {total}, {r.index_const(1)}", "index")
    if op == 3:
        return r.emit(f"arith.divui {a}, {r.index_const(r.rng.choice([2, 3]))}",
                      "index")
    return r.emit(f"arith.remui {a}, {r.index_const(r.rng.choice([5, 64]))}",
                  "index")


def float_expr(r, depth, s, positions, slopes):
    """A random f32 expression of bounded size and magnitude."""
    rng = r.rng
    if depth == 0 or rng.random() < 0.25:
        choice = rng.randrange(4)
        if choice == 0 and s:
            return s
        if choice == 1:
            # A position, scaled into a small range.
            p = r.position_f32(rng.choice(positions))
            return r.emit(f"arith.mulf {p}, {r.f32_const(rng.choice([0.01, -0.02, 0.125]))}", "f32")
        if choice == 2 and slopes:
            h = positions[1]
            if rng.random() < 0.4:
                h = computed_index(r, h, h)
            return r.emit_raw(f"tensor.extract {slopes}[{h}] : tensor<?xf32>")
        return r.f32_const(rng.uniform(-2.0, 2.0))
    a = float_expr(r, depth - 1, s, positions, slopes)
    op = rng.choice(["addf", "subf", "mulf", "maximumf", "minimumf",
                     "maxnumf", "minnumf", "tanh", "divc", "select",
                     "softcap", "exp", "absf"])
    if op == "tanh":
        return r.emit(f"math.tanh {a}", "f32")
    if op == "absf":
        return r.emit(f"math.absf {a}", "f32")
    if op == "exp":
        # exp of a bounded value: tanh first.
        t = r.emit(f"math.tanh {a}", "f32")
        return r.emit(f"math.exp {t}", "f32")
    if op == "softcap":
        c = rng.choice([5.0, 20.0, 30.0])
        x = r.emit(f"arith.divf {a}, {r.f32_const(c)}", "f32")
        t = r.emit(f"math.tanh {x}", "f32")
        return r.emit(f"arith.mulf {t}, {r.f32_const(c)}", "f32")
    if op == "divc":
        c = rng.choice([2.0, -3.0, 0.5, 7.0])
        return r.emit(f"arith.divf {a}, {r.f32_const(c)}", "f32")
    b = float_expr(r, depth - 1, s, positions, slopes)
    if op == "select":
        pred = rng.choice(["olt", "oge", "ogt", "ole"])
        c = r.emit_raw(f"arith.cmpf {pred}, {a}, {b} : f32")
        return r.emit(f"arith.select {c}, {a}, {b}", "f32")
    if op == "mulf":
        # Keep products bounded.
        b = r.emit(f"math.tanh {b}", "f32")
    return r.emit(f"arith.{op} {a}, {b}", "f32")


def bool_expr(r, depth, positions, docs):
    """A random i1 over the positions (b, h, q, kv) and captured ids."""
    rng = r.rng
    b, h, q, kv = positions
    if depth == 0 or rng.random() < 0.3:
        choice = rng.randrange(6)
        if choice == 0:
            return r.emit_raw(f"arith.cmpi uge, {q}, {kv} : index")
        if choice == 1:
            # q - kv <= W with the unsigned wrap FlexAttention's windows use.
            d = r.emit(f"arith.subi {q}, {kv}", "index")
            w = r.index_const(rng.choice([0, 3, 16, 100]))
            return r.emit_raw(f"arith.cmpi ule, {d}, {w} : index")
        if choice == 2:
            m = r.index_const(rng.choice([2, 3, 7]))
            x = r.emit(f"arith.remui {rng.choice([q, kv])}, {m}", "index")
            z = r.index_const(rng.randrange(2))
            return r.emit_raw(f"arith.cmpi ne, {x}, {z} : index")
        if choice == 3 and docs:
            at = computed_index(r, q, kv) if rng.random() < 0.4 else q
            dq = r.emit_raw(f"tensor.extract {docs}[{at}] : tensor<?xi32>")
            dk = r.emit_raw(f"tensor.extract {docs}[{kv}] : tensor<?xi32>")
            return r.emit_raw(f"arith.cmpi eq, {dq}, {dk} : i32")
        if choice == 4:
            c = r.index_const(rng.choice([0, 1, 2]))
            return r.emit_raw(f"arith.cmpi ne, {h}, {c} : index")
        p = r.index_const(rng.choice([1, 20, 64]))
        return r.emit_raw(f"arith.cmpi ult, {kv}, {p} : index")
    a = bool_expr(r, depth - 1, positions, docs)
    op = rng.choice(["andi", "ori", "xori", "not"])
    if op == "not":
        t = r.emit_raw("arith.constant true")
        return r.emit(f"arith.xori {a}, {t}", "i1")
    c = bool_expr(r, depth - 1, positions, docs)
    return r.emit(f"arith.{op} {a}, {c}", "i1")


def program(rng, max_head_dim, backward=False):
    """(MLIR text, attn-run flags, a one-line description, the mismatched
    block mask size or None); with `backward`, an @attention_grad."""
    dtype = rng.choice(["f32", "f16", "bf16"])
    dims = [d for d in [16, 32, 64, 128, 256] if d <= max_head_dim]
    d = rng.choice(dims)
    dv = d if rng.random() < 0.7 else rng.choice(dims)
    causal = rng.random() < 0.3
    lse = rng.random() < 0.5
    has_score = rng.random() < 0.7
    has_mask = rng.random() < 0.6
    built_mask = has_mask and rng.random() < 0.3 and not backward
    slopes = "%slopes" if has_score and rng.random() < 0.5 else None
    docs = "%docs" if has_mask and rng.random() < 0.4 else None

    t = dtype
    qt = f"tensor<?x?x?x{d}x{t}>"
    vt = f"tensor<?x?x?x{dv}x{t}>"
    lt = "tensor<?x?x?xf32>"
    args = [f"%q: {qt}", f"%k: {qt}", f"%v: {vt}", f"%o: {vt}"]
    outs, out_types, results = ["%o"], [vt], [vt]
    if lse:
        args.append(f"%l: {lt}")
        outs.append("%l")
        out_types.append(lt)
        results.append(lt)
    if docs:
        args.append("%docs: tensor<?xi32>")
    if slopes:
        args.append("%slopes: tensor<?xf32>")

    body = []
    regions = []
    mask_lines = None
    if has_mask:
        r = Region(rng)
        positions = ["%b", "%h", "%qi", "%kv"]
        keep = bool_expr(r, rng.randrange(1, 4), positions, docs)
        mask_lines = r.lines + [f"        attn.yield {keep} : i1"]
    # A block mask built for another problem than the attention's (sizes
    # that disagree, or that no tensor can have): refused with a clear
    # error, at the op or when the sizes are known, never read out of its
    # bounds.
    mismatch = None
    sizes = {"batch": "%c1", "heads": "%hq", "q_len": "%m", "kv_len": "%n"}
    if built_mask and rng.random() < 0.3:
        mismatch = rng.choice(["batch", "heads", "q_len", "kv_len",
                               "extreme"])
        if mismatch == "extreme":
            which = rng.choice(list(sizes))
            sizes[which] = "%cx"
            extreme = rng.choice([-1, -(1 << 40), 1 << 31, 1 << 62])
        else:
            sizes[mismatch] = {"batch": "%c2", "heads": "%c3",
                               "q_len": "%n", "kv_len": "%c100"}[mismatch]
    if built_mask:
        qb = rng.choice([16, 32, 64, 128])
        kvb = rng.choice([16, 32, 64, 128])
        mtype = f"!attn.block_mask<q_block = {qb}, kv_block = {kvb}>"
        body += [
            "  %c1 = arith.constant 1 : index",
            "  %c2 = arith.constant 2 : index",
            "  %c3 = arith.constant 3 : index",
            "  %c100 = arith.constant 100 : index",
            f"  %hq = tensor.dim %q, %c1 : {qt}",
            f"  %m = tensor.dim %q, %c2 : {qt}",
            f"  %n = tensor.dim %k, %c2 : {qt}",
        ] + ([f"  %cx = arith.constant {extreme} : index"]
             if mismatch == "extreme" else []) + [
            f"  %bm = attn.create_block_mask batch({sizes['batch']}) "
            f"heads({sizes['heads']}) q_len({sizes['q_len']}) "
            f"kv_len({sizes['kv_len']}) : {mtype}",
            "      mask_mod {",
            "      ^bb0(%b: index, %h: index, %qi: index, %kv: index):",
        ] + mask_lines + ["      }"]
    op = (f"  %r:{len(outs)} = attn.attention ins(%q, %k, %v : {qt}, {qt}, "
          f"{vt})\n      outs({', '.join(outs)} : {', '.join(out_types)})")
    if built_mask:
        op += f"\n      block_mask(%bm : {mtype})"
    if causal:
        op += " {causal}"
    if has_score:
        r = Region(rng)
        positions = ["%b", "%h", "%qi", "%kv"]
        value = float_expr(r, rng.randrange(1, 4), "%s", positions, slopes)
        regions += ["      score_mod {",
                    "      ^bb0(%s: f32, %b: index, %h: index, %qi: index, "
                    "%kv: index):"] + r.lines + [
                        f"        attn.yield {value} : f32", "      }"]
    if has_mask:
        regions += ["      mask_mod {",
                    "      ^bb0(%b: index, %h: index, %qi: index, %kv: index):"
                    ] + mask_lines + ["      }"]
    text = (f"func.func @attention({', '.join(args)}) -> "
            f"({', '.join(results)}) {{\n" + "\n".join(body) +
            ("\n" if body else "") + op + "\n" + "\n".join(regions) +
            ("\n" if regions else "") +
            f"      -> {', '.join(results)}\n"
            f"  return {', '.join(f'%r#{i}' for i in range(len(outs)))} : "
            f"{', '.join(results)}\n}}\n")

    if backward:
        text = grad_program(qt, vt, causal, regions, docs, slopes)

    lens = [1, 2, 17, 64, 65, 130, 257, 300]
    hkv = rng.choice([1, 2, 4])
    hq = hkv * rng.choice([1, 2, 4])
    flags = [f"--batch={rng.choice(['1', '2', '1,3'])}",
             f"--heads={hq}:{hkv}",
             f"--q-len={','.join(map(str, sorted(rng.sample(lens, 2))))}",
             f"--kv-len={','.join(map(str, sorted(rng.sample(lens, 2))))}"]
    what = (f"{dtype} D={d} Dv={dv} causal={causal} lse={lse} "
            f"score_mod={has_score} mask_mod={has_mask} "
            f"built_block_mask={built_mask} slopes={bool(slopes)} "
            f"docs={bool(docs)}"
            + (f" mismatched_block_mask={mismatch}" if mismatch else ""))
    return text, flags, what, mismatch


def grad_program(qt, vt, causal, regions, docs, slopes):
    """@attention_grad of the attention with these types and regions; the
    float capture is differentiated where the score_mod reads it."""
    lt = "tensor<?x?x?xf32>"
    st = "tensor<?xf32>"
    wrt = slopes and any(f"tensor.extract {slopes}" in line
                         for line in regions)
    grads = [qt, qt, vt] + ([st] if wrt else [])
    args = [f"%q: {qt}", f"%k: {qt}", f"%v: {vt}", f"%o: {vt}",
            f"%do: {vt}", f"%l: {lt}", f"%dq: {qt}", f"%dk: {qt}",
            f"%dv: {vt}"] + ([f"%dslopes: {st}"] if wrt else [])
    if docs:
        args.append("%docs: tensor<?xi32>")
    if slopes:
        args.append("%slopes: tensor<?xf32>")
    outs = ["%dq", "%dk", "%dv"] + (["%dslopes"] if wrt else [])
    types = ", ".join(grads)
    op = (f"  %r:{len(outs)} = attn.attention_grad ins(%q, %k, %v, %o, %do, "
          f"%l : {qt}, {qt}, {vt}, {vt}, {vt}, {lt})"
          + (f"\n      wrt(%slopes : {st})" if wrt else "")
          + f"\n      outs({', '.join(outs)} : {types})"
          + (" {causal}" if causal else ""))
    return (f"func.func @attention_grad({', '.join(args)}) -> ({types}) {{\n"
            + op + "\n" + "\n".join(regions) + ("\n" if regions else "")
            + f"      -> {types}\n"
            f"  return {', '.join(f'%r#{i}' for i in range(len(outs)))} : "
            f"{types}\n}}\n")


def check(a, out, number):
    """(why program `number` is kept, or None; its cases that ran; whether
    it was refused as it must be: a block mask of other sizes)."""
    rng = random.Random(f"{a.seed}:{number}")
    text, flags, what, mismatch = program(rng, a.max_head_dim, a.backward)
    path = os.path.join(out, f"program-{a.seed}-{number}.mlir")
    with open(path, "w") as f:
        f.write(text)
    # Generated programs must verify: one that does not is the generator's
    # bug, reported as such; except sizes no tensor can have, which the
    # verifier must refuse at the op.
    verify = subprocess.run([a.attn_opt, path, "-o", os.devnull],
                            capture_output=True, text=True)
    if mismatch == "extreme":
        if verify.returncode == 1 and re.search(
                r"create_block_mask' op expected (batch|heads|q_len|kv_len) "
                r"to lie in \[0, 2147483647\], but it is", verify.stderr):
            os.remove(path)
            return None, 0, True
        return (f"program {number}: a block mask of an impossible size is "
                f"not refused at the op ({what})\n"
                f"{verify.stderr.strip()[:2000]}"), 0, False
    if verify.returncode != 0:
        return (f"program {number}: does not verify ({what})\n"
                f"{verify.stderr.strip()[:2000]}"), 0, False
    for chip in filter(None, a.compile.split(",")):
        prefix = f"{path}-{chip}-"
        compiled = subprocess.run(
            [a.attn_opt, path, f"--attn-lower-to-nvvm=chip={chip}",
             f"--attn-write-kernel-bundle=prefix={prefix}", "-o", os.devnull],
            capture_output=True, text=True)
        for name in os.listdir(out):
            if name.startswith(os.path.basename(prefix)):
                os.remove(os.path.join(out, name))
        if compiled.returncode != 0:
            return (f"program {number}: does not compile for {chip} "
                    f"({what})\n{compiled.stderr.strip()[-2000:]}"), 0, False
    command = [a.attn_run, path, f"--target={a.target}",
               f"--seed={number}"] + flags + (["--backward"] if a.backward
                                              else [])
    chips = a.chip.split(",") if a.chip else []
    if chips:
        command.append(f"--chip={chips[number % len(chips)]}")
    if a.target == "gpu":
        command.append("--repeat=0")
    try:
        run = subprocess.run(command, capture_output=True, text=True,
                             timeout=a.timeout)
        rc, log = run.returncode, run.stdout + run.stderr
    except subprocess.TimeoutExpired:
        rc, log = "timeout", f"no answer in {a.timeout} s"
    summary = [line for line in log.splitlines() if "cases pass" in line]
    found = int(summary[-1].split()[1]) if summary else 0
    # A block mask built for other sizes than a case's: attn-run's error
    # (exit 2) from the shape contract, naming the block mask, before any
    # kernel runs.
    refused = (mismatch and rc == 2 and re.search(
        r"attn-run: error: .*the block mask's (batch|heads|q_len|kv_len)",
        log))
    if rc == 0 or refused:
        os.remove(path)
        return None, found, bool(refused)
    with open(path + ".log", "w") as f:
        f.write(" ".join(command) + "\n" + log)
    return (f"program {number}: exit {rc} ({what})\n  {' '.join(command)}\n"
            + "\n".join("  " + line for line in log.splitlines()[-6:])), \
        found, False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", type=int, default=-1)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--chip", default="",
                    help="--target=gpu: chips to compile for, taken in turn "
                         "(e.g. sm_90a,sm_80: wgmma and mma.sync)")
    ap.add_argument("--attn-run", default="build/bin/attn-run")
    ap.add_argument("--attn-opt", default="build/bin/attn-opt")
    ap.add_argument("--out", default="")
    ap.add_argument("--max-head-dim", type=int, default=256)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--backward", action="store_true",
                    help="check attn.attention_grad programs (CPU)")
    ap.add_argument("--compile", default="",
                    help="chips, comma-separated: also compile each program "
                         "to a kernel bundle for them (no GPU needed)")
    a = ap.parse_args()
    if a.backward and (a.compile or a.target != "cpu"):
        ap.error("--backward runs on the CPU only (the backward has no GPU "
                 "kernel yet): leave out --compile and --target")
    out = a.out or tempfile.mkdtemp(prefix="attn-random-programs-")
    os.makedirs(out, exist_ok=True)
    numbers = [a.only] if a.only >= 0 else list(range(a.count))
    kept = cases = refusals = 0
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for done, (failure, found, refused) in enumerate(
                pool.map(lambda n: check(a, out, n), numbers), 1):
            cases += found
            refusals += refused
            if failure:
                kept += 1
                print(failure, flush=True)
            if done % 250 == 0:
                print(f"random_programs: {done} programs, {kept} kept",
                      flush=True)
    total = len(numbers)
    print(f"random_programs: {total - kept} of {total} programs agree with "
          f"the reference or are refused as they must be ({cases} cases, "
          f"{refusals} block masks of other sizes refused, target {a.target}, "
          f"seed {a.seed}{', backward' if a.backward else ''})"
          + (f"; kept in {out}" if kept else ""))
    return 1 if kept else 0


if __name__ == "__main__":
    sys.exit(main())
