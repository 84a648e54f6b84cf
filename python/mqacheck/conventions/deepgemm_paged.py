"""DeepGEMM's ``deep_gemm.fp8_paged_mqa_logits``: the indexer at decode time.

Read at deepseek-ai/DeepGEMM 0274ad7b911b99b4eb6f8d796403811cf1e18f3d, csrc/apis/attention.hpp
(``fp8_paged_mqa_logits`` -> ``fp8_fp4_paged_mqa_logits``, ``get_paged_mqa_logits_metadata``, their
pybind names), 00b1d2db deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh
(``smxx_paged_mqa_logits_metadata``) and tests/test_attention.py (``test_paged_mqa_logits``):

    schedule = deep_gemm.get_paged_mqa_logits_metadata(context_lens, block_kv, num_sms)
    logits = deep_gemm.fp8_paged_mqa_logits(q, kv_cache, weights, context_lens, block_table, schedule,
                                            max_context_len, clean_logits=False)

    q             float8_e4m3fn [batch, next_n, heads, head_dim], contiguous
    kv_cache      uint8 [num_blocks, block_kv, 1, head_dim + 4], stride(1) = head_dim + 4; stride(0)
                  may exceed the payload (DeepGEMM reads it as the page stride)
    weights       float32 [batch * next_n, heads]
    context_lens  int32 [batch] or [batch, next_n] (DeepGEMM at 0274ad7b and 54e2261 takes only the 2-D
                  form: a 1-D case's lengths are given to it in the equivalent 2-D form)
    block_table   int32 [batch, max_blocks]
    schedule      int32 [num_sms + 1, 2]: where each SM's run of (request, kv split) tasks starts
    returns       float32 [batch * next_n, max_context_len]: a view of an allocation padded to
                  align(align(max_context_len, 256), 256); DeepGEMM at 0274ad7b asserts
                  clean_logits is False (positions past a context are left as they were: judge
                  such kernels with --mask dont-care or cases with clean_logits = false)

The schedule comes from DeepGEMM's own helper when the function is DeepGEMM's and the module has
it; otherwise from :func:`schedule_metadata`, the helper's algorithm (``smxx_paged_mqa_logits_metadata``)
written out, so a kernel behind DeepGEMM's signature gets the schedule DeepGEMM would give it.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import numpy as np

from .deepgemm import takes_clean_logits

LIBRARY = "DeepGEMM (paged decode)"
SIGNATURE = ("fp8_paged_mqa_logits(q [B, next_n, H, D], kv_cache [blocks, block_kv, 1, D + 4], weights, "
             "context_lens, block_table, schedule_metadata, max_context_len, clean_logits)")
SOURCE = ("deepseek-ai/DeepGEMM@0274ad7b csrc/apis/attention.hpp; @00b1d2db "
          "deep_gemm/include/deep_gemm/impls/sm90_fp8_paged_mqa_logits.cuh, tests/test_attention.py")
OPERATION = "paged"

# SPLIT_KV of the sm90/sm100 kernels: 4 math warpgroups of 64 keys each schedule 256 keys a task.
SPLIT_KV = 256
H200_SMS = 132


def schedule_metadata(context_lens: np.ndarray, num_sms: int, split_kv: int = SPLIT_KV) -> np.ndarray:
    """int32 [num_sms + 1, 2]: DeepGEMM's paged schedule. Request b has ceil(L_b / split_kv) tasks
    (L_b: its length, the last row's in the 2-D form); the tasks are split evenly, the first
    total % num_sms SMs taking one more, and row s holds the (request, task within it) where SM s
    starts (row num_sms: the end)."""
    lens = np.asarray(context_lens, dtype=np.int64)
    per_request = lens[:, -1] if lens.ndim == 2 else lens
    tasks = (per_request + split_kv - 1) // split_kv
    prefix = np.cumsum(tasks)
    total = int(prefix[-1]) if prefix.size else 0
    q, r = divmod(total, num_sms)
    out = np.zeros((num_sms + 1, 2), dtype=np.int32)
    for sm in range(num_sms + 1):
        start = sm * q + min(sm, r)
        request = int(np.searchsorted(prefix, start, side="right"))  # first request whose prefix passes start
        out[sm] = (request, start - (int(prefix[request - 1]) if request > 0 else 0))
    return out


def num_sms(device: Any) -> int:
    """The device's SM count (torch), MQACHECK_NUM_SMS, else the H200's 132."""
    if "MQACHECK_NUM_SMS" in os.environ:
        return int(os.environ["MQACHECK_NUM_SMS"])
    if device is not None:
        from ..tensors import require_torch
        torch = require_torch("the DeepGEMM paged convention")
        if torch.device(device).type == "cuda":
            return torch.cuda.get_device_properties(device).multi_processor_count
    return H200_SMS


def _library_helper(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    """DeepGEMM's get_paged_mqa_logits_metadata when fn is deep_gemm's own function."""
    deep_gemm = sys.modules.get("deep_gemm")
    if deep_gemm is None or getattr(deep_gemm, getattr(fn, "__name__", ""), None) is not fn:
        return None
    return getattr(deep_gemm, "get_paged_mqa_logits_metadata", None)


def two_d_context_lens(lens: Any, next_n: int) -> Any:
    """The 2-D form [batch, next_n] of 1-D context lengths, the same windows: DeepGEMM's 1-D rule
    lets token t of a request see keys k <= L - next_n + t, its 2-D rule keys k < L[b, t]
    (tests/test_attention.py's reference at 54e2261), so L[b, t] = L - next_n + 1 + t, at least 0.
    NumPy arrays and torch tensors alike."""
    offsets = np.arange(next_n, dtype=np.int32) - (next_n - 1)
    if isinstance(lens, np.ndarray):
        return np.maximum(lens[:, None] + offsets[None, :], 0).astype(np.int32)
    from ..tensors import require_torch
    torch = require_torch("the DeepGEMM paged convention")
    return (lens[:, None] + torch.from_numpy(offsets).to(lens.device)[None, :]).clamp(min=0).to(torch.int32)


def context_lens_for(fn: Callable[..., Any], bundle: Any) -> Any:
    """The bundle's context lengths as fn takes them: DeepGEMM's own function (54e2261 asserts
    context_lens.dim() == 2) gets the 2-D form; any other function the bundle's."""
    lens = bundle.context_lens
    if _library_helper(fn) is not None and lens.ndim == 1:
        return two_d_context_lens(lens, bundle.paged.next_n)
    return lens


def _schedule(fn: Callable[..., Any], bundle: Any, lens: Any) -> Any:
    helper = _library_helper(fn)
    if helper is not None:
        return helper(lens, bundle.paged.block_kv, num_sms(bundle.device))
    lens = bundle.context_lens if bundle.device is None else bundle.context_lens.cpu().numpy()
    table = schedule_metadata(lens, num_sms(bundle.device))
    if bundle.device is None:
        return table
    from ..tensors import require_torch
    return require_torch("the DeepGEMM paged convention").from_numpy(table).to(bundle.device)


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    p = bundle.paged
    q = bundle.q.reshape(p.batch, p.next_n, bundle.heads, bundle.head_dim)
    lens = context_lens_for(fn, bundle)
    # DeepGEMM cleans only rows of 1-D lengths (54e2261 asserts `not is_context_lens_2d` when
    # clean_logits): with 2-D lengths it leaves what lies past a context as it was, and such a
    # kernel is judged with --mask dont-care.
    clean = bundle.clean_logits and not (_library_helper(fn) is not None and lens.ndim == 2)
    kwargs = {"clean_logits": clean} if takes_clean_logits(fn) else {}
    return fn(q, bundle.kv_cache_view(), bundle.weights, lens, bundle.block_table, _schedule(fn, bundle, lens), bundle.n,
              **kwargs)


# DeepGEMM's current paged API, read at 54e2261 csrc/apis/attention.hpp (``fp8_fp4_paged_mqa_logits``
# and its pybind defaults; ``fp8_paged_mqa_logits`` forwards to it with (q, None) and float32):
#
#     logits = fp8_fp4_paged_mqa_logits((q, q_sf), kv_cache, weights, context_lens, block_table,
#                                       schedule_meta, max_context_len, clean_logits=False,
#                                       logits_dtype=torch.float32, indices=None)
#
# q_sf None selects fp8 (fp4 needs packed e2m1 codes and int32 block scales, which this package does
# not load: fp4 cases are answered unsupported, as by the prefill deepgemm-fp4 convention). Its
# asserts take only 2-D context lengths [batch, next_n] and, with them, clean_logits false: every
# function behind this signature gets the 2-D form, so its output is judged with --mask dont-care
# (or on cases with clean_logits = false). `indices` (varlen decode: sm100, next_n 1) is not passed.
# Its output is a view of an allocation whose row stride is 1024-byte aligned.
CURRENT_SIGNATURE = ("fp8_fp4_paged_mqa_logits((q, None), kv_cache, weights, context_lens [B, next_n], block_table, "
                     "schedule_meta, max_context_len, clean_logits=False, logits_dtype=float32)")
CURRENT_SOURCE = "deepseek-ai/DeepGEMM@54e2261 csrc/apis/attention.hpp (fp8_fp4_paged_mqa_logits, pybind defaults)"


def call_current(fn: Callable[..., Any], bundle: Any) -> Any:
    from ..protocol import Unsupported
    from . import deepgemm_fp4
    why = deepgemm_fp4.why_unsupported(bundle, deepgemm_fp4.architecture(bundle))
    if why:
        raise Unsupported(why.replace("fp8_fp4_mqa_logits", "fp8_fp4_paged_mqa_logits"))
    if deepgemm_fp4.precision(bundle) == "fp4":
        raise Unsupported("fp4 (e2m1fn) cases: the Python package does not load fp4 bundles yet, so there are no "
                          "packed codes and block scales to pass to fp8_fp4_paged_mqa_logits")
    p = bundle.paged
    q = bundle.q.reshape(p.batch, p.next_n, bundle.heads, bundle.head_dim)
    lens = bundle.context_lens if bundle.context_lens.ndim == 2 else two_d_context_lens(bundle.context_lens, p.next_n)
    return fn((q, None), bundle.kv_cache_view(), bundle.weights, lens, bundle.block_table, _schedule(fn, bundle, lens),
              bundle.n, clean_logits=False, logits_dtype=deepgemm_fp4.logits_dtype(bundle, False))
