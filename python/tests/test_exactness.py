"""Softmax and attention keep their precision as scores grow: the sum and
every probability use one exp2 argument, (x - max) * log2(e), so a row's
max contributes exactly 1 and nothing rounds away with |x|."""

import numpy as np
import pytest

import attn
from conftest import needs_compiler, reference_attention, relative_error

pytestmark = needs_compiler


@pytest.fixture(scope="module")
def softmax_f32():
    return attn.compile_cpu(attn.softmax("f32"))


def run_softmax(kernel, x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.full_like(x, np.nan)
    kernel(x, y)
    return y


def softmax64(x):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("magnitude", [1.0, 1e3, 1e4, 1e5])
def test_softmax_error_does_not_grow_with_the_scores(softmax_f32, magnitude):
    rng = np.random.default_rng(7)
    # Scores spread over a few units around +-magnitude, where a rounded
    # max * log2(e) in the exponent would cost 2e-3 at 1e5.
    x = (magnitude + rng.standard_normal((8, 1000)) * 3).astype(np.float32)
    x[4:] *= -1
    got = run_softmax(softmax_f32, x)
    assert relative_error(got, softmax64(x)) < 1e-6


def test_softmax_single_entry_and_constant_rows(softmax_f32):
    x = np.full((3, 7), -np.inf, np.float32)
    x[0, 3] = 12345.0  # one finite entry: exactly 1
    x[1, :] = 1e5      # a constant row: 1/n to rounding
    x[2, :] = -4.25
    got = run_softmax(softmax_f32, x)
    assert got[0, 3] == 1.0 and np.all(np.delete(got[0], 3) == 0)
    np.testing.assert_allclose(got[1:], 1 / 7, rtol=2 ** -23)


def test_softmax_of_far_apart_scores(softmax_f32):
    got = run_softmax(softmax_f32, [[1e8, 0, -1e8], [1e3, 0, -1e3]])
    np.testing.assert_array_equal(got, [[1, 0, 0], [1, 0, 0]])


@pytest.mark.parametrize("magnitude", [1e10, 1e12])
def test_attention_with_huge_scores_stays_finite(magnitude):
    """Scores near 1e10 and 1e12 give a finite output and logsumexp (with
    a rounded max * log2(e) in the exponent: 0 with lse = -inf, and NaN)."""
    kernel = attn.compile_cpu(attn.attention(head_dim=16, lse=True))
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 2, 33, 16)).astype(np.float32)
    k = (rng.standard_normal((1, 2, 40, 16)) * np.sqrt(magnitude)).astype(
        np.float32)
    q *= np.float32(np.sqrt(magnitude))
    v = rng.standard_normal((1, 2, 40, 16)).astype(np.float32)
    out = np.full_like(q, np.nan)
    lse = np.full((1, 2, 33), np.nan, np.float32)
    kernel(q, k, v, out, lse)
    want, want_lse = reference_attention(q, k, v)
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(lse))
    # Scores this large make every row one-hot: the output is V's row at
    # the max, and the logsumexp the max itself (f32 dot products round
    # relative to |score|, so compare lse relatively).
    assert relative_error(out, want) < 1e-5
    assert relative_error(lse, want_lse) < 1e-5
