"""Block masks on the CPU: kernels visit only the kv-blocks a block mask
lists (FlexAttention's semantics: full blocks without the mask_mod, partial
ones with it, unlisted ones skipped), whether the block mask is built by
attn.create_block_mask, derived by the pipeline from the mask_mod, or given
as lists; checked against float64 attention with the mask materialized."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler

pytestmark = needs_compiler
rng = np.random.default_rng(11)
TOLERANCE = 1e-6  # relative Frobenius, f32 kernels
WINDOW = 20


def reference(q, k, v, keep):
    """float64 attention of [B, H, M, N] `keep`; empty rows give 0, -inf."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("bhmd,bhnd->bhmn", q, k) / np.sqrt(q.shape[-1])
    s = np.where(keep, s, -np.inf)
    out = np.zeros(q.shape[:3] + v.shape[3:])
    lse = np.full(q.shape[:3], -np.inf)
    for index in np.ndindex(*q.shape[:3]):
        row = s[index]
        if np.isfinite(row).any():
            top = row.max()
            p = np.exp(row - top)
            out[index] = p @ v[index[:2]] / p.sum()
            lse[index] = top + np.log(p.sum())
    return out, lse


def error(x, y):
    return np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)


MASK_MOD = f"""
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %w = arith.constant {WINDOW} : index
        %d = arith.subi %qi, %kv : index
        %ge = arith.cmpi uge, %qi, %kv : index
        %lt = arith.cmpi ult, %d, %w : index
        %keep = arith.andi %ge, %lt : i1
        attn.yield %keep : i1"""

T = "tensor<?x2x?x32xf32>"
L = "tensor<?x2x?xf32>"
BM = "!attn.block_mask<q_block = 16, kv_block = 32>"


def window_keep(m, n):
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    return (j <= i) & (i - j < WINDOW)


def run(text, m, n, extra=()):
    kernel = attn.compile_cpu(attn.Module.parse(text))
    q = rng.uniform(-1, 1, (2, 2, m, 32)).astype(np.float32)
    k = rng.uniform(-1, 1, (2, 2, n, 32)).astype(np.float32)
    v = rng.uniform(-1, 1, (2, 2, n, 32)).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)
    lse = np.full(q.shape[:3], np.nan, np.float32)
    kernel(q, k, v, *extra, out, lse)
    return q, k, v, out, lse


EXPLICIT = f"""
func.func @f(%q: {T}, %k: {T}, %v: {T}, %o: {T}, %l: {L}) -> ({T}, {L}) {{
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = tensor.dim %q, %c2 : {T}
  %n = tensor.dim %k, %c2 : {T}
  %bm = attn.create_block_mask batch(%c1) heads(%c1) q_len(%m) kv_len(%n)
      : {BM} mask_mod {{{MASK_MOD}
      }}
  %r:2 = attn.attention ins(%q, %k, %v : {T}, {T}, {T}) outs(%o, %l : {T}, {L})
      block_mask(%bm : {BM}) mask_mod {{{MASK_MOD}
      }} -> {T}, {L}
  return %r#0, %r#1 : {T}, {L}
}}"""

DERIVED = f"""
func.func @f(%q: {T}, %k: {T}, %v: {T}, %o: {T}, %l: {L}) -> ({T}, {L}) {{
  %r:2 = attn.attention ins(%q, %k, %v : {T}, {T}, {T}) outs(%o, %l : {T}, {L})
      mask_mod {{{MASK_MOD}
      }} -> {T}, {L}
  return %r#0, %r#1 : {T}, {L}
}}"""


@pytest.mark.parametrize("text", [EXPLICIT, DERIVED],
                         ids=["explicit", "derived"])
@pytest.mark.parametrize("m,n", [(1, 1), (17, 40), (100, 77), (130, 257)])
def test_sliding_window_block_mask(text, m, n):
    q, k, v, out, lse = run(text, m, n)
    ref_out, ref_lse = reference(q, k, v, window_keep(m, n))
    assert error(out, ref_out) < TOLERANCE
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.allclose(lse[finite], ref_lse[finite], atol=1e-5)


LISTS = "tensor<1x1x?xi32>, tensor<1x1x?x?xi32>"
GIVEN = f"""
func.func @f(%q: {T}, %k: {T}, %v: {T}, %num: tensor<1x1x?xi32>,
             %idx: tensor<1x1x?x?xi32>, %fnum: tensor<1x1x?xi32>,
             %fidx: tensor<1x1x?x?xi32>, %o: {T}, %l: {L}) -> ({T}, {L}) {{
  %bm = attn.make_block_mask kv(%num, %idx : {LISTS})
      full_kv(%fnum, %fidx : {LISTS}) : {BM}
  %r:2 = attn.attention ins(%q, %k, %v : {T}, {T}, {T}) outs(%o, %l : {T}, {L})
      block_mask(%bm : {BM}) mask_mod {{
      ^bb0(%b: index, %h: index, %qi: index, %kv: index):
        %c3 = arith.constant 3 : index
        %s = arith.addi %qi, %kv : index
        %r = arith.remui %s, %c3 : index
        %c0 = arith.constant 0 : index
        %keep = arith.cmpi ne, %r, %c0 : index
        attn.yield %keep : i1
      }} -> {T}, {L}
  return %r#0, %r#1 : {T}, {L}
}}"""


def lists(classes):
    """FlexAttention's lists of a [QB, KB] pattern (0 empty, 1 partial,
    2 full), as [1, 1, ...] int32 arrays."""
    qb, kb = classes.shape
    out = []
    for kind in (1, 2):
        num = np.zeros((1, 1, qb), np.int32)
        idx = np.zeros((1, 1, qb, kb), np.int32)
        for row in range(qb):
            # Any order is allowed: list them backwards.
            blocks = np.nonzero(classes[row] == kind)[0][::-1]
            num[0, 0, row] = len(blocks)
            idx[0, 0, row, :len(blocks)] = blocks
        out += [num, idx]
    return out


@pytest.mark.parametrize("m,n", [(40, 70), (64, 128), (97, 200)])
def test_random_block_pattern(m, n):
    qb, kb = -(-m // 16), -(-n // 32)
    classes = rng.integers(0, 3, (qb, kb))
    classes[0] = 0  # a q-block with no kv-block: 0 and -inf
    q, k, v, out, lse = run(GIVEN, m, n, lists(classes))
    i, j = np.arange(m)[:, None], np.arange(n)[None, :]
    block = classes[i // 16, j // 32]
    keep = (block == 2) | ((block == 1) & ((i + j) % 3 != 0))
    ref_out, ref_lse = reference(q, k, v, keep)
    assert error(out, ref_out) < TOLERANCE
    assert np.all(out[:, :, :16] == 0)
    assert np.all(lse[:, :, :16] == -np.inf)
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.allclose(lse[finite], ref_lse[finite], atol=1e-5)


def test_a_block_mask_with_no_blocks_gives_zero_and_minus_inf():
    m, n = 50, 90
    empty = np.zeros((-(-m // 16), -(-n // 32)), np.int64)
    q, k, v, out, lse = run(GIVEN, m, n, lists(empty))
    assert np.all(out == 0) and np.all(lse == -np.inf)


def captures_of(mask, length):
    """The arrays `mask` captures: document ids (documents of 13), or
    sequence ids and starts (sequences of 11 to 43)."""
    if mask == "document":
        return (np.repeat(np.arange(length, dtype=np.int32), 13)[:length],)
    if mask.startswith("jagged"):
        sizes = np.resize([11, 43, 29, 17], length)
        seq = np.repeat(np.arange(length, dtype=np.int32), sizes)[:length]
        starts = np.concatenate([[0], np.cumsum(sizes)])[:length]
        return seq, starts.astype(np.int32)
    return ()


def keep_of(mask, m, n, captures=()):
    """[M, N] positions `mask` keeps (docs/Masks.md), in numpy."""
    q, kv = np.arange(m)[:, None], np.arange(n)[None, :]
    kind, *params = mask.split(":")
    params = [int(p) for p in params]
    if kind == "jagged":
        seq, starts = captures
        ql, kl = q - starts[seq[q]], kv - starts[seq[kv]]
        return (seq[q] == seq[kv]) & ((kl <= params[0]) | (kl <= ql))
    if kind == "document":
        doc = captures[0]
        return (doc[q] == doc[kv]) & (kv <= q)
    if kind == "sliding-window":
        return (kv <= q) & (q - kv <= params[0])
    if kind == "prefix":
        return (kv <= params[0]) | (kv <= q)
    height, width, k = ([None] + params if kind == "sasa" else params)
    r = k // 2
    cx, cy = q // width, q % width
    if kind == "natten":
        cx = np.clip(cx, r, height - 1 - r)
        cy = np.clip(cy, r, width - 1 - r)
    return (np.abs(cx - kv // width) <= r) & (np.abs(cy - kv % width) <= r)


def classes_of(keep, q_block, kv_block):
    """[QB, KB] EMPTY/PARTIAL/FULL of a [M, N] keep pattern."""
    m, n = keep.shape
    qb, kb = -(-m // q_block), -(-n // kv_block)
    out = np.zeros((qb, kb), np.int8)
    for i in range(qb):
        for j in range(kb):
            block = keep[i * q_block:(i + 1) * q_block,
                         j * kv_block:(j + 1) * kv_block]
            out[i, j] = 2 if block.all() else 1 if block.any() else 0
    return out


MASKS = ["sliding-window:40", "prefix:50", "document", "jagged:5",
         "sasa:24:5", "natten:9:20:7"]


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("m,n,q_block,kv_block", [
    (1, 1, 16, 32), (100, 77, 16, 32), (180, 200, 16, 32),
    (700, 1000, 64, 128), (515, 300, 128, 16)])
def test_create_block_mask_lists_both_sides(mask, m, n, q_block, kv_block):
    """Every block's class, whether decided by the mask_mod's bounds or
    position by position, is the class of the materialized mask."""
    captures = captures_of(mask, max(m, n))
    bm = attn.create_block_mask(mask, m, n, *captures, batch=1, heads=2,
                                q_block=q_block, kv_block=kv_block)
    expected = classes_of(keep_of(mask, m, n, captures), q_block, kv_block)
    assert bm.shape == (1, 2, m, n)
    assert np.array_equal(bm.classes(), np.broadcast_to(expected,
                                                        (1, 2) + expected.shape))
    # Each list is in increasing block order, zero past its count; the
    # q-side lists are the columns of the same pattern.
    for counts, indices, pattern, kind in (
            (bm.kv_num_blocks, bm.kv_indices, expected, 1),
            (bm.full_kv_num_blocks, bm.full_kv_indices, expected, 2),
            (bm.q_num_blocks, bm.q_indices, expected.T, 1),
            (bm.full_q_num_blocks, bm.full_q_indices, expected.T, 2)):
        for line in range(pattern.shape[0]):
            blocks = np.nonzero(pattern[line] == kind)[0]
            for h in range(2):
                assert counts[0, h, line] == len(blocks)
                assert np.array_equal(indices[0, h, line, :len(blocks)],
                                      blocks)
                assert not indices[0, h, line, len(blocks):].any()
    assert bm.density == pytest.approx(np.count_nonzero(expected) /
                                       expected.size)


def test_block_mask_picture_and_density():
    bm = attn.create_block_mask("sliding-window:128", 512, 512)
    assert bm.density == pytest.approx(7 / 16)
    assert str(bm) == "\n".join([
        "BlockMask(shape=(1, 1, 512, 512), block=(128, 128), "
        "density=43.75%)",
        "(0, 0)",
        "░░",
        "░░░░",
        "  ░░░░",
        "    ░░░░"])
    # Past `grid` blocks a side, a cell stands for several.
    causal = attn.create_block_mask("prefix:0", 4096, 4096, q_block=16,
                                    kv_block=16)
    lines = causal.to_string(grid=4).splitlines()
    assert lines[2:] == ["░░", "██░░", "████░░", "██████░░"]


def test_block_mask_from_lists_is_checked():
    counts = np.array([[[1, 0]]], np.int32)
    indices = np.array([[[[1, 0], [0, 0]]]], np.int32)
    bm = attn.BlockMask(counts, indices, q_block=16, kv_block=16, kv_len=20)
    assert bm.shape == (1, 1, 32, 20) and bm.density == 0.25
    with pytest.raises(ValueError, match="indices must be in"):
        attn.BlockMask(counts, indices + 2, q_block=16, kv_block=16)
    with pytest.raises(ValueError, match="counts must be in"):
        attn.BlockMask(counts + 2, indices, q_block=16, kv_block=16)
    with pytest.raises(ValueError, match="same B, H"):
        attn.BlockMask(counts[..., :1], indices)
    with pytest.raises(ValueError, match="need 3 x 2 blocks"):
        attn.BlockMask(counts, indices, q_block=16, kv_block=16, q_len=40)
    with pytest.raises(ValueError, match="both full_kv"):
        attn.BlockMask(counts, indices, counts)
    with pytest.raises(ValueError, match="listed twice"):
        attn.BlockMask(counts, indices, counts, indices)
    with pytest.raises(ValueError, match=r"\(1, 1, 2, 2\) for the indices"):
        attn.BlockMask(counts, indices, np.zeros((2, 1, 2), np.int32),
                       np.zeros((2, 1, 2, 2), np.int32))
    with pytest.raises(ValueError, match="q_len must be a non-negative int"):
        attn.BlockMask(counts, indices, q_block=16, kv_block=16, q_len=20.5)
    with pytest.raises(ValueError, match="needs a mask"):
        attn.create_block_mask(None, 10, 10)
    with pytest.raises(ValueError, match="power of two"):
        attn.create_block_mask("prefix:0", 10, 10, q_block=48)
    with pytest.raises(ValueError, match="a given block mask needs a mask"):
        attn.attention(given_block_mask=32)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("m,n", [(33, 33), (150, 210)])
def test_given_block_mask_from_create_block_mask(mask, m, n):
    """The explicit route: lists from attn.create_block_mask handed to a
    function that takes them, as FlexAttention's flex_attention takes a
    BlockMask."""
    captures = captures_of(mask, max(m, n))
    bm = attn.create_block_mask(mask, m, n, *captures, q_block=32,
                                kv_block=32)
    kernel = attn.compile_cpu(attn.attention(
        dtype="f32", head_dim=32, heads=2, mask=mask, lse=True,
        given_block_mask=32))
    q = rng.uniform(-1, 1, (2, 2, m, 32)).astype(np.float32)
    k = rng.uniform(-1, 1, (2, 2, n, 32)).astype(np.float32)
    v = rng.uniform(-1, 1, (2, 2, n, 32)).astype(np.float32)
    out = np.full(q.shape, np.nan, np.float32)
    lse = np.full(q.shape[:3], np.nan, np.float32)
    kernel(q, k, v, out, lse, *captures, *bm.kv_lists())
    ref_out, ref_lse = reference(q, k, v, keep_of(mask, m, n, captures))
    assert error(out, ref_out) < TOLERANCE
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isfinite(lse), finite)
    assert np.allclose(lse[finite], ref_lse[finite], atol=1e-5)


def custom_block_mask(body, m, n, q_block, kv_block):
    """attn.BlockMask of a mask_mod given as IR over %q and %kv (index),
    yielding %keep, built on the CPU."""
    text = str(attn.block_mask_module("sliding-window:1", m, n,
                                      q_block=q_block, kv_block=kv_block))
    start = text.index("^bb0")
    end = text.index("attn.yield", start)
    end = text.index("\n", end)
    region = ("^bb0(%b: index, %h: index, %q: index, %kv: index):\n" + body +
              "\n      attn.yield %keep : i1")
    module = attn.Module.parse(text[:start] + region + text[end:])
    q_blocks, kv_blocks = -(-m // q_block), -(-n // kv_block)
    lists = []
    for lines, length in ((q_blocks, kv_blocks), (kv_blocks, q_blocks)):
        for _ in range(2):
            lists += [np.zeros((1, 1, lines), np.int32),
                      np.zeros((1, 1, lines, length), np.int32)]
    attn.compile_cpu(module)(*lists)
    return attn.BlockMask(*lists, q_block=q_block, kv_block=kv_block,
                          q_len=m, kv_len=n)


# mask_mods whose interval bounds must give up: products and sums that
# wrap around 64 bits, unsigned order across zero, remainders of negative
# values. numpy's int64 arithmetic wraps as the index type does.
WRAPPING = [
    ("""      %big = arith.constant 4611686018427387904 : index
      %p = arith.muli %q, %big : index
      %keep = arith.cmpi slt, %p, %kv : index""",
     lambda q, kv: (q * (1 << 62)) < kv),
    ("""      %top = arith.constant 9223372036854775800 : index
      %s = arith.addi %q, %top : index
      %t = arith.addi %s, %kv : index
      %keep = arith.cmpi sgt, %t, %top : index""",
     lambda q, kv: (q + np.int64(9223372036854775800) + kv) >
     np.int64(9223372036854775800)),
    ("""      %c40 = arith.constant 40 : index
      %d = arith.subi %q, %kv : index
      %r = arith.remsi %d, %c40 : index
      %c9 = arith.constant 9 : index
      %near = arith.cmpi ult, %r, %c9 : index
      %keep = arith.andi %near, %near : i1""",
     lambda q, kv: np.fmod(q - kv, 40).astype(np.uint64) < 9),
]


@pytest.mark.parametrize("body,keep", WRAPPING)
def test_block_bounds_stay_sound_when_arithmetic_wraps(body, keep):
    """Blocks whose bounds could overflow are scanned, so their classes are
    those of the materialized mask."""
    m, n = 200, 170
    with np.errstate(over="ignore"):
        q = np.arange(m, dtype=np.int64)[:, None]
        kv = np.arange(n, dtype=np.int64)[None, :]
        expected = classes_of(keep(q, kv), 16, 32)
    bm = custom_block_mask(body, m, n, 16, 32)
    assert np.array_equal(bm.classes()[0, 0], expected)
