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
from typing import Any, Callable

import numpy as np

from .bundle import Bundle
from .protocol import POISON_BITS
from .tensors import bfloat16_bits, bfloat16_widened, is_tensor, logits_to_numpy, require_torch, synchronize

KernelFn = Callable[..., Any]


class Launch:
    """One launch's output and time.

    ``logits``: float32 [m, s], s >= n, on the host (a device output is copied at first use).
    ``on_device``: the float32 tensor the kernel left on the bundle's GPU, or None (a host bundle,
    or logits of another dtype): mqacheck.check judges it there, without the copy.
    ``bits``: under logits_dtype="bf16", the bfloat16 logits as the kernel returned them (on the
    host, copied: its next launch cannot change them), else None; ``logits`` is then their
    float32 widening.
    ``seconds``: around the call, the device synchronized before and after.
    """

    def __init__(self, logits: np.ndarray | None, seconds: float, on_device: Any = None, bits: Any = None) -> None:
        self._logits = logits
        self.seconds = seconds
        self.on_device = on_device
        self.bits = bits

    @property
    def logits(self) -> np.ndarray:
        if self._logits is None:
            self._logits = (logits_to_numpy(self.on_device, "the logits") if self.bits is None
                            else bfloat16_widened(self.bits))
        return self._logits

    def __repr__(self) -> str:
        where = "on the device" if self.on_device is not None else "on the host"
        return f"Launch({self.seconds * 1e3:.3f} ms, logits {where})"

    @property
    def output(self) -> Any:
        """What to judge: the bfloat16 bits where the launch kept them, else the tensor on the
        device where there is one, else the host logits."""
        if self.bits is not None:
            return self.bits
        return self.on_device if self.on_device is not None else self.logits


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


def launch(fn: KernelFn, bundle: Bundle, out: np.ndarray | None = None, in_place: bool | None = None,
           bf16: bool = False) -> Launch:
    """Calls ``fn`` once on ``bundle`` and returns its output: a GPU's float32 output kept there
    (``Launch.on_device``), any other as float32 logits on the host.

    ``out`` is the poisoned buffer for an in-place kernel (default: poison [m, n]): a NumPy array
    (copied to the bundle's device), or a tensor used where it lies; ``in_place``
    overrides what the signature says. ``bf16``: the contract's logits are bfloat16 (logits_dtype
    "bf16"): the kernel returns them (bfloat16_bits' forms), kept as their bits (``Launch.bits``).
    Raises TypeError/ValueError for logits of the wrong kind.
    """
    if in_place is None:
        in_place = writes_in_place(fn)
    if bf16 and in_place:
        raise TypeError(f"{_name(fn)} writes into out, mqacheck's float32 buffer; under logits_dtype='bf16' a kernel "
                        "returns its bfloat16 logits (fn(bundle) -> logits)")
    device = bundle.device
    if in_place:
        if is_tensor(out):  # poisoned where the kernel writes (mqacheck.suite_run): no copy
            host = None
            buffer = out
            _check_shape(buffer, bundle, "the output buffer")
        else:
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
        if host is not None and device is None:
            _check_shape(host, bundle, f"the logits of {_name(fn)}")
            return Launch(host, seconds)
        return _kept(buffer, seconds, bundle, f"the logits of {_name(fn)}")
    else:
        synchronize(device)
        start = time.perf_counter()
        returned = fn(bundle)
        synchronize(device)
        seconds = time.perf_counter() - start
        if returned is None:
            raise TypeError(f"{_name(fn)}(bundle) returned None; it must return the logits (or take (bundle, out) and "
                            "write into out)")
        if bf16:
            bits = bfloat16_bits(returned, f"the logits {_name(fn)} returned")
            _check_shape(bits, bundle, f"the logits of {_name(fn)}")
            return Launch(None, seconds, bits=bits.clone() if is_tensor(bits) else np.array(bits, copy=True))
        if device is not None and _on_gpu_float32(returned):
            # A copy on the device (about a millisecond at production size): a kernel that returns
            # the same buffer at its next launch must not overwrite this launch's output.
            return _kept(returned.detach().clone(), seconds, bundle, f"the logits of {_name(fn)}")
        logits = logits_to_numpy(returned, f"the logits {_name(fn)} returned")
    _check_shape(logits, bundle, f"the logits of {_name(fn)}")
    return Launch(logits, seconds)


def _on_gpu_float32(x: Any) -> bool:
    return is_tensor(x) and x.device.type == "cuda" and str(x.dtype) == "torch.float32"


def _kept(output: Any, seconds: float, bundle: Bundle, what: str) -> Launch:
    """A device output: kept there where it is float32 on a GPU, else brought to the host."""
    if not _on_gpu_float32(output):
        logits = logits_to_numpy(output, what)
        _check_shape(logits, bundle, what)
        return Launch(logits, seconds)
    _check_shape(output, bundle, what)
    return Launch(None, seconds, on_device=output.detach())


def _check_shape(a: Any, bundle: Bundle, what: str) -> None:
    if a.ndim != 2 or a.shape[0] != bundle.m or a.shape[1] < bundle.n:
        raise ValueError(f"{what} have shape [{', '.join(map(str, a.shape))}]; expected [{bundle.m}, S] with "
                         f"S >= {bundle.n} (the case's m and n)")


def _name(fn: KernelFn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
