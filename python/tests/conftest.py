import numpy as np
import pytest

import attn


def reference_attention(q, k, v, scale=None, causal=False, keep=None,
                        score_mod=None):
    """float64 attention: q [B,Hq,M,D], k/v [B,Hkv,N,*]; keep(b,h,i,j) and
    score_mod(s,b,h,i,j) take broadcastable index arrays."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    b, hq, m, d = q.shape
    hkv, n = k.shape[1], k.shape[2]
    k = np.repeat(k, hq // hkv, axis=1)
    v = np.repeat(v, hq // hkv, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * (scale or 1 / np.sqrt(d))
    bi, hi, ii, ji = np.meshgrid(np.arange(b), np.arange(hq), np.arange(m),
                                 np.arange(n), indexing="ij")
    if score_mod is not None:
        s = score_mod(s, bi, hi, ii, ji)
    mask = np.ones_like(s, dtype=bool)
    if causal:
        mask &= ji <= ii
    if keep is not None:
        mask &= keep(bi, hi, ii, ji)
    s = np.where(mask, s, -np.inf)
    mx = s.max(axis=-1, keepdims=True)
    safe = np.where(np.isfinite(mx), mx, 0)
    p = np.where(mask, np.exp(s - safe), 0)
    total = p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bhjd->bhid", p / np.where(total > 0, total, 1), v)
    lse = np.where(total[..., 0] > 0, safe[..., 0] + np.log(np.where(total[..., 0] > 0, total[..., 0], 1)), -np.inf)
    return out, lse


def relative_error(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    norm = np.linalg.norm(want)
    return np.linalg.norm(got - want) / (norm if norm > 0 else 1)


def bf16_bits(x):
    """float32 -> bf16 bits (round to nearest even) as uint16."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


needs_compiler = pytest.mark.skipif(not attn.compiler_available,
                                    reason="runtime-only build")


def driver_present():
    try:
        attn.chip()
        return True
    except RuntimeError:
        return False
