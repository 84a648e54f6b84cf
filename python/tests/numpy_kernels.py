"""NumPy kernels for the package's tests: correct ones in each signature the package serves, and
planted bugs (BUGCLASSES 11 and 16). They share no code with the package beyond the bundle they
read: the arithmetic is written here from the operation's formula."""
from __future__ import annotations

import os
import sys

import numpy as np

BLOCK_N = 32  # key tile of the tiled kernels: quick.toml's n (150, 131, 96, 12, ...) leave partial tiles


def _logits(q: np.ndarray, k: np.ndarray, k_scale: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """float32 [m, n]: k_scale * sum_h w * relu(q . k), float32 throughout, NaN kept by relu."""
    dots = np.einsum("mhd,nd->mhn", q.astype(np.float32), k.astype(np.float32))
    heads = np.einsum("mh,mhn->mn", weights, np.maximum(dots, np.float32(0)))
    return (heads * np.asarray(k_scale, np.float32).reshape(1, -1)).astype(np.float32)


def _window(n: int, ks: np.ndarray, ke: np.ndarray, inclusive_end: bool = False) -> np.ndarray:
    j = np.arange(n)[None, :]
    end = ke[:, None] + (1 if inclusive_end else 0)
    return (j >= ks[:, None]) & (j < end)


# --- fn(bundle) -> logits ---------------------------------------------------------------------
def fp32_kernel(bundle):
    logits = _logits(bundle.q.decode(), bundle.k.decode(), bundle.k_scale, bundle.weights)
    return np.where(_window(bundle.n, bundle.ks, bundle.ke), logits, np.float32(-np.inf))


def bfloat16_kernel(bundle):
    """fp32_kernel's logits as bfloat16 bits (uint16), rounded to nearest even."""
    return _bfloat16_bits(fp32_kernel(bundle))


def bfloat16_truncating_kernel(bundle):
    """A planted bug: fp32_kernel's logits cut to bfloat16 by dropping the low 16 bits."""
    return (fp32_kernel(bundle).view(np.uint32) >> 16).astype(np.uint16)


def inclusive_end_kernel(bundle):
    """BUGCLASSES 11: the window's end read as inclusive (j <= ke)."""
    logits = _logits(bundle.q.decode(), bundle.k.decode(), bundle.k_scale, bundle.weights)
    return np.where(_window(bundle.n, bundle.ks, bundle.ke, inclusive_end=True), logits, np.float32(-np.inf))


def padded_kernel(bundle):
    """Returns [m, n + 37]: only the first n columns are the logits (a padded row stride)."""
    out = np.full((bundle.m, bundle.n + 37), np.float32(5.0))
    out[:, : bundle.n] = fp32_kernel(bundle)
    return out


# --- fn(bundle, out): writes into mqacheck's poisoned buffer -----------------------------------
def tiled_in_place(bundle, out):
    """Key tiles of BLOCK_N, every tile stored (-inf outside windows)."""
    _tiled(bundle, out, tiles=range(-(-bundle.n // BLOCK_N)))


def tail_dropped_in_place(bundle, out):
    """BUGCLASSES 16: the grid is n // BLOCK_N tiles, so the partial tail tile is never stored."""
    _tiled(bundle, out, tiles=range(bundle.n // BLOCK_N))


def _tiled(bundle, out, tiles) -> None:
    logits = fp32_kernel(bundle)
    for t in tiles:
        cols = slice(t * BLOCK_N, min((t + 1) * BLOCK_N, bundle.n))
        out[:, cols] = logits[:, cols]


# --- misbehaving kernels -----------------------------------------------------------------------
def noisy_kernel(bundle):
    """Prints from Python and writes to file descriptor 1 directly, as C extensions do."""
    print("a kernel's chatter on stdout")
    os.write(1, b"chatter written straight to fd 1\n")
    sys.stdout.write("more chatter\n")
    return fp32_kernel(bundle)


def failing_kernel(bundle):
    raise ValueError(f"head_dim {bundle.head_dim} is not supported by this kernel")


def wrong_shape_kernel(bundle):
    return fp32_kernel(bundle)[:, : bundle.n - 1]


def float64_kernel(bundle):
    return fp32_kernel(bundle).astype(np.float64)


def more_exact_than_declared(bundle):
    """float64 throughout, rounded to float32 once: nearly the exact answer, while a test declares a
    float32 accumulator (mqacheck's suspicion note)."""
    q, k = bundle.q.decode(np.float64), bundle.k.decode(np.float64)
    dots = np.einsum("mhd,nd->mhn", q, k)
    heads = np.einsum("mh,mhn->mn", np.asarray(bundle.weights, np.float64), np.maximum(dots, 0.0))
    logits = (heads * np.asarray(bundle.k_scale, np.float64).reshape(1, -1)).astype(np.float32)
    return np.where(_window(bundle.n, bundle.ks, bundle.ke), logits, np.float32(-np.inf))


def returns_from_in_place(bundle, out):
    return fp32_kernel(bundle)


# --- library conventions, NumPy behind the libraries' signatures ------------------------------
def deepgemm_fp8_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True, max_seqlen_k=0):
    """DeepGEMM's signature and output layout: a [m, n] view of a row-padded allocation
    (stride align(n + 256, 256)), -inf outside windows only when clean_logits."""
    k, k_scale = kv
    m, n = q.shape[0], k.shape[0]
    stride = -(-(n + 256) // 256) * 256
    storage = np.full((m, stride), np.float32(3.0))  # torch.empty: anything
    logits = _logits(q.decode(), k.decode(), k_scale, weights)
    inside = _window(n, cu_seq_len_k_start, cu_seq_len_k_end)
    view = storage[:, :n]
    view[inside] = logits[inside]
    if clean_logits:
        view[~inside] = -np.inf
    return view


def deepgemm_fp8_fp4_mqa_logits(q, kv, weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True,
                                max_seqlen_k=0, logits_dtype="float32", column_shift=0, bf16_truncates=False):
    """DeepGEMM 54e2261's fp8_fp4_mqa_logits, fp8 path (q_sf None): a view of an allocation whose row
    stride is 1024-byte aligned; max_seqlen_k > 0 gives [m, max_seqlen_k] with row i's key ks[i] + c
    at column c (never cleaned); logits_dtype "bfloat16" gives bfloat16 bits (uint16), rounded to
    nearest even. Planted bugs: ``column_shift``, relative column c holds key ks[i] + c + shift;
    ``bf16_truncates``, bfloat16 by dropping the low 16 bits instead of rounding."""
    (q_fp, q_sf), (k, kv_sf) = q, kv
    assert q_sf is None, "the stand-in computes the fp8 path only"
    assert max_seqlen_k == 0 or not clean_logits, "DeepGEMM asserts not clean_logits with max_seqlen_k > 0"
    m, n = q_fp.shape[0], k.shape[0]
    bf16 = {"float32": False, "bfloat16": True}[logits_dtype]
    per_row = 1024 // (2 if bf16 else 4)
    cols = n if max_seqlen_k == 0 else max_seqlen_k
    stride = -(-((n + 256) if max_seqlen_k == 0 else -(-max_seqlen_k // 256) * 256) // per_row) * per_row
    absolute = _logits(q_fp.decode(), k.decode(), kv_sf, weights)
    if bf16:
        absolute = (absolute.view(np.uint32) >> 16).astype(np.uint16) if bf16_truncates else _bfloat16_bits(absolute)
    storage = np.full((m, stride), 0x4040 if bf16 else 3.0, dtype=np.uint16 if bf16 else np.float32)  # torch.empty
    view = storage[:, :cols]
    ks, ke = np.asarray(cu_seq_len_k_start), np.asarray(cu_seq_len_k_end)
    if max_seqlen_k == 0:
        inside = _window(n, ks, ke)
        view[inside] = absolute[inside]
        if clean_logits:
            view[~inside] = 0xFF80 if bf16 else -np.inf
        return view
    for i in range(m):
        for c in range(cols):
            j = ks[i] + c + column_shift
            if max(ks[i], 0) <= j < min(ke[i], n):
                view[i, c] = absolute[i, j]
    return view


def _bfloat16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits (uint16), rounded to nearest even; NaN stays a quiet NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    rounded[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded


def aiter_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends):
    """AITER's signature: full -inf, windows stored; kv_scales [N] (any other shape is a bug here)."""
    if kv_scales.ndim != 1:
        raise ValueError(f"kv_scales has shape {kv_scales.shape}; AITER takes [N]")
    out = np.full((Q.shape[0], KV.shape[0]), -np.inf, dtype=np.float32)
    inside = _window(KV.shape[0], cu_starts, cu_ends)
    out[inside] = _logits(Q.decode(), KV.decode(), kv_scales, weights)[inside]
    return out


def vllm_fp8_mqa_logits_gfx942(q, k_fp8, kv_scales, weights, cu_starts, cu_ends):
    """vLLM's gfx942 signature: kv_scales arrive as [N, 1] and are flattened, as vLLM does."""
    if kv_scales.shape != (k_fp8.shape[0], 1):
        raise ValueError(f"kv_scales has shape {kv_scales.shape}; vLLM's caller passes [N, 1]")
    return aiter_fp8_mqa_logits(q, k_fp8, kv_scales.reshape(-1), weights, cu_starts, cu_ends)


def vllm_rocm_fp8_mqa_logits(q, kv, weights, cu_seqlen_ks, cu_seqlen_ke):
    """vLLM's ROCm dispatcher's signature: (k, k_scale [N, 1]) as one argument, [M, N] with -inf
    outside the windows."""
    k_fp8, k_scale = kv
    if k_scale.shape != (k_fp8.shape[0], 1):
        raise ValueError(f"k_scale has shape {k_scale.shape}; vLLM's indexer passes [N, 1]")
    return aiter_fp8_mqa_logits(q, k_fp8, k_scale.reshape(-1), weights, cu_seqlen_ks, cu_seqlen_ke)


def flydsl_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True, stream=None,
                          variant=None):
    """AITER's FlyDSL signature and output layout: an [M, N] view of an [M rounded up to 4,
    align(N, 256)] allocation, -inf outside the windows only when clean_logits (else what the
    allocation held)."""
    if kv_scales.ndim != 1:
        raise ValueError(f"kv_scales has shape {kv_scales.shape}; FlyDSL takes [N]")
    m, n = Q.shape[0], KV.shape[0]
    storage = np.full((-(-m // 4) * 4, -(-n // 256) * 256), np.float32(5.0))  # torch.empty: anything
    inside = _window(n, cu_starts, cu_ends)
    view = storage[:m, :n]
    view[inside] = _logits(Q.decode(), KV.decode(), kv_scales, weights)[inside]
    if clean_logits:
        view[~inside] = -np.inf
    return view


# --- paged decode: the cache read through the block table, written out here --------------------
def _paged_rows(q4, kv4, weights, context_lens, block_table, max_context, masked_end):
    """float32 [batch * next_n, max_context]: each request's keys gathered from the fused cache's
    pages (codes of slot s at s * D, its float32 scale at block_kv * D + 4 s), -inf outside each
    row's window [0, masked_end(L, t)). The cache's codes are decoded in q's format."""
    batch, next_n, heads, dim = q4.shape
    blocks, block_kv = kv4.shape[0], kv4.shape[1]
    pages = np.ascontiguousarray(kv4).reshape(blocks, block_kv * (dim + 4))  # the payload of each page
    out = np.full((batch * next_n, max_context), -np.inf, dtype=np.float32)
    lens = np.asarray(context_lens).reshape(batch, -1)
    for b in range(batch):
        ends = [min(max(masked_end(int(lens[b, min(t, lens.shape[1] - 1)]), t, next_n), 0), max_context)
                for t in range(next_n)]
        keys = max(ends)
        if keys == 0:
            continue
        j = np.arange(keys)
        page = pages[np.asarray(block_table)[b, j // block_kv]]
        slot = j % block_kv
        codes = page[np.arange(keys)[:, None], slot[:, None] * dim + np.arange(dim)[None, :]]
        scale_bytes = page[np.arange(keys)[:, None], block_kv * dim + 4 * slot[:, None] + np.arange(4)[None, :]]
        scales = np.ascontiguousarray(scale_bytes).view("<f4").reshape(keys)
        k = q4.format.decode(codes)
        logits = _logits(q4[b].decode(), k, scales, np.asarray(weights)[b * next_n:(b + 1) * next_n])
        for t in range(next_n):
            out[b * next_n + t, : ends[t]] = logits[t, : ends[t]]
    return out


def _rule(two_d):
    """DeepGEMM's windows: 2-D k < L[b, t]; 1-D k <= L - next_n + t."""
    return (lambda length, t, next_n: length) if two_d else (lambda length, t, next_n: length - next_n + t + 1)


def deepgemm_fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len,
                                  clean_logits=False):
    """DeepGEMM's signature and output: a view of a [B * next_n, align(max_context_len, 256)] allocation;
    outside the windows -inf only when clean_logits (else whatever the allocation held)."""
    if schedule_meta.ndim != 2 or schedule_meta.shape[1] != 2 or np.any(np.diff(schedule_meta[:, 0]) < 0):
        raise ValueError(f"schedule metadata of shape {schedule_meta.shape} is not [num_sms + 1, 2] in request order")
    batch, next_n = q.shape[:2]
    logits = _paged_rows(q, kv_cache, weights, context_lens, block_table, max_context_len,
                         _rule(np.asarray(context_lens).ndim == 2))
    storage = np.full((batch * next_n, -(-max_context_len // 256) * 256), np.float32(3.0))
    view = storage[:, :max_context_len]
    inside = np.isfinite(logits) | np.isnan(logits)
    view[inside] = logits[inside]
    if clean_logits:
        view[~inside] = -np.inf
    return view


def deepgemm_fp8_fp4_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule_meta, max_context_len,
                                      clean_logits=False, logits_dtype="float32", indices=None):
    """DeepGEMM's current paged signature: q as (fp8 codes, None), 2-D context lengths only (its
    asserts), float32 logits; the output as deepgemm_fp8_paged_mqa_logits's."""
    q_fp, q_sf = q
    if q_sf is not None or logits_dtype != "float32" or indices is not None:
        raise ValueError("this stand-in takes fp8 q (q_sf None), float32 logits and no indices")
    if np.asarray(context_lens).ndim != 2:
        raise ValueError(f"context_lens of shape {np.asarray(context_lens).shape}: DeepGEMM asserts context_lens.dim() == 2")
    return deepgemm_fp8_paged_mqa_logits(q_fp, kv_cache, weights, context_lens, block_table, schedule_meta,
                                         max_context_len, clean_logits)


def aiter_fp8_paged_mqa_logits(q_fp8, kv_cache, weights, out_logits, context_lens, kv_indices, max_model_len,
                               Preshuffle=False, KVBlockSize=1, ChunkK=256, **_):
    """AITER's: writes the windows into the caller's -inf buffer; 1-D context lengths only."""
    if Preshuffle or KVBlockSize != kv_cache.shape[1]:
        raise ValueError(f"KVBlockSize={KVBlockSize} must be the cache's block size {kv_cache.shape[1]} (no preshuffle)")
    if np.asarray(context_lens).ndim != 1:
        raise ValueError("AITER takes context_lens [batch]")
    logits = _paged_rows(q_fp8, kv_cache, weights, context_lens, kv_indices, max_model_len, _rule(False))
    inside = np.isfinite(logits) | np.isnan(logits)
    out_logits[inside] = logits[inside]
    return "a compile-cache key"


def aiter_paged_without_next_n(q_fp8, kv_cache, weights, out_logits, context_lens, kv_indices, max_model_len,
                               Preshuffle=False, KVBlockSize=1, **_):
    """ROCm/aiter#4290: rows masked k <= L - t instead of k <= L - next_n + t."""
    logits = _paged_rows(q_fp8, kv_cache, weights, context_lens, kv_indices, max_model_len,
                         lambda length, t, next_n: length - t + 1)
    inside = np.isfinite(logits) | np.isnan(logits)
    out_logits[inside] = logits[inside]


def paged_fp32_kernel(bundle):
    """fn(bundle) for paged bundles, through the package's gather_keys."""
    p = bundle.paged
    out = np.full((bundle.m, bundle.n), -np.inf, dtype=np.float32)
    ke = np.asarray(bundle.ke)
    for b in range(p.batch):
        rows = slice(b * p.next_n, (b + 1) * p.next_n)
        keys = int(ke[rows].max())
        if keys == 0:
            continue
        codes, scales = bundle.gather_keys(b, keys)
        logits = _logits(bundle.q[rows].decode(), codes.decode(), scales, np.asarray(bundle.weights)[rows])
        for i in range(b * p.next_n, (b + 1) * p.next_n):
            out[i, : ke[i]] = logits[i - b * p.next_n, : ke[i]]
    return out


def reference_copier(bundle):
    """A kernel that returns the answer it should compute: the attribute must not exist."""
    return np.asarray(bundle.reference, dtype=np.float32)


# --- top-k functions, in the conventions of mqacheck.conventions.topk ------------------------------
def _descending(values: np.ndarray, nan_lowest: bool = False) -> np.ndarray:
    """Positions of `values` (last axis) by value, largest first, NaN above +inf as torch.topk ranks
    it (below -inf with nan_lowest), ties to the lower position."""
    nan = np.isnan(values)
    finite_order = np.where(nan, -np.inf if nan_lowest else np.inf, values)
    # NaN sorts beside +inf (or -inf) by value, then above (or below) it by this second key.
    nan_key = np.where(nan, -1 if nan_lowest else 1, 0)
    return np.lexsort((np.arange(values.shape[-1]) * np.ones_like(nan_key), -nan_key, -finite_order), axis=-1)


def numpy_topk(x, k, dim=-1):
    """torch.topk(x, k, dim=-1) for a NumPy array: (values, indices), sorted descending."""
    assert dim == -1
    order = _descending(x)[:, :k]
    return np.take_along_axis(x, order, axis=-1), order


def numpy_topk_nan_lowest(x, k, dim=-1):
    """A top-k that ranks NaN below -inf: a NaN logit is dropped (vllm#49896's NaN rows)."""
    order = _descending(x, nan_lowest=True)[:, :k]
    return np.take_along_axis(x, order, axis=-1), order


def top_k_per_row_prefill(logits, ks, ke, indices, num_rows, stride0, stride1, k):
    """vLLM's top_k_per_row_prefill: row r's k largest of [ks, ke) (clamped to the keys), counted
    from ks, -1 padded."""
    del stride0, stride1  # NumPy arrays carry their strides
    for r in range(num_rows):
        indices[r, :] = -1
        chosen = _window_topk(logits, ks, ke, r, k)
        indices[r, :len(chosen)] = chosen - ks[r]


def top_k_per_row_prefill_unpadded(logits, ks, ke, indices, num_rows, stride0, stride1, k):
    """A planted bug: short windows leave the slots past them as the buffer held them (no -1)."""
    for r in range(num_rows):
        chosen = _window_topk(logits, ks, ke, r, k)
        indices[r, :len(chosen)] = chosen - ks[r]


def _window_topk(logits, ks, ke, r, k):
    """Row r's k largest keys of its window clamped to [0, n), as absolute keys."""
    lo, hi = max(int(ks[r]), 0), min(int(ke[r]), logits.shape[1])
    if hi <= lo:
        return np.zeros(0, dtype=np.int64)
    return _descending(logits[r, lo:hi][None, :])[0, :k] + lo


def top_k_per_row_decode(logits, next_n, seq_lens, indices, num_rows, stride0, stride1, k):
    """vLLM's top_k_per_row_decode: row r's window [0, seq_lens[r // next_n] - next_n + r % next_n + 1)."""
    for r in range(num_rows):
        end = int(seq_lens[r // next_n]) - next_n + r % next_n + 1
        chosen = _descending(logits[r, :max(end, 0)][None, :])[0, :k]
        indices[r, :] = -1
        indices[r, :len(chosen)] = chosen
