"""AITER's FlyDSL ``flydsl_fp8_mqa_logits``: the gfx942 (MI300) fp8 MQA-logits kernel written in FlyDSL.

Read at ROCm/aiter 60a81a84e6184b8e4027d184a228e69d01df2da5,
aiter/ops/flydsl/kernels/mqa_logits/fp8_mqa_logits.py:

    logits = flydsl_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True)

    Q          float8 e4m3fn or e4m3fnuz [M, H, D]; H and D powers of two (its asserts)
    KV         float8 e4m3fn or e4m3fnuz [N, D]
    kv_scales  float32 [N]
    weights    float32 [M, H]
    cu_starts, cu_ends  int32 [M]
    clean_logits  True: -inf outside each row's window; False: those positions are left as the
               allocation held them (the case's clean_logits is passed)
    returns    float32 [M, N], a view of an [M', align(N, 256)] allocation (M' = M rounded up to
               the rows a block owns), as AITER's Triton wrapper shapes its output

On gfx942 the fp8 matrix cores read e4m3fnuz. An e4m3fn operand is not converted: its bytes are
passed as they are (every e4m3fn byte but 0x80 reads as half its value in e4m3fnuz), the kernel
patches 0x80 (-0 in e4m3fn, NaN in e4m3fnuz) to +0, and kv_scales is multiplied by 2 per operand
so recast; relu is positive-homogeneous, so the logits are unchanged. mqacheck's conversion
profile ``flydsl`` is that reinterpretation, proved code by code (reference/fp8/profile); the
kernel multiplies by kv_scales before relu: judge it with ``--scale before-relu`` and, on an MI300,
``--accumulate gfx942-mfma``. No AMD GPU has run this convention here: it is tested with a NumPy
kernel behind the signature (python/tests).
"""
from __future__ import annotations

from typing import Any, Callable

from ..protocol import Unsupported
from .deepgemm import takes_clean_logits

LIBRARY = "AITER (FlyDSL)"
SIGNATURE = "flydsl_fp8_mqa_logits(Q, KV, kv_scales, weights, cu_starts, cu_ends, clean_logits=True)"
SOURCE = "ROCm/aiter@60a81a84 aiter/ops/flydsl/kernels/mqa_logits/fp8_mqa_logits.py"

FORMATS = ("e4m3fn", "e4m3fnuz")  # its assert on Q.dtype and KV.dtype


def why_unsupported(bundle: Any) -> str | None:
    """Why the FlyDSL wrapper refuses the bundle's case (its own asserts), or None."""
    for field in ("q_format", "k_format"):
        name = getattr(getattr(bundle, field), "name", None)
        if name not in FORMATS:
            return f"{field} {name}: {LIBRARY}'s flydsl_fp8_mqa_logits takes {field} in {{{', '.join(FORMATS)}}}"
    for field in ("heads", "head_dim"):
        value = int(getattr(bundle, field))
        if value & (value - 1):
            return f"{field} {value}: {LIBRARY}'s flydsl_fp8_mqa_logits takes a power of two"
    return None


def call(fn: Callable[..., Any], bundle: Any) -> Any:
    why = why_unsupported(bundle)
    if why:
        raise Unsupported(why)
    kwargs = {"clean_logits": bundle.clean_logits} if takes_clean_logits(fn) else {}
    return fn(bundle.q, bundle.k, bundle.k_scale, bundle.weights, bundle.ks, bundle.ke, **kwargs)
