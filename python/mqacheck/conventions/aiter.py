"""AITER's Triton ``fp8_mqa_logits``.

Read at ROCm/aiter c87dcc8b963448a1824d504c943ba74ac1712907,
aiter/ops/triton/attention/fp8_mqa_logits.py (older releases: aiter/ops/triton/fp8_mqa_logits.py):

    logits = fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends)

    Q          float8 [M, H, D] (e4m3fnuz on gfx942, e4m3fn on gfx950); H and D powers of two
    KV         float8 [N, D]
    kv_scales  float32 [N]
    weights    float32 [M, H]
    cu_starts, cu_ends  int32 [M]
    clean_logits  (e4048607a5) True: -inf outside each row's window; False: those positions are left
               as the allocation held them (the case's clean_logits is passed where the function
               takes the keyword; an older AITER without it always cleans)
    returns    float32 [M, N], a view of an [M, align(N, 256)] allocation at e4048607a5 (contiguous
               before), filled with -inf before the kernel stores the windows when clean; the kernel
               multiplies by kv_scales before relu (tl.maximum: NaN becomes 0).
"""
from __future__ import annotations

from typing import Any, Callable

from .deepgemm import takes_clean_logits

LIBRARY = "AITER (Triton)"
SIGNATURE = "fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True)"
SOURCE = "ROCm/aiter@c87dcc8b and @e4048607a5 aiter/ops/triton/attention/fp8_mqa_logits.py"


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    kwargs = {"clean_logits": bundle.clean_logits} if takes_clean_logits(fn) else {}
    return fn(bundle.q, bundle.k, bundle.k_scale, bundle.weights, bundle.ks, bundle.ke, **kwargs)
