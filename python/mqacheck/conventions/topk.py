"""The second stage of an indexer: top-k functions over a logits kernel's output, each in its
library's call convention, returning int64 [m, k] indices as mqacheck judges them
(``mqacheck check --topk-indices``, ``run --kernel --topk-indices``; docs/protocol.md).

    convention     signature                                                        columns   order
    torch-topk     fn(logits, k, dim=-1) -> (values, indices)  (torch.topk)        relative  descending
    vllm-prefill   fn(logits, ks, ke, indices, num_rows, stride0, stride1, k)      relative  none promised
    vllm-decode    fn(logits, next_n, seq_lens, indices, num_rows, stride0, stride1, k)
                                                                                   absolute  none promised

Read at vllm-project/vllm, vllm/_custom_ops.py (``top_k_per_row_prefill`` and
``top_k_per_row_decode``, thin wrappers of ``torch.ops._C``; both write the caller's int32
``raw_topk_indices`` [num_rows, k] buffer) and their caller in the DeepSeek-V3.2 indexer
(``sparse_attn_indexer``: "It also produces 0-based local indices", i.e. relative to ks); vLLM's
torch fallback of the prefill one (``top_k_per_row_prefill`` in the reference backend) is
``logits.topk(min(k, n))[1] - ks``, with every index outside [0, ke - ks) replaced by -1: the
torch-topk convention below does exactly that around the function it is given. The decode kernel
takes windows [0, seq_len - next_n + t + 1): here next_n = 1 and seq_lens = ke, so a case whose
windows do not all start at 0 is refused (Unsupported).

Both vLLM kernels read row r's logits at every key of the window they are given, with no clamp to
the row: a case with a window reaching outside [0, n) (ks < 0 or ke > n; mqacheck's out-of-range
layouts) would make them read outside it, so it is refused (Unsupported) rather than called.
torch-topk ranks the row's n columns and clamps afterwards, so it takes every case. It ranks the
columns outside the windows too, as vLLM's fallback does: behind a logits kernel that leaves them
as they were (clean_logits=False, an in-place kernel's poison) it picks such columns, whose indices
become -1, judged topk-padding. That is what the pairing gives a consumer, so it is reported, not
masked here.

Every convention here takes logits in absolute columns (key j at column j): a logits convention
whose columns count from ks (deepgemm-fp4-relative*) is refused by the adapter.

torch.topk takes a tensor: with a NumPy bundle (the adapter's --device numpy) the logits are
handed over as a CPU tensor where torch is installed; where it is not, as the NumPy array, for a
function that takes one (a test double: torch's own topk cannot be loaded there).

Ranking: torch.topk ranks NaN above every number (as +inf and above), and mqacheck judges under
that rule. vLLM's radix kernels order the float bits, negatives flipped: a NaN without the sign bit
ranks above +inf there too, but a NaN with it ranks below -inf, so such a kernel drops a negative
NaN that torch.topk keeps (judged topk-inadmissible).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..protocol import Unsupported
from ..tensors import is_tensor, require_torch, torch_module

SOURCE = ("vllm-project/vllm vllm/_custom_ops.py (top_k_per_row_prefill, top_k_per_row_decode) and the "
          "DeepSeek-V3.2 sparse_attn_indexer; torch.topk")

# No kernel writes it: a slot still holding it was never written (judged topk-padding or
# topk-outside-window).
UNWRITTEN = -2


@dataclass(frozen=True)
class TopkConvention:
    name: str
    signature: str
    columns: str  # "absolute" or "relative": what `--topk-columns` to judge with
    sorted: bool  # descending order promised: `--topk-sorted`
    default_function: str  # the library's function, for --topk-function's default
    call: Callable[[Callable[..., Any], Any, Any, int], np.ndarray]

    def flags(self) -> list[str]:
        """The mqacheck flags that judge this convention's indices."""
        return ["--topk-indices", "--topk-columns", self.columns] + (["--topk-sorted"] if self.sorted else [])


def _on_device(logits: np.ndarray, bundle: Any) -> Any:
    """The logits where the bundle lives: NumPy for a host bundle, else a tensor on its device."""
    if bundle.device is None:
        return logits
    return require_torch("a device bundle").from_numpy(np.ascontiguousarray(logits)).to(bundle.device)


def _as_tensor(logits: np.ndarray, bundle: Any) -> Any:
    """torch.topk's input: the logits on the bundle's device; a CPU tensor for a NumPy bundle where
    torch is installed (NumPy where it is not: no torch function can be called there)."""
    if bundle.device is not None:
        return _on_device(logits, bundle)
    torch = torch_module()
    return logits if torch is None else torch.from_numpy(np.ascontiguousarray(logits))


def _host(x: Any) -> np.ndarray:
    return x.detach().cpu().numpy() if is_tensor(x) else np.asarray(x)


def _windows(bundle: Any) -> tuple[np.ndarray, np.ndarray]:
    return _host(bundle.ks).astype(np.int64), _host(bundle.ke).astype(np.int64)


def _refuse_windows_outside_the_row(bundle: Any, kernel: str) -> None:
    """Unsupported where a window reaches outside the row's n columns: the kernel would read there."""
    ks, ke = _windows(bundle)
    outside = (ks < 0) | (ke > bundle.n)
    if outside.any():
        r = int(np.argmax(outside))
        raise Unsupported(f"vLLM's {kernel} reads every key of [ks, ke) with no clamp to the row's {bundle.n} "
                          f"columns; this case's row {r} has the window [{int(ks[r])}, {int(ke[r])})")


def _buffer(bundle: Any, k: int) -> Any:
    """The int32 [m, k] indices buffer vLLM's callers allocate, filled with UNWRITTEN."""
    if bundle.device is None:
        return np.full((bundle.m, k), UNWRITTEN, dtype=np.int32)
    torch = require_torch("a device bundle")
    return torch.full((bundle.m, k), UNWRITTEN, dtype=torch.int32, device=bundle.device)


def _strides(x: Any) -> tuple[int, int]:
    if is_tensor(x):
        return int(x.stride(0)), int(x.stride(1))
    return x.strides[0] // x.itemsize, x.strides[1] // x.itemsize


def call_torch_topk(fn: Callable[..., Any], bundle: Any, logits: np.ndarray, k: int) -> np.ndarray:
    on_device = _as_tensor(logits[:, :bundle.n], bundle)
    taken = min(k, bundle.n)
    _, chosen = fn(on_device, taken, dim=-1)
    ks, ke = _windows(bundle)
    relative = _host(chosen).astype(np.int64) - ks[:, None]
    inside = (relative >= 0) & (relative < (ke - ks)[:, None])
    out = np.full((bundle.m, k), -1, dtype=np.int64)
    out[:, :taken] = np.where(inside, relative, -1)
    return out


def call_vllm_prefill(fn: Callable[..., Any], bundle: Any, logits: np.ndarray, k: int) -> np.ndarray:
    _refuse_windows_outside_the_row(bundle, "top_k_per_row_prefill")
    on_device = _on_device(logits, bundle)
    indices = _buffer(bundle, k)
    stride0, stride1 = _strides(on_device)
    fn(on_device, bundle.ks, bundle.ke, indices, bundle.m, stride0, stride1, k)
    return _host(indices).astype(np.int64)


def call_vllm_decode(fn: Callable[..., Any], bundle: Any, logits: np.ndarray, k: int) -> np.ndarray:
    ks, ke = _windows(bundle)
    if (ks != 0).any():
        raise Unsupported("vLLM's top_k_per_row_decode takes windows starting at key 0; this case's start past it")
    _refuse_windows_outside_the_row(bundle, "top_k_per_row_decode")
    on_device = _on_device(logits, bundle)
    indices = _buffer(bundle, k)
    stride0, stride1 = _strides(on_device)
    seq_lens = bundle.ke  # next_n = 1: row r's window is [0, seq_lens[r])
    fn(on_device, 1, seq_lens, indices, bundle.m, stride0, stride1, k)
    return _host(indices).astype(np.int64)


TOPK_CONVENTIONS: dict[str, TopkConvention] = {
    c.name: c
    for c in (
        TopkConvention("torch-topk", "torch.topk(logits, k, dim=-1) -> (values, indices), vLLM's fallback around it",
                       "relative", True, "torch:topk", call_torch_topk),
        TopkConvention("vllm-prefill", "top_k_per_row_prefill(logits, ks, ke, indices, num_rows, stride0, stride1, k)",
                       "relative", False, "vllm._custom_ops:top_k_per_row_prefill", call_vllm_prefill),
        TopkConvention("vllm-decode",
                       "top_k_per_row_decode(logits, next_n, seq_lens, indices, num_rows, stride0, stride1, k)",
                       "absolute", False, "vllm._custom_ops:top_k_per_row_decode", call_vllm_decode),
    )
}


def topk_convention_named(name: str) -> TopkConvention:
    try:
        return TOPK_CONVENTIONS[name]
    except KeyError:
        raise ValueError(f"top-k convention '{name}' is not known (accepted: {', '.join(TOPK_CONVENTIONS)})") from None
