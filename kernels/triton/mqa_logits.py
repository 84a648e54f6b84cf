"""Our Triton fp8 MQA-logits kernel, written the way the production ones are (AITER's and vLLM's
Triton kernels, DeepGEMM's sm90 kernel): fp8 operands straight into the matrix unit, relu, a
weighted head sum, k_scale, and a masked store that writes -inf outside each row's window.

    logits[i, j] = k_scale[j] * sum_h weights[i, h] * relu(sum_d q[i, h, d] * k[j, d])   ks[i] <= j < ke[i]
                 = -inf                                                                  otherwise (clean)

One program per (block of query rows, key tile). The block's rows times their heads form the
MMA's 128 rows (BLOCK_M = 128 / heads, as DeepGEMM's block_q), so one ``tl.dot`` of fp8 q
[BLOCK_M * heads, D] and a key tile [D, BLOCK_N] gives every head's dot products in float32; on
Hopper that is wgmma with fp8 inputs, whose accumulator keeps 13 fraction bits and truncates
(DeepSeek-V3 report 3.5.2; reference/bounds/README.md, fp22-truncated). ``tl.maximum`` is the
relu (NaN becomes 0: fmax); k_scale is applied after the head sum. Tiles no row of the block can see are not computed, only cleaned.
Offsets into the output are 64-bit (BUGCLASSES 17); the row stride is the output's own (padded
strides work).

Importable without Triton (CPU CI imports it); launching needs Triton and torch. README.md beside
this file gives the contract to judge it under, and the two planted bugs.
"""
from __future__ import annotations

from typing import Any

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU machines: the module imports, fp8_mqa_logits says what is missing
    triton = None

BLOCK_N = 128  # keys per tile
MMA_ROWS = 128  # query rows x heads per program
BUGS = ("inclusive-end", "tail-tile-dropped")

if triton is not None:

    @triton.jit
    def _mqa_logits_kernel(q_ptr, k_ptr, k_scale_ptr, w_ptr, ks_ptr, ke_ptr, out_ptr,
                           m, n, heads, head_dim, stride_out,
                           BLOCK_M: tl.constexpr, HEADS: tl.constexpr, DIM: tl.constexpr, BLOCK_N: tl.constexpr,
                           CLEAN: tl.constexpr, END_INCLUSIVE: tl.constexpr):
        rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        tile = tl.program_id(1) * BLOCK_N
        cols = tile + tl.arange(0, BLOCK_N)
        h = tl.arange(0, HEADS)
        d = tl.arange(0, DIM)
        row_ok = rows < m
        col_ok = cols < n

        ks = tl.load(ks_ptr + rows, mask=row_ok, other=0)
        ke = tl.load(ke_ptr + rows, mask=row_ok, other=0)
        if END_INCLUSIVE:  # planted bug (BUGCLASSES 11): the window's end read as inclusive
            ke = ke + 1
        inside = (cols[None, :] >= ks[:, None]) & (cols[None, :] < ke[:, None]) & col_ok[None, :]
        store = row_ok[:, None] & col_ok[None, :]
        if not CLEAN:
            store = store & inside
        out_ptrs = out_ptr + rows[:, None].to(tl.int64) * stride_out + cols[None, :]

        tile_end = tl.minimum(tile + BLOCK_N, n)
        seen = row_ok & (tl.maximum(ks, tile) < tl.minimum(ke, tile_end))
        if tl.max(seen.to(tl.int32), axis=0) > 0:
            q_rows = rows[:, None, None].to(tl.int64)
            q_ptrs = q_ptr + (q_rows * heads + h[None, :, None]) * head_dim + d[None, None, :]
            q_mask = row_ok[:, None, None] & (h[None, :, None] < heads) & (d[None, None, :] < head_dim)
            q = tl.reshape(tl.load(q_ptrs, mask=q_mask, other=0.0), (BLOCK_M * HEADS, DIM))
            k_ptrs = k_ptr + cols[None, :].to(tl.int64) * head_dim + d[:, None]  # [DIM, BLOCK_N], K-major
            k = tl.load(k_ptrs, mask=col_ok[None, :] & (d[:, None] < head_dim), other=0.0)
            scores = tl.reshape(tl.dot(q, k), (BLOCK_M, HEADS, BLOCK_N))  # float32 accumulation
            w = tl.load(w_ptr + rows[:, None].to(tl.int64) * heads + h[None, :],
                        mask=row_ok[:, None] & (h[None, :] < heads), other=0.0)
            logits = tl.sum(tl.maximum(scores, 0.0) * w[:, :, None], axis=1)  # padded heads weigh 0
            scale = tl.load(k_scale_ptr + cols, mask=col_ok, other=0.0)
            logits = logits * scale[None, :]
            tl.store(out_ptrs, tl.where(inside, logits, float("-inf")), mask=store)
        elif CLEAN:
            tl.store(out_ptrs, tl.full((BLOCK_M, BLOCK_N), float("-inf"), tl.float32), mask=store)


def fp8_mqa_logits(q: Any, k: Any, k_scale: Any, weights: Any, ks: Any, ke: Any, *, clean_logits: bool = True,
                   out: Any = None, bug: str | None = None) -> Any:
    """logits float32 [m, n] (or ``out``, [m, s >= n] with unit column stride, written in place).

    q fp8 [m, heads, head_dim] and k fp8 [n, head_dim] (e4m3fn or e5m2 on Hopper), k_scale float32
    [n], weights float32 [m, heads], ks/ke int32 [m], all contiguous on one CUDA device.
    ``bug``: one of BUGS, the planted-bug versions.
    """
    if triton is None:
        raise RuntimeError("kernels/triton needs Triton (and torch), which are not installed here")
    import torch

    if bug is not None and bug not in BUGS:
        raise ValueError(f"bug '{bug}' is not planted here (planted: {', '.join(BUGS)})")
    m, heads, head_dim = q.shape
    n = k.shape[0]
    if heads > MMA_ROWS:
        raise ValueError(f"heads = {heads}: at most {MMA_ROWS} (one MMA tile of rows)")
    for name, t in (("q", q), ("k", k), ("k_scale", k_scale), ("weights", weights), ("ks", ks), ("ke", ke)):
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
    if out is None:
        out = torch.empty((m, n), dtype=torch.float32, device=q.device)
    if out.dtype != torch.float32 or out.dim() != 2 or out.shape[0] != m or out.shape[1] < n or out.stride(1) != 1:
        raise ValueError(f"out is {out.dtype} {list(out.shape)} with strides {out.stride()}; float32 [{m}, S >= {n}] "
                         "with unit column stride is expected")
    padded_heads = max(16, triton.next_power_of_2(heads))  # tl.dot needs >= 16 rows; padded heads weigh 0
    dim = max(32, triton.next_power_of_2(head_dim))  # one fp8 MMA k-step is 32
    block_m = max(1, MMA_ROWS // padded_heads)
    # The tail-tile bug sizes the grid by floor division, as a launcher that forgot the partial tile.
    tiles = n // BLOCK_N if bug == "tail-tile-dropped" else triton.cdiv(n, BLOCK_N)
    grid = (triton.cdiv(m, block_m), tiles)
    if m > 0 and tiles > 0:
        _mqa_logits_kernel[grid](q, k, k_scale, weights, ks, ke, out, m, n, heads, head_dim, out.stride(0),
                                 BLOCK_M=block_m, HEADS=padded_heads, DIM=dim, BLOCK_N=BLOCK_N,
                                 CLEAN=bool(clean_logits), END_INCLUSIVE=bug == "inclusive-end", num_warps=4)
    return out
