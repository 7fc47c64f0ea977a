"""FlexAttention's BlockMask as numpy arrays: which (q-block, kv-block)
pairs a kernel visits, its density and a picture of its pattern. Needs only
numpy; attn.create_block_mask computes one with the compiler."""

import numpy as np

_FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks",
           "full_kv_indices", "q_num_blocks", "q_indices",
           "full_q_num_blocks", "full_q_indices")
EMPTY, PARTIAL, FULL = 0, 1, 2


def _lists(name, counts, indices, shape=None):
    """Checked int32 copies of one (counts, indices) pair of [B, H, L] and
    [B, H, L, K] arrays ([B, H, L, K] = `shape` when given)."""
    counts, indices = np.asarray(counts), np.asarray(indices)
    if counts.ndim != 3 or indices.ndim != 4 or \
            counts.shape != indices.shape[:3] or \
            (shape is not None and indices.shape != shape):
        want = "" if shape is None else f" ({shape} for the indices)"
        raise ValueError(f"attn: BlockMask: {name} counts and indices must be "
                         "[B, H, L] and [B, H, L, K] arrays of the same B, H "
                         f"and L{want}, got {counts.shape} and "
                         f"{indices.shape}")
    for array in (counts, indices):
        if not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"attn: BlockMask: {name} lists must be "
                             f"integers, got {array.dtype}")
    k = indices.shape[3]
    if counts.size and (counts.min() < 0 or counts.max() > k):
        raise ValueError(f"attn: BlockMask: {name} counts must be in "
                         f"[0, {k}]")
    listed = np.arange(k) < counts[..., None]
    if np.any(listed & ((indices < 0) | (indices >= k))):
        raise ValueError(f"attn: BlockMask: {name} indices must be in "
                         f"[0, {k})")
    return counts.astype(np.int32), indices.astype(np.int32)


def _listings(pairs):
    """How many times each block of [B, H, L, K] is listed by the (counts,
    indices) pairs of one side."""
    times = np.zeros(pairs[0][1].shape, np.int64)
    for counts, indices in pairs:
        listed = np.arange(indices.shape[3]) < counts[..., None]
        b, h, line, i = np.nonzero(listed)
        np.add.at(times, (b, h, line, indices[b, h, line, i]), 1)
    return times


class BlockMask:
    """The block-sparse structure of a mask over a [B, H, q_len, kv_len]
    score tensor cut into q_block x kv_block blocks, in FlexAttention's
    fields (see `!attn.block_mask`): for each (b, h, q-block) the count and
    indices of the partial kv-blocks (`kv_num_blocks`, `kv_indices`) and of
    the full ones (`full_kv_*`), and optionally the transposed q-side lists
    (`q_*`, `full_q_*`). A kernel visits only listed blocks, applying the
    mask_mod on partial ones. B and H may be 1 (one mask for all)."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks=None,
                 full_kv_indices=None, q_num_blocks=None, q_indices=None,
                 full_q_num_blocks=None, full_q_indices=None, *,
                 q_block=128, kv_block=128, q_len=None, kv_len=None):
        for name, size in (("q_block", q_block), ("kv_block", kv_block)):
            if not isinstance(size, int) or size <= 0:
                raise ValueError(f"attn: BlockMask: {name} must be a positive "
                                 f"int, got {size!r}")
        self.q_block, self.kv_block = q_block, kv_block
        self.kv_num_blocks, self.kv_indices = _lists("kv", kv_num_blocks,
                                                     kv_indices)
        batch, heads, q_blocks, kv_blocks = self.kv_indices.shape
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise ValueError("attn: BlockMask: give both full_kv lists or "
                             "neither")
        self.full_kv_num_blocks = self.full_kv_indices = None
        if full_kv_num_blocks is not None:
            self.full_kv_num_blocks, self.full_kv_indices = _lists(
                "full_kv", full_kv_num_blocks, full_kv_indices,
                self.kv_indices.shape)
        self.q_num_blocks = self.q_indices = None
        self.full_q_num_blocks = self.full_q_indices = None
        q_side = (q_num_blocks, q_indices, full_q_num_blocks, full_q_indices)
        if any(x is not None for x in q_side):
            if any(x is None for x in q_side):
                raise ValueError("attn: BlockMask: give all four q-side "
                                 "lists or none")
            transposed = (batch, heads, kv_blocks, q_blocks)
            self.q_num_blocks, self.q_indices = _lists(
                "q", q_num_blocks, q_indices, transposed)
            self.full_q_num_blocks, self.full_q_indices = _lists(
                "full_q", full_q_num_blocks, full_q_indices, transposed)
        for name, size in (("q_len", q_len), ("kv_len", kv_len)):
            if size is not None and (not isinstance(size, int) or size < 0):
                raise ValueError(f"attn: BlockMask: {name} must be a "
                                 f"non-negative int, got {size!r}")
        self.q_len = q_blocks * q_block if q_len is None else q_len
        self.kv_len = kv_blocks * kv_block if kv_len is None else kv_len
        if -(-self.q_len // q_block) != q_blocks or \
                -(-self.kv_len // kv_block) != kv_blocks:
            raise ValueError(
                f"attn: BlockMask: q_len {self.q_len} and kv_len "
                f"{self.kv_len} need {-(-self.q_len // q_block)} x "
                f"{-(-self.kv_len // kv_block)} blocks, the lists have "
                f"{q_blocks} x {kv_blocks}")
        self._batch, self._heads = batch, heads
        # A block is listed once at most on each side, and the q side is
        # the kv side's transpose.
        partial = _listings([(self.kv_num_blocks, self.kv_indices)])
        full = np.zeros_like(partial)
        if self.full_kv_num_blocks is not None:
            full = _listings([(self.full_kv_num_blocks, self.full_kv_indices)])
        if (partial + full).max(initial=0) > 1:
            raise ValueError("attn: BlockMask: a kv-block is listed twice "
                             "for one q-block")
        if self.q_num_blocks is not None:
            # Partial blocks on one side are partial on the other, full
            # ones full: the dQ and dK/dV kernels must mask the same ones.
            for kind, kv_side, q_side in (
                    ("partial", partial, (self.q_num_blocks, self.q_indices)),
                    ("full", full, (self.full_q_num_blocks,
                                    self.full_q_indices))):
                q_listed = _listings([q_side])
                if not np.array_equal(q_listed,
                                      kv_side.transpose(0, 1, 3, 2)):
                    raise ValueError(
                        f"attn: BlockMask: the q-side {kind} lists are not "
                        f"the kv-side {kind} lists transposed")

    def kv_lists(self):
        """(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices):
        the arguments of a function built with attn.attention(
        given_block_mask=...); no full lists give empty ones."""
        if self.full_kv_num_blocks is None:
            return (self.kv_num_blocks, self.kv_indices,
                    np.zeros_like(self.kv_num_blocks),
                    np.zeros_like(self.kv_indices))
        return (self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices)

    def lists(self):
        """kv_lists() and the q side's (q_num_blocks, q_indices,
        full_q_num_blocks, full_q_indices): the arguments of a function
        built with attn.attention_grad(given_block_mask=...)."""
        if self.q_num_blocks is None:
            raise ValueError("attn: BlockMask: the backward walks the q-side "
                             "lists, and this mask has none")
        return self.kv_lists() + (self.q_num_blocks, self.q_indices,
                                  self.full_q_num_blocks, self.full_q_indices)

    @property
    def shape(self):
        """(B, H, q_len, kv_len)."""
        return (self._batch, self._heads, self.q_len, self.kv_len)

    def classes(self):
        """[B, H, QB, KB] array of EMPTY (0), PARTIAL (1) and FULL (2)."""
        out = np.zeros(self.kv_indices.shape, np.int8)
        lists = [(self.kv_num_blocks, self.kv_indices, PARTIAL)]
        if self.full_kv_num_blocks is not None:
            lists.append((self.full_kv_num_blocks, self.full_kv_indices, FULL))
        for counts, indices, kind in lists:
            listed = np.arange(indices.shape[3]) < counts[..., None]
            b, h, q, i = np.nonzero(listed)
            out[b, h, q, indices[b, h, q, i]] = kind
        return out

    @property
    def density(self):
        """The fraction of (q-block, kv-block) pairs a kernel visits."""
        total = self.kv_indices.size
        visited = int(self.kv_num_blocks.sum())
        if self.full_kv_num_blocks is not None:
            visited += int(self.full_kv_num_blocks.sum())
        return visited / total if total else 0.0

    def to_string(self, grid=32, limit=4):
        """A picture of the pattern of the first `limit` (b, h) pairs, one
        cell per block ('██' full, '░░' partial, '  ' empty); past `grid`
        blocks a side, a cell stands for several blocks: '██' when all are
        full, '░░' when any is visited."""
        lines = [f"BlockMask(shape={self.shape}, block=({self.q_block}, "
                 f"{self.kv_block}), density={100 * self.density:.2f}%)"]
        classes = self.classes()
        for b, h in list(np.ndindex(*classes.shape[:2]))[:limit]:
            lines.append(f"({b}, {h})")
            pattern = classes[b, h]
            rows = -(-pattern.shape[0] // grid) if pattern.shape[0] else 1
            cols = -(-pattern.shape[1] // grid) if pattern.shape[1] else 1
            for r in range(0, pattern.shape[0], rows):
                cells = []
                for c in range(0, pattern.shape[1], cols):
                    cell = pattern[r:r + rows, c:c + cols]
                    cells.append("██" if np.all(cell == FULL) else
                                 "░░" if np.any(cell != EMPTY) else "  ")
                lines.append("".join(cells).rstrip())
        return "\n".join(lines)

    def __str__(self):
        return self.to_string()

    def __repr__(self):
        return (f"BlockMask(shape={self.shape}, block=({self.q_block}, "
                f"{self.kv_block}), density={self.density:.4f})")
