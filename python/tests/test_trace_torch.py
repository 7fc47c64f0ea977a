"""Mods written with torch, as FlexAttention's users write them, trace to
the same regions as their numpy spellings (attn.trace needs no compiler:
this runs in a runtime-only build too)."""

import numpy as np
import pytest

from attn import TraceError, trace

torch = pytest.importorskip("torch")

N = 32
DOC = torch.arange(N, dtype=torch.int32) // 10
BIAS = torch.randn(4, 2 * N - 1)
DOC_NP, BIAS_NP = DOC.numpy(), BIAS.numpy()
SLOPES = torch.rand(4)
SLOPES_NP = SLOPES.numpy()

PAIRS = [
    (dict(mask_mod=lambda b, h, q, kv: (DOC[q] == DOC[kv]) & (q >= kv)),
     dict(mask_mod=lambda b, h, q, kv: (DOC_NP[q] == DOC_NP[kv]) & (q >= kv))),
    (dict(score_mod=lambda s, b, h, q, kv: torch.where(
        (q - kv) % 2 == 0, s, s * 0.5)),
     dict(score_mod=lambda s, b, h, q, kv: np.where((q - kv) % 2 == 0, s,
                                                    s * 0.5))),
    (dict(score_mod=lambda s, b, h, q, kv: 30 * torch.tanh(s / 30)),
     dict(score_mod=lambda s, b, h, q, kv: 30 * np.tanh(s / 30))),
    (dict(score_mod=lambda s, b, h, q, kv: s + BIAS[h, q - kv + N - 1]),
     dict(score_mod=lambda s, b, h, q, kv: s + BIAS_NP[h, q - kv + N - 1])),
    (dict(score_mod=lambda s, b, h, q, kv: s + SLOPES[h] * (q - kv)),
     dict(score_mod=lambda s, b, h, q, kv: s + SLOPES_NP[h] * (q - kv))),
    (dict(score_mod=lambda s, b, h, q, kv: s - (q - kv).abs().float() / 8),
     dict(score_mod=lambda s, b, h, q, kv: s - abs(q - kv) / 8)),
    (dict(score_mod=lambda s, b, h, q, kv: torch.clamp(s, min=-2.0, max=2.0)),
     dict(score_mod=lambda s, b, h, q, kv: np.minimum(np.maximum(s, -2.0),
                                                      2.0))),
]


@pytest.mark.parametrize("written,numpy_written", PAIRS)
def test_torch_mods_trace_as_their_numpy_spelling(written, numpy_written):
    got, want = trace.trace(**written), trace.trace(**numpy_written)
    assert (got.mask_body, got.score_body) == (want.mask_body,
                                               want.score_body)
    assert got.tensor_types == want.tensor_types


def test_torch_tensors_are_captured_in_place():
    traced = trace.trace(score_mod=PAIRS[3][0]["score_mod"])
    assert traced.arrays[0] is BIAS and traced.learnable == ["capture0"]


def test_unsupported_torch_calls_name_the_op():
    with pytest.raises(TraceError, match=r"sin\(\) has no attn op"):
        trace.trace(score_mod=lambda s, b, h, q, kv: torch.sin(s))
    with pytest.raises(TraceError, match="captures a float64 array"):
        table = torch.zeros(4, dtype=torch.float64)
        trace.trace(score_mod=lambda s, b, h, q, kv: s + table[h])


def test_flex_mask_combinators_and_nested_reads_trace():
    """FlexAttention's and_masks and noop_mask, and tensors read in the
    functions a mod calls, trace as the mod written out."""
    from torch.nn.attention.flex_attention import and_masks, noop_mask

    def causal(b, h, q, kv):
        return q >= kv

    def same_document(b, h, q, kv):
        return DOC[q] == DOC[kv]

    combined = trace.trace(mask_mod=and_masks(causal, same_document))
    assert "tensor.extract %capture0[%q]" in combined.mask_body
    assert combined.arrays[0] is DOC
    assert "arith.constant true" in trace.trace(mask_mod=noop_mask).mask_body
