"""torch where it is installed, NumPy everywhere: the few operations the package needs on either.

torch is optional (Debian 12 has no torch with fp8 dtypes); every function here works without it
and imports it only when it is asked to handle a tensor or a device.
"""
from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np


@functools.cache
def torch_module() -> Any:
    """The torch module, or None where it is not installed (or too old for fp8: < 2.1)."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    return torch if hasattr(torch, "float8_e4m3fn") else None


def require_torch(why: str) -> Any:
    torch = torch_module()
    if torch is None:
        raise RuntimeError(f"{why} needs torch >= 2.1 (fp8 dtypes), which is not installed here")
    return torch


def is_tensor(x: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor)


# Formats that widen to float32 without rounding: a kernel that writes them loses nothing by it.
_EXACT_IN_FLOAT32 = {"float16", "bfloat16", "float32"}


def logits_to_numpy(x: Any, what: str) -> np.ndarray:
    """A kernel's logits as a float32 NumPy array on the host.

    float16 and bfloat16 widen exactly; any other dtype (float64, integers) is refused rather
    than rounded, since the rounding would be ours, not the kernel's.
    """
    if is_tensor(x):
        name = str(x.dtype).removeprefix("torch.")
        if name not in _EXACT_IN_FLOAT32:
            raise TypeError(f"{what} is a {name} tensor; float32 logits are expected (float16 and bfloat16 "
                            "are widened exactly)")
        return x.detach().float().cpu().numpy()
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{what} is a {type(x).__name__}; a NumPy array or a torch tensor of float32 logits "
                        "is expected")
    if x.dtype.name not in _EXACT_IN_FLOAT32:
        raise TypeError(f"{what} has dtype {x.dtype}; float32 logits are expected (float16 and bfloat16 are "
                        "widened exactly)")
    return x.astype(np.float32, copy=False)


def bfloat16_bits(x: Any, what: str) -> Any:
    """bfloat16 logits as their bits, without rounding: a torch bfloat16 tensor on the host as it
    is; a NumPy array of ml_dtypes' bfloat16, NumPy's '<V2' (np.save of ml_dtypes) or uint16, in
    the machine's byte order, viewed as uint16 (no copy). Anything else is refused: under
    logits_dtype="bf16" the kernel's stored bits are what is judged."""
    if is_tensor(x):
        if str(x.dtype) != "torch.bfloat16":
            raise TypeError(f"{what} is a {str(x.dtype).removeprefix('torch.')} tensor; under logits_dtype='bf16' "
                            "bfloat16 logits are expected")
        return x.detach() if x.device.type == "cpu" else x.detach().cpu()
    if not isinstance(x, np.ndarray) or x.dtype.itemsize != 2 or x.dtype.name not in ("bfloat16", "void16", "uint16"):
        raise TypeError(f"{what} is {getattr(x, 'dtype', type(x).__name__)}; under logits_dtype='bf16' bfloat16 "
                        "logits (ml_dtypes' bfloat16, '<V2' or uint16 bits) are expected")
    if not x.dtype.isnative:
        raise TypeError(f"{what} has dtype {x.dtype.str}, not in this machine's byte order")
    return x.view(np.uint16)


def bfloat16_widened(bits: Any) -> np.ndarray:
    """bfloat16 logits (bfloat16_bits' forms) as float32 on the host: exact, each value kept."""
    if is_tensor(bits):
        return bits.detach().float().cpu().numpy()
    return (np.asarray(bits).view(np.uint16).astype(np.uint32) << 16).view(np.float32)


def logits_for_file(x: Any, what: str, bf16: bool = False) -> np.ndarray:
    """The array `mqacheck check --logits` reads: float32 (logits_to_numpy), or under
    logits_dtype="bf16" the uint16 bits (bfloat16_bits), C-contiguous."""
    if not bf16:
        return np.ascontiguousarray(logits_to_numpy(x, what))
    bits = bfloat16_bits(x, what)
    if is_tensor(bits):
        torch = require_torch("bfloat16 logits")
        return bits.contiguous().view(torch.int16).numpy().view(np.uint16)
    return np.ascontiguousarray(bits)


def synchronize(device: Any) -> None:
    """Waits for the device's queued work, so a timer around a launch measures the kernel."""
    if device is None:
        return
    torch = torch_module()
    if torch is not None and torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def default_device() -> str | None:
    """'cuda' where torch sees a CUDA (or ROCm) device, else None (NumPy arrays)."""
    torch = torch_module()
    return "cuda" if torch is not None and torch.cuda.is_available() else None
