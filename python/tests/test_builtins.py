"""The built-in masks and score mods follow FlexAttention's notebook
definitions: each is checked against plain float64 attention with a
materialized mask and score matrix, written here from the formulas (not from
the compiler's IR)."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler

pytestmark = needs_compiler
rng = np.random.default_rng(7)
TOLERANCE = 1e-6  # relative Frobenius, f32 kernels

# (B, Hq, Hkv, M, N): GQA and MQA, lengths that are not multiples of 64, more
# queries than keys and fewer.
SHAPES = [(1, 4, 4, 64, 64), (2, 8, 2, 37, 101), (1, 6, 1, 130, 77),
          (2, 4, 2, 100, 100)]


def materialized(q, k, v, keep, bias):
    """float64 attention from an explicit [B, Hq, M, N] boolean mask `keep`
    and a function `bias(s)` of the [B, Hq, M, N] scaled scores; rows with
    nothing kept give 0 and a logsumexp of -inf."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = bias(np.einsum("bhmd,bhnd->bhmn", q, k) / np.sqrt(q.shape[-1]))
    s = np.where(keep, s, -np.inf)
    out = np.zeros(q.shape[:3] + v.shape[3:])
    lse = np.full(q.shape[:3], -np.inf)
    for index in np.ndindex(*q.shape[:3]):
        row = s[index]
        if not np.isfinite(row).any():
            continue
        top = row.max()
        p = np.exp(row - top)
        out[index] = p @ v[index[:2]] / p.sum()
        lse[index] = top + np.log(p.sum())
    return out, lse


def positions(b, hq, m, n):
    """Index grids [B, Hq, M, N] of the head, query row and key row."""
    _, h, i, j = np.meshgrid(np.arange(b), np.arange(hq), np.arange(m),
                             np.arange(n), indexing="ij")
    return h, i, j


def document_ids(length):
    """Ids of documents of random lengths, as int32."""
    ids, doc = [], 0
    while len(ids) < length:
        ids += [doc] * int(rng.integers(1, 40))
        doc += 1
    return np.array(ids[:length], np.int32)


def jagged(b, hq, m, n):
    """Sequence ids of packed sequences and each sequence's first position."""
    seq = document_ids(max(m, n))
    starts = np.searchsorted(seq, np.arange(len(seq))).astype(np.int32)
    return [seq, starts]


def jagged_keep(prefix):
    def keep(h, i, j, c):
        seq, starts = c
        il, jl = i - starts[seq[i]], j - starts[seq[j]]
        return (seq[i] == seq[j]) & ((jl <= prefix) | (jl <= il))
    return keep


def neighbourhood_keep(height, width, k, clamp):
    """SASA (clamp=False) and NATTEN (clamp=True) on a height x width
    canvas read row by row."""
    r = k // 2

    def keep(h, i, j, c):
        cx, cy = i // width, i % width
        if clamp:
            cx, cy = np.clip(cx, r, height - 1 - r), np.clip(cy, r, width - 1 - r)
        return (np.abs(cx - j // width) <= r) & (np.abs(cy - j % width) <= r)
    return keep


# name -> (attention(mask=, score_mod=), captures(b, hq, m, n),
#          keep(h, i, j, captures), bias(s, h, i, j, captures))
def _none(h, i, j, c):
    return np.ones(i.shape, bool)


def _same(s, h, i, j, c):
    return s


CASES = {
    "sliding-window:1": (
        dict(mask="sliding-window:1"), lambda *_: [],
        lambda h, i, j, c: (j <= i) & (i - j <= 1), _same),
    "sliding-window:16": (
        dict(mask="sliding-window:16"), lambda *_: [],
        lambda h, i, j, c: (j <= i) & (i - j <= 16), _same),
    "prefix:0": (
        dict(mask="prefix:0"), lambda *_: [],
        lambda h, i, j, c: (j <= 0) | (j <= i), _same),
    "prefix:20": (
        dict(mask="prefix:20"), lambda *_: [],
        lambda h, i, j, c: (j <= 20) | (j <= i), _same),
    "document": (
        dict(mask="document"),
        lambda b, hq, m, n: [document_ids(max(m, n) + 3)],
        lambda h, i, j, c: (c[0][i] == c[0][j]) & (j <= i), _same),
    "jagged:0": (dict(mask="jagged:0"), jagged, jagged_keep(0), _same),
    "jagged:5": (dict(mask="jagged:5"), jagged, jagged_keep(5), _same),
    "sasa:16:5": (dict(mask="sasa:16:5"), lambda *_: [],
                  neighbourhood_keep(0, 16, 5, False), _same),
    "natten:8:10:5": (dict(mask="natten:8:10:5"), lambda *_: [],
                      neighbourhood_keep(8, 10, 5, True), _same),
    "alibi": (
        dict(score_mod="alibi"), lambda b, hq, m, n: [attn.alibi_slopes(hq)],
        _none,
        lambda s, h, i, j, c: s + c[0].astype(np.float64)[h] * (i - j)),
    "softcap:2": (
        dict(score_mod="softcap:2"), lambda *_: [], _none,
        lambda s, h, i, j, c: 2 * np.tanh(s / 2)),
    "softcap:0.5": (
        dict(score_mod="softcap:0.5"), lambda *_: [], _none,
        lambda s, h, i, j, c: 0.5 * np.tanh(s / 0.5)),
    "relative": (
        dict(score_mod="relative"), lambda *_: [], _none,
        lambda s, h, i, j, c: s + (i - j)),
    "checkerboard": (
        dict(score_mod="checkerboard"), lambda *_: [], _none,
        lambda s, h, i, j, c: np.where(np.abs(i - j) % 2 == 1, s * 0.5, s)),
    "document+alibi": (
        dict(mask="document", score_mod="alibi"),
        lambda b, hq, m, n: [document_ids(max(m, n)), attn.alibi_slopes(hq)],
        lambda h, i, j, c: (c[0][i] == c[0][j]) & (j <= i),
        lambda s, h, i, j, c: s + c[1].astype(np.float64)[h] * (i - j)),
    "sliding-window:8+softcap:3": (
        dict(mask="sliding-window:8", score_mod="softcap:3"), lambda *_: [],
        lambda h, i, j, c: (j <= i) & (i - j <= 8),
        lambda s, h, i, j, c: 3 * np.tanh(s / 3)),
}

_kernels = {}


def kernel(name):
    if name not in _kernels:
        _kernels[name] = attn.compile_cpu(
            attn.attention(head_dim=64, lse=True, **CASES[name][0]))
    return _kernels[name]


def relative(got, want):
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", list(CASES))
def test_builtin(name, shape):
    b, hq, hkv, m, n = shape
    _, make_captures, keep, bias = CASES[name]
    q = rng.standard_normal((b, hq, m, 64)).astype(np.float32)
    k = rng.standard_normal((b, hkv, n, 64)).astype(np.float32)
    v = rng.standard_normal((b, hkv, n, 64)).astype(np.float32)
    captures = make_captures(b, hq, m, n)
    out = np.full((b, hq, m, 64), np.nan, np.float32)
    lse = np.full((b, hq, m), np.nan, np.float32)
    kernel(name)(q, k, v, out, lse, *captures)

    h, i, j = positions(b, hq, m, n)
    want, want_lse = materialized(
        q, k, v, keep(h, i, j, captures),
        lambda s: bias(s, h, i, j, captures))
    assert relative(out, want) < TOLERANCE, relative(out, want)
    empty = np.isinf(want_lse)
    assert np.array_equal(np.isneginf(lse), empty)
    assert relative(lse[~empty], want_lse[~empty]) < TOLERANCE, \
        relative(lse[~empty], want_lse[~empty])
