"""DeepGEMM's current prefill function ``deep_gemm.fp8_fp4_mqa_logits``, which ``fp8_mqa_logits``
(conventions/deepgemm.py) now forwards to with q_sf None, max_seqlen_k 0 and float32 logits.

Read at deepseek-ai/DeepGEMM 54e2261, csrc/apis/attention.hpp (``fp8_fp4_mqa_logits`` and its
pybind registration: clean_logits=True, max_seqlen_k=0, logits_dtype=torch.float32 by default) and
tests/test_attention.py (``test_mqa_logits``):

    logits = deep_gemm.fp8_fp4_mqa_logits((q, q_sf), (kv, kv_sf), weights, cu_seq_len_k_start,
                                          cu_seq_len_k_end, clean_logits=..., max_seqlen_k=...,
                                          logits_dtype=torch.float32 or torch.bfloat16)

    fp8 (q_sf None)
      q         float8_e4m3fn [M, H, D], contiguous
      kv        float8_e4m3fn [N, D], contiguous
      kv_sf     float32 [N], contiguous: the per-key scale (the bundle's k_scale as it is)
    fp4 (q_sf a tensor; sm100 only)
      q         packed e2m1 [M, H, D / 2] (two codes a byte), contiguous
      q_sf      int32 [M, H]: packed ue8m0 block scales, one exponent byte per 32 elements
      kv        packed e2m1 [N, D / 2], contiguous
      kv_sf     int32 [N]: packed ue8m0 block scales, as q_sf
    weights     float32 [M, H], stride(1) == 1 (bfloat16 also on sm100, then only with bf16 logits)
    ks, ke      int32 [M], contiguous
    returns     logits_dtype [M, N] (max_seqlen_k == 0: key j at column j), or [M, max_seqlen_k]
                (max_seqlen_k > 0: row i's key ks[i] + c at column c, which the library allows
                only with clean_logits False); a view of an allocation whose row stride is
                1024-byte aligned.

The convention comes in four names, one per output form, because the output form is the caller's
choice and mqacheck must be told which one it judges (the contract flags):

    deepgemm-fp4                max_seqlen_k 0, float32     judge as it is
    deepgemm-fp4-relative       max_seqlen_k = longest      judge with --columns relative
    deepgemm-fp4-bf16           max_seqlen_k 0, bfloat16    judge with --logits-dtype bf16
    deepgemm-fp4-relative-bf16  both                        both flags

With relative columns the convention passes clean_logits=False whatever the case says (the
library asserts it), and mqacheck judges positions outside a window as don't-care there anyway.
max_seqlen_k is the longest window, ``max(min(ke, N) - ks)``, as DeepGEMM's test passes
``(ke - ks).max()``; at least 1, since 0 selects absolute columns.

fp4 cases: the Python package does not load fp4 bundles yet (bundle.py), so this convention has
nothing to convert from; it answers an fp4 case Unsupported rather than guess a layout.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..protocol import Unsupported
from .deepgemm import architecture, outside

LIBRARY = "DeepGEMM"
SIGNATURE = ("fp8_fp4_mqa_logits((q, None), (kv, kv_sf), weights, cu_seq_len_k_start, cu_seq_len_k_end, "
             "clean_logits=..., max_seqlen_k=..., logits_dtype=...)")
SOURCE = "deepseek-ai/DeepGEMM@54e2261 csrc/apis/attention.hpp, deep_gemm/__init__.py, tests/test_attention.py"

# What fp8_fp4_mqa_logits takes, by architecture family (DeepGEMM asserts on the arch major: 9 is
# sm90, 10 is sm100/sm103) and by precision (fp4 when q_sf is given), from its DG_HOST_ASSERTs at
# 54e2261. Any other architecture reaches DG_HOST_UNREACHABLE("Unsupported architecture"). A case
# outside these is refused before the library is called, so mqacheck skips it with the reason.
LIMITS: dict[str, dict[str, dict[str, tuple[int | str, ...]]]] = {
    "sm90": {
        "fp8": {"heads": (32, 64), "head_dim": (32, 64, 128), "q_format": ("e4m3fn",), "k_format": ("e4m3fn",)},
    },
    "sm100": {
        "fp8": {"heads": (8, 16, 32, 64), "head_dim": (32, 64, 128), "q_format": ("e4m3fn",),
                "k_format": ("e4m3fn",)},
        "fp4": {"heads": (8, 16, 32, 64), "head_dim": (64, 128), "q_format": ("e2m1fn",), "k_format": ("e2m1fn",)},
    },
}

FP4 = "e2m1fn"


def family(arch: str | None) -> str | None:
    """"sm90" or "sm100" for the architectures DeepGEMM dispatches on by major version (sm103 is
    sm100's), the architecture itself otherwise; None on the host."""
    if arch is None:
        return None
    major = arch.removeprefix("sm")[:-1]
    return {"9": "sm90", "10": "sm100"}.get(major, arch)


def precision(bundle: Any) -> str:
    formats = {getattr(bundle.q_format, "name", bundle.q_format), getattr(bundle.k_format, "name", bundle.k_format)}
    return "fp4" if FP4 in formats else "fp8"


def why_unsupported(bundle: Any, arch: str | None) -> str | None:
    """Why fp8_fp4_mqa_logits on ``arch`` does not take the bundle's case, or None (always None on
    the host, where a stand-in takes any shape)."""
    if arch is None:
        return None
    fam = family(arch)
    prec = precision(bundle)
    by_precision = LIMITS.get(fam or "")
    if by_precision is None:
        return f"{LIBRARY}'s fp8_fp4_mqa_logits runs on {', '.join(LIMITS)}, not {arch}"
    limits = by_precision.get(prec)
    if limits is None:
        return f"{prec}: {LIBRARY}'s fp8_fp4_mqa_logits on {fam} takes {', '.join(by_precision)} only"
    found = outside(bundle, limits)
    if found is None:
        return None
    value, accepted = found
    return f"{value}: {LIBRARY}'s fp8_fp4_mqa_logits ({prec}) on {fam} takes {accepted}"


def longest_window(bundle: Any) -> int:
    """max_seqlen_k for relative columns: enough columns for every row's keys ks[i] .. min(ke[i], N)
    - 1, and at least 1 (0 would select absolute columns)."""
    ks = np.asarray(bundle.ks if bundle.device is None else bundle.ks.cpu().numpy(), dtype=np.int64)
    ke = np.asarray(bundle.ke if bundle.device is None else bundle.ke.cpu().numpy(), dtype=np.int64)
    spans = np.minimum(ke, bundle.n) - ks
    return max(1, int(spans.max(initial=0)))


def logits_dtype(bundle: Any, bf16: bool) -> Any:
    """torch.float32 / torch.bfloat16 for a device bundle; the names "float32" / "bfloat16" on the
    host, where no torch need be installed and a NumPy stand-in takes the name."""
    name = "bfloat16" if bf16 else "float32"
    if bundle.device is None:
        return name
    from ..tensors import require_torch
    return getattr(require_torch("DeepGEMM's logits_dtype"), name)


def caller(relative: bool, bf16: bool) -> Callable[[Callable[..., Any], Any], Any]:
    """The call for one output form (module docstring)."""

    def call(fn: Callable[..., Any], bundle: Any) -> Any:
        why = why_unsupported(bundle, architecture(bundle))
        if why:
            raise Unsupported(why)
        if precision(bundle) == "fp4":
            raise Unsupported("fp4 (e2m1fn) cases: the Python package does not load fp4 bundles yet, so there are no "
                              "packed codes and block scales to pass to fp8_fp4_mqa_logits")
        max_seqlen_k = longest_window(bundle) if relative else 0
        clean_logits = False if relative else bool(bundle.clean_logits)
        return fn((bundle.q, None), (bundle.k, bundle.k_scale), bundle.weights, bundle.ks, bundle.ke,
                  clean_logits=clean_logits, max_seqlen_k=max_seqlen_k, logits_dtype=logits_dtype(bundle, bf16))

    return call


# name suffix -> (relative columns, bfloat16 logits), and the contract flags each needs
VARIANTS: dict[str, tuple[bool, bool]] = {"": (False, False), "-relative": (True, False), "-bf16": (False, True),
                                          "-relative-bf16": (True, True)}


def contract_for(relative: bool, bf16: bool) -> dict[str, str]:
    """The contract keys (check(..., **contract)) a variant's output must be judged with."""
    return ({"columns": "relative"} if relative else {}) | ({"logits_dtype": "bf16"} if bf16 else {})
