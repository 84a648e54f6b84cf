"""Planted bugs in what a real library computes: each wraps the library's function (DeepGEMM's
``fp8_mqa_logits`` signature, the `deepgemm` convention of python/mqacheck/conventions) and changes
one input the way a real bug would, then calls the library's own kernel. mqacheck must catch each
with its class (ci/real_libraries.sh gives the class as --must-produce):

    dropped_head      the last head's weight read as 0 (a head loop one short)       -> error-bound
    weights_off       weights scaled by 1 + 2^-10 (a dequantisation off by an ulp)   -> error-bound
    k_scale_bf16      k_scale rounded to bfloat16 (a scale kept in the wrong dtype)  -> error-bound
    inclusive_end     each row's window end read as inclusive (ke + 1, within N)    -> mask-shift

    python3 -m mqacheck.adapter --convention deepgemm --device cuda \\
        --function tests/gpu/real_libraries/planted.py:dropped_head
"""
from __future__ import annotations

from typing import Any

import deep_gemm  # the library under test, importable from its source folder (ci/real_libraries.sh)


def _library(q: Any, kv: Any, weights: Any, ks: Any, ke: Any, **kwargs: Any) -> Any:
    return deep_gemm.fp8_mqa_logits(q, kv, weights, ks, ke, **kwargs)


def dropped_head(q: Any, kv: Any, weights: Any, ks: Any, ke: Any, **kwargs: Any) -> Any:
    w = weights.clone()
    w[:, -1] = 0
    return _library(q, kv, w, ks, ke, **kwargs)


def weights_off(q: Any, kv: Any, weights: Any, ks: Any, ke: Any, **kwargs: Any) -> Any:
    return _library(q, kv, weights * (1 + 2.0 ** -10), ks, ke, **kwargs)


def k_scale_bf16(q: Any, kv: Any, weights: Any, ks: Any, ke: Any, **kwargs: Any) -> Any:
    k, scale = kv
    import torch
    return _library(q, (k, scale.to(torch.bfloat16).to(torch.float32)), weights, ks, ke, **kwargs)


def inclusive_end(q: Any, kv: Any, weights: Any, ks: Any, ke: Any, **kwargs: Any) -> Any:
    n = kv[0].shape[0]
    return _library(q, kv, weights, ks, (ke + 1).clamp(max=n), **kwargs)
