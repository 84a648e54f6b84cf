"""NumPy twins of the torch reference styles (see the package's references/__init__.py): the same
roundings in the same places, on NumPy bundles (load_inputs(path) with device=None)."""
from __future__ import annotations

import numpy as np

from ..bundle import Bundle


def round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 -> nearest bfloat16 (ties to even), returned as float32; NaN stays NaN, overflow
    rounds to +-Inf as IEEE requires."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    nan = np.isnan(x)
    rounded[nan] = (bits[nan].astype(np.uint32) | 0x00400000) & 0xFFFF0000  # quiet, payload's top bits kept
    return rounded.view(np.float32)


def fp32_einsum(bundle: Bundle) -> np.ndarray:
    """The operation in float32 as reference/bounds/README.md writes it: float32 dots of the exact fp8 values, relu
    (NaN kept), float32 weighted head sum, times k_scale after it. Passes ``accumulate="fp32"``."""
    dots = np.einsum("mhd,nd->mhn", bundle.q_values, bundle.k_values)
    heads = np.einsum("mh,mhn->mn", bundle.weights, np.maximum(dots, np.float32(0)))
    return _masked(bundle, heads * bundle.k_scale[None, :])


def deepgemm_test(bundle: Bundle) -> np.ndarray:
    """DeepGEMM's ref_fp8_mqa_logits on dequantized inputs: kv = k * k_scale in float32, then
    score = einsum('mhd,nd->hmn') in float32, (relu(score) * weights^T).sum over heads."""
    kv = bundle.k_values * bundle.k_scale[:, None]
    score = np.einsum("mhd,nd->hmn", bundle.q_values, kv)
    return _masked(bundle, (np.maximum(score, np.float32(0)) * bundle.weights.T[:, :, None]).sum(axis=0))


def vllm_bf16(bundle: Bundle) -> np.ndarray:
    """vLLM's fp8_mqa_logits_torch: q and k to bfloat16 (exact for fp8), a bf16 einsum (float32
    sums rounded to bfloat16), .float() * k_scale, relu, weighted head sum in float32."""
    score = round_to_bfloat16(np.einsum("mhd,nd->hmn", bundle.q_values, bundle.k_values)) * bundle.k_scale
    return _masked(bundle, (np.maximum(score, np.float32(0)) * bundle.weights.T[:, :, None]).sum(axis=0))


def vllm_rocm_bf16(bundle: Bundle) -> np.ndarray:
    """vLLM's ROCm fp8_mqa_logits_torch: k = (k.float() * k_scale).to(bfloat16), q to bfloat16, a
    bf16 einsum, relu, weighted head sum in float32 (k_scale rounded into k before the dot)."""
    kv = round_to_bfloat16(bundle.k_values * bundle.k_scale[:, None])
    score = round_to_bfloat16(np.einsum("mhd,nd->hmn", bundle.q_values, kv))
    return _masked(bundle, (np.maximum(score, np.float32(0)) * bundle.weights.T[:, :, None]).sum(axis=0))


def _masked(bundle: Bundle, logits: np.ndarray) -> np.ndarray:
    return np.where(bundle.window_mask(), logits.astype(np.float32), np.float32(-np.inf))
