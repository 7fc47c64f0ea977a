"""attn.torch.flex_attention on the GPU against float64 attention, for
mods written as FlexAttention's users write them. Its kernels come from
attn.cache: where attn has no compiler, fill $ATTN_CACHE_DIR first with
`python3 python/tests/flex_mods.py sm_90a` where it has one."""

import pytest

from flex_mods import N, mods

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from attn.torch import flex_attention  # noqa: E402

DOC = (torch.arange(N, device="cuda") // 50).to(torch.int32)
BIAS = torch.randn(4, 2 * N - 1, device="cuda")


class BlockMask:
    """What flex_attention reads of FlexAttention's BlockMask."""

    def __init__(self, mask_mod):
        self.mask_mod = mask_mod


def reference(q, k, v, mask_mod, score_mod):
    q, k, v = (t.double() for t in (q, k, v))
    k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    s = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    idx = [torch.arange(n, device="cuda").view(*([1] * i), n,
                                               *([1] * (3 - i)))
           for i, n in enumerate(s.shape)]
    if score_mod is not None:
        s = score_mod(s, *idx)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(*idx), float("-inf"))
    return torch.softmax(s, dim=-1) @ v, torch.logsumexp(s, dim=-1)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("index", range(3))
def test_flex_attention_matches_float64(dtype, index):
    name, mask_mod, score_mod = mods(DOC, BIAS)[index]
    torch.manual_seed(index)
    q = torch.randn(2, 4, N, 64, device="cuda", dtype=dtype)
    k, v = (torch.randn(2, 2, N, 64, device="cuda", dtype=dtype)
            for _ in range(2))
    out, lse = flex_attention(
        q, k, v, score_mod=score_mod,
        block_mask=BlockMask(mask_mod) if mask_mod else None,
        enable_gqa=True, return_lse=True)
    want, want_lse = reference(q, k, v, mask_mod, score_mod)
    error = ((out.double() - want).norm() / want.norm()).item()
    assert error < (2e-2 if dtype == torch.bfloat16 else 3e-3), name
    assert torch.allclose(lse.double(), want_lse, atol=1e-3), name


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("index", range(3))
def test_backward_matches_float64(dtype, index):
    """loss.backward() through flex_attention: dQ, dK, dV, and the
    gradient of the bias table where the score_mod reads one."""
    bias = BIAS.clone().requires_grad_()
    name, mask_mod, score_mod = mods(DOC, bias)[index]
    torch.manual_seed(10 + index)
    q = torch.randn(2, 4, N, 64, device="cuda", dtype=dtype)
    k, v = (torch.randn(2, 2, N, 64, device="cuda", dtype=dtype)
            for _ in range(2))
    do = torch.randn(2, 4, N, 64, device="cuda", dtype=dtype)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = flex_attention(*leaves, score_mod=score_mod,
                         block_mask=BlockMask(mask_mod) if mask_mod else None,
                         enable_gqa=True)
    (out.float() * do.float()).sum().backward()

    bias64 = BIAS.double().requires_grad_()
    _, mask64, score64 = mods(DOC, bias64)[index]
    leaves64 = [t.double().requires_grad_() for t in (q, k, v)]
    want, _ = reference(*leaves64, mask64, score64)
    (want * do.double()).sum().backward()
    pairs = [(t.grad, w.grad) for t, w in zip(leaves, leaves64)]
    if score_mod is not None and "bias" in name:
        pairs.append((bias.grad, bias64.grad))
    else:
        assert bias.grad is None
    for got, wanted in pairs:
        error = ((got.double() - wanted).norm() / wanted.norm()).item()
        assert error < (3e-2 if dtype == torch.bfloat16 else 5e-3), name


def test_arguments_are_checked_by_name():
    q = torch.randn(1, 4, 8, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(1, 2, 8, 64, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="enable_gqa=True"):
        flex_attention(q, k, k)
    with pytest.raises(ValueError, match="value must be float16 or bfloat16"):
        flex_attention(q, k, k.float(), enable_gqa=True)
    with pytest.raises(ValueError, match="key must be on the query's CUDA"):
        flex_attention(q, k.cpu(), k, enable_gqa=True)


def test_one_kernel_serves_every_length():
    """Ten sequence lengths after the first call: no kernel compiled or
    loaded again (FlexAttention compiles anew per length unless dynamic)."""
    import attn.cache

    _, mask_mod, _ = mods(DOC, BIAS)[0]
    shapes = [(1, 2, 1), (2, 4, 17), (1, 8, 64), (3, 2, 100), (1, 4, 130),
              (2, 2, 257), (1, 6, 300), (1, 4, 513), (2, 2, 777),
              (1, 2, 1000)]
    kernels = None
    for b, h, n in shapes:
        q, k, v = (torch.randn(b, h, n, 64, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        out = flex_attention(q, k, v, block_mask=BlockMask(mask_mod))
        want, _ = reference(q, k, v, mask_mod, None)
        assert ((out.double() - want).norm() / want.norm()).item() < 2e-2
        if kernels is None:
            kernels = dict(attn.cache._loaded)
        assert attn.cache._loaded == kernels
