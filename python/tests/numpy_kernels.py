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
