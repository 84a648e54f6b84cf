"""vLLM's ROCm dispatcher ``rocm_fp8_mqa_logits``: the prefill indexer as vLLM's ROCm backend calls it.

Read at vllm-project/vllm 2d74e0fc4dc103b11c36546ae69184751cb36eb9,
vllm/v1/attention/ops/rocm_aiter_mla_sparse.py (``rocm_fp8_mqa_logits`` and its caller
``rocm_aiter_sparse_attn_indexer``):

    logits = rocm_fp8_mqa_logits(q, (k_fp8, k_scale), weights, cu_seqlen_ks, cu_seqlen_ke)

    q          float8 [M, H, D] (the platform's fp8: e4m3fnuz on gfx942, e4m3fn elsewhere)
    k_fp8      float8 [N, D]
    k_scale    float32 [N, 1]: the caller passes a float32 view of the cache's 4 scale bytes per
               token ([N, 4] uint8 viewed as float32), so does this convention
    weights    float32 [M, H]
    cu_seqlen_ks, cu_seqlen_ke  int32 [M]
    returns    float32 [M, N], -inf outside the windows

What it computes depends on the machine: with AITER enabled it calls AITER's Triton
``fp8_mqa_logits(q, k, k_scale, weights, ks, ke)`` (the ``aiter`` convention's kernel: fp8 dots,
k_scale before relu); otherwise its torch fallback ``fp8_mqa_logits_torch``, which rounds q and k to
bfloat16, takes a bfloat16 einsum (dots rounded to bfloat16), multiplies by k_scale, relu, and sums
the heads in float32. Judge it under the contract of the path it took: ``--scale before-relu`` with
the fp8 kernel's accumulation, or ``--accumulate bf16-dot --scale before-relu`` for the fallback
(``mqacheck.references.torch_styles.vllm_bf16`` is that fallback's arithmetic).
"""
from __future__ import annotations

from typing import Any, Callable

LIBRARY = "vLLM (ROCm dispatcher)"
SIGNATURE = "rocm_fp8_mqa_logits(q, (k_fp8, k_scale [N, 1]), weights, cu_seqlen_ks, cu_seqlen_ke)"
SOURCE = "vllm-project/vllm@2d74e0fc vllm/v1/attention/ops/rocm_aiter_mla_sparse.py"


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    return fn(bundle.q, (bundle.k, bundle.k_scale.reshape(-1, 1)), bundle.weights, bundle.ks, bundle.ke)
