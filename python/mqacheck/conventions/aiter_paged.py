"""AITER's Triton ``deepgemm_fp8_paged_mqa_logits``: the decode indexer on ROCm.

Read at ROCm/aiter 004ac5df aiter/ops/triton/attention/pa_mqa_logits.py, and the calls vLLM
(vllm/v1/attention/ops/rocm_aiter_mla_sparse.py) and SGLang make:

    out = torch.full((batch * next_n, max_model_len), float("-inf"), dtype=torch.float32)
    deepgemm_fp8_paged_mqa_logits(q_fp8, kv_cache, weights, out, context_lens, block_table, max_model_len,
                                  Preshuffle=False, KVBlockSize=block_kv)

    q_fp8          float8 [batch, next_n, heads, head_dim] (e4m3fnuz on gfx942, e4m3fn on gfx950)
    kv_cache       uint8 [num_blocks, block_kv, 1, head_dim + 4] (AITER slices the codes and views
                   the scales as float32); Preshuffle=False: the row-major layout of these bundles
    weights        float32 [batch * next_n, heads]
    out            float32 [batch * next_n, max_model_len], written in place (the return value is a
                   compile-cache key); -inf outside the windows comes from the caller's fill
    context_lens   int32 [batch]: the 1-D rule, row t sees k <= L - next_n + t (a case of 2-D
                   lengths [batch, next_n] is refused, Unsupported: the kernel would read them as
                   [batch])
    block_table    int32 [batch, max_blocks] (kv_indices)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..protocol import Unsupported

LIBRARY = "AITER (Triton, paged decode)"
SIGNATURE = ("deepgemm_fp8_paged_mqa_logits(q [B, next_n, H, D], kv_cache [blocks, block_kv, 1, D + 4], weights, "
             "out_logits, context_lens, kv_indices, max_model_len, Preshuffle=False, KVBlockSize=block_kv)")
SOURCE = "ROCm/aiter@004ac5df aiter/ops/triton/attention/pa_mqa_logits.py"
OPERATION = "paged"


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    p = bundle.paged
    if p.context_lens_2d:
        raise Unsupported("AITER's kernel takes context_lens [batch] (row t of a request sees its first "
                          "L - next_n + t + 1 keys); this case gives [batch, next_n]")
    q = bundle.q.reshape(p.batch, p.next_n, bundle.heads, bundle.head_dim)
    if bundle.device is None:
        out = np.full((bundle.m, bundle.n), -np.inf, dtype=np.float32)
    else:
        from ..tensors import require_torch
        torch = require_torch("the AITER paged convention")
        out = torch.full((bundle.m, bundle.n), float("-inf"), dtype=torch.float32, device=bundle.device)
    fn(q, bundle.kv_cache_view(), bundle.weights, out, bundle.context_lens, bundle.block_table, bundle.n,
       Preshuffle=False, KVBlockSize=p.block_kv)
    return out
