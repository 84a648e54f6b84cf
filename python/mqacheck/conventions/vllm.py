"""vLLM's ``fp8_mqa_logits_gfx942`` (MI300X), a drop-in for AITER's Triton kernel.

Read at vllm-project/vllm 0f17ee061e413bf8ab7927f926f69cdff24dc63e,
vllm/v1/attention/ops/triton_fp8_mqa_logits.py:

    logits = fp8_mqa_logits_gfx942(q, k_fp8, kv_scales, weights, cu_starts, cu_ends)

    q          float8 [M, H, D]; H and D powers of two
    k_fp8      float8 [N, D]
    kv_scales  float32 [N] or [N, 1]; vLLM's caller passes [N, 1] (a float32 view of the cache's
               4 scale bytes per token), which the function flattens; so does this convention
    weights    float32 [M, H]
    cu_starts, cu_ends  int32 [M]
    returns    float32 [M, N], contiguous, -inf outside the windows (torch.full before the kernel)
"""
from __future__ import annotations

from typing import Any, Callable

LIBRARY = "vLLM (gfx942 Triton)"
SIGNATURE = "fp8_mqa_logits_gfx942(q, k_fp8, kv_scales [N, 1], weights, cu_starts, cu_ends)"
SOURCE = "vllm-project/vllm@0f17ee06 vllm/v1/attention/ops/triton_fp8_mqa_logits.py"


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    return fn(bundle.q, bundle.k, bundle.k_scale.reshape(-1, 1), bundle.weights, bundle.ks, bundle.ke)
