"""DeepGEMM's ``deep_gemm.fp8_mqa_logits`` (the "legacy" name, still exported in 2.8).

Read at deepseek-ai/DeepGEMM 0274ad7b911b99b4eb6f8d796403811cf1e18f3d, csrc/apis/attention.hpp
(``fp8_mqa_logits`` -> ``fp8_fp4_mqa_logits``, and its pybind registration) and
deep_gemm/__init__.py; the call as tests/test_attention.py makes it:

    logits = deep_gemm.fp8_mqa_logits(q, (kv, kv_scale), weights, cu_seq_len_k_start, cu_seq_len_k_end,
                                      clean_logits=True, max_seqlen_k=0)

    q         float8_e4m3fn [M, H, D], contiguous; sm90: H in {32, 64}, D in {32, 64, 128}
    kv        float8_e4m3fn [N, D], contiguous
    kv_scale  float32 [N], contiguous
    weights   float32 [M, H], stride(1) == 1
    ks, ke    int32 [M], contiguous
    returns   float32 [M, N]: a view of an [align(M, 128 / H), align(N + 256, 256)] allocation, so the
              row stride is padded (1024-byte aligned); max_seqlen_k > 0 (compressed rows, not
              clean) is not used here (the deepgemm-fp4-relative convention,
              conventions/deepgemm_fp4.py, calls fp8_fp4_mqa_logits with it).

vLLM's torch fallback ``fp8_mqa_logits_torch`` (vllm/v1/attention/ops/mqa_logits_fallback.py)
has the same signature, so this convention serves it too.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable

from ..protocol import Unsupported

LIBRARY = "DeepGEMM"
SIGNATURE = "fp8_mqa_logits(q, (kv, kv_scale), weights, cu_seq_len_k_start, cu_seq_len_k_end, clean_logits=True)"
SOURCE = "deepseek-ai/DeepGEMM@0274ad7b csrc/apis/attention.hpp, deep_gemm/__init__.py, tests/test_attention.py"


# What the library's kernel takes, per GPU architecture (the shapes above, from the same source):
# a case outside them is refused before the library is called, so that mqacheck skips it with
# the reason instead of reporting the library's assertion as the kernel's error.
# sm100 and sm103 (the same major: DeepGEMM's sm100 kernels): from its fp8_fp4_mqa_logits asserts at
# 54e2261, to which fp8_mqa_logits forwards (conventions/deepgemm_fp4.py).
_SM100_FP8 = {"heads": (8, 16, 32, 64), "head_dim": (32, 64, 128), "q_format": ("e4m3fn",), "k_format": ("e4m3fn",)}
LIMITS: dict[str, dict[str, tuple[int | str, ...]]] = {
    "sm90": {"heads": (32, 64), "head_dim": (32, 64, 128), "q_format": ("e4m3fn",), "k_format": ("e4m3fn",)},
    "sm100": _SM100_FP8,
    "sm103": _SM100_FP8,
}


def architecture(bundle: Any) -> str | None:
    """"sm90" for a bundle on a compute capability 9.0 device; None for a bundle on the host (NumPy,
    torch on the CPU), where no DeepGEMM kernel runs and a stand-in of it takes any shape."""
    device = getattr(bundle, "device", None)
    if device is None or getattr(device, "type", None) != "cuda":
        return None
    from ..tensors import require_torch
    major, minor = require_torch("DeepGEMM's architecture").cuda.get_device_capability(device)
    return f"sm{major}{minor}"


def outside(bundle: Any, limits: dict[str, tuple[int | str, ...]]) -> tuple[str, str] | None:
    """The bundle's first field outside a LIMITS row, as ("heads 8", "heads in {32, 64}"), or None.
    A format is compared by its name."""
    for field, accepted in limits.items():
        value = getattr(bundle, field)
        value = getattr(value, "name", value)
        if value not in accepted:
            return f"{field} {value}", f"{field} in {{{', '.join(map(str, accepted))}}}"
    return None


def why_unsupported(bundle: Any, arch: str | None) -> str | None:
    """Why DeepGEMM on ``arch`` does not take the bundle's case, or None."""
    found = outside(bundle, LIMITS.get(arch or "", {}))
    if found is None:
        return None
    value, accepted = found
    return f"{value}: {LIBRARY}'s fp8_mqa_logits on {arch} takes {accepted}"


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    why = why_unsupported(bundle, architecture(bundle))
    if why:
        raise Unsupported(why)
    kwargs = {"clean_logits": bundle.clean_logits} if takes_clean_logits(fn) else {}
    return fn(bundle.q, (bundle.k, bundle.k_scale), bundle.weights, bundle.ks, bundle.ke, **kwargs)


def takes_clean_logits(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pybind11 functions: DeepGEMM's own, which takes it
        return True
    return "clean_logits" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
