"""One launch of a kernel function on a bundle: the one place that knows the two kernel signatures.

    fn(bundle) -> logits          returns float32 [m, n] or [m, s >= n] (NumPy array or tensor)
    fn(bundle, out) -> None       writes into ``out``, mqacheck's poisoned float32 [m, s] buffer
                                  (a NumPy array, or a tensor on the bundle's device)

A function that takes a parameter named ``out``, or two required positional parameters, is of the
second kind; every other of the first. The second is the one that lets mqacheck see what a kernel
never stored: whatever still holds the poison afterwards is ``unwritten``.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .bundle import Bundle
from .protocol import POISON_BITS
from .tensors import logits_to_numpy, require_torch, synchronize

KernelFn = Callable[..., Any]


@dataclass(frozen=True)
class Launch:
    logits: np.ndarray  # float32 [m, s], s >= n, on the host
    seconds: float  # around the call, the device synchronized before and after


def writes_in_place(fn: KernelFn) -> bool:
    """True for fn(bundle, out), False for fn(bundle) -> logits (module docstring)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # builtins and some extension functions have no signature
        return False
    if "out" in params:
        return True
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [p for p in params.values() if p.kind in positional and p.default is inspect.Parameter.empty]
    return len(required) >= 2


def poison(rows: int, cols: int) -> np.ndarray:
    """float32 [rows, cols] filled with mqacheck's poison (bits 0x7FC0DEAD)."""
    return np.full((rows, cols), POISON_BITS, dtype=np.uint32).view(np.float32)


def launch(fn: KernelFn, bundle: Bundle, out: np.ndarray | None = None, in_place: bool | None = None) -> Launch:
    """Calls ``fn`` once on ``bundle`` and returns its logits on the host.

    ``out`` is the poisoned buffer for an in-place kernel (default: poison [m, n]); ``in_place``
    overrides what the signature says. Raises TypeError/ValueError for logits of the wrong kind.
    """
    if in_place is None:
        in_place = writes_in_place(fn)
    device = bundle.device
    if in_place:
        host = poison(bundle.m, bundle.n) if out is None else out
        _check_shape(host, bundle, "the output buffer")
        buffer = host if device is None else require_torch("a device bundle").from_numpy(host).to(device)
        synchronize(device)
        start = time.perf_counter()
        returned = fn(bundle, buffer)
        synchronize(device)
        seconds = time.perf_counter() - start
        if returned is not None and returned is not buffer:
            raise TypeError(f"{_name(fn)}(bundle, out) returned a {type(returned).__name__}: an in-place kernel writes "
                            "into out and returns None (or out); a kernel that returns its logits takes bundle alone")
        logits = host if device is None else logits_to_numpy(buffer, "out")
    else:
        synchronize(device)
        start = time.perf_counter()
        returned = fn(bundle)
        synchronize(device)
        seconds = time.perf_counter() - start
        if returned is None:
            raise TypeError(f"{_name(fn)}(bundle) returned None; it must return the logits (or take (bundle, out) and "
                            "write into out)")
        logits = logits_to_numpy(returned, f"the logits {_name(fn)} returned")
    _check_shape(logits, bundle, f"the logits of {_name(fn)}")
    return Launch(logits, seconds)


def _check_shape(a: np.ndarray, bundle: Bundle, what: str) -> None:
    if a.ndim != 2 or a.shape[0] != bundle.m or a.shape[1] < bundle.n:
        raise ValueError(f"{what} have shape [{', '.join(map(str, a.shape))}]; expected [{bundle.m}, S] with "
                         f"S >= {bundle.n} (the case's m and n)")


def _name(fn: KernelFn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
