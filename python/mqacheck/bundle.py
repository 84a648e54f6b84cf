"""Bundles (`mqacheck gen`): a case's inputs as NumPy arrays or torch tensors, checked against the
case they claim to be.

A bundle folder holds (cases/README.md, validator/bundle/files.hpp):

    case.toml      the resolved case: [suite] name and exactly one [[case]] with every key
    q.npy          uint8   [m, heads, head_dim]   fp8 codes in q_format
    k.npy          uint8   [n, head_dim]          fp8 codes in k_format          (prefill cases)
    k_scale.npy    float32 [n]                                                    (prefill cases)
    kv_cache.npy   uint8   [num_blocks, page_bytes]   the paged fp8 cache           (paged cases)
    block_table.npy int32  [batch, max_blocks]                                    (paged cases)
    context_lens.npy int32 [batch] or [batch, next_n]                             (paged cases)
    weights.npy    float32 [m, heads]             q's per-token scale folded in
    ks.npy, ke.npy int32   [m]                    row i sees keys ks[i] <= j < ke[i]
    reference.npy  float32 [m, n]                 correctly rounded logits, -inf outside windows
                                                  (not in the folder a kernel under test is given)

A paged case (layout kind "paged") is DeepGEMM's fp8_paged_mqa_logits: m = batch x
next_n query rows (row b * next_n + t is request b's query t), n = max_context output columns, and
request b's key j in slot j % block_kv of page block_table[b, j // block_kv]: each page holds
block_kv x head_dim codes, then block_kv little-endian float32 scales, then padding.

What a kernel is given (``serve``, the conventions, the pytest plugin) is a :class:`Bundle`, the
inputs alone (:func:`load_inputs`): it has no ``reference``, so a wrapper that returns the wrong
tensor of a loaded bundle cannot return the answer by accident. :func:`load_bundle`, for a
person's own analysis, gives a :class:`ReferencedBundle`, which adds it.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .formats import Format, FormatError, format_named
from .suite import read_toml
from .tensors import require_torch


class BundleError(ValueError):
    """A bundle that is missing, malformed or disagrees with its case.toml; the message names the file."""


class Fp8Codes(np.ndarray):
    """uint8 fp8 codes that know their format: ``.format`` and ``.decode()``."""

    format: Format | None

    def __new__(cls, codes: np.ndarray, fmt: Format) -> "Fp8Codes":
        obj = np.asarray(codes, dtype=np.uint8).view(cls)
        obj.format = fmt
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.format = getattr(obj, "format", None)

    def decode(self, dtype: Any = np.float32) -> np.ndarray:
        """The exact values (float32 by default) as a plain NumPy array."""
        if self.format is None:
            raise FormatError("these codes have lost their format")
        return self.format.decode(self.view(np.ndarray), dtype)


# The array files and their dtype, by the cases that carry them; shapes come from the case (one
# table, as validator/bundle/files.hpp).
_ARRAYS: dict[str, np.dtype] = {
    "q": np.dtype(np.uint8),
    "k": np.dtype(np.uint8),
    "k_scale": np.dtype("<f4"),
    "weights": np.dtype("<f4"),
    "ks": np.dtype("<i4"),
    "ke": np.dtype("<i4"),
    "kv_cache": np.dtype(np.uint8),
    "block_table": np.dtype("<i4"),
    "context_lens": np.dtype("<i4"),
}
_PREFILL_ONLY = ("k", "k_scale")
_PAGED_ONLY = ("kv_cache", "block_table", "context_lens")
_CASE_KEYS = ("name", "m", "n", "heads", "head_dim", "q_format", "k_format", "clean_logits", "topk")
_PAGED_KEYS = ("next_n", "block_kv", "num_blocks", "page_bytes", "max_blocks", "context_lens_2d")


@dataclass(frozen=True)
class PagedLayout:
    """A paged case's geometry (case.toml's [case.layout], resolved)."""

    batch: int
    next_n: int
    block_kv: int
    num_blocks: int
    page_bytes: int
    max_blocks: int
    context_lens_2d: bool


def _case_key(key: str) -> Any:
    """A read-only attribute that is case.toml's ``key``: ``bundle.m`` is ``bundle.case["m"]``."""
    return property(lambda bundle: bundle.case[key], doc=f"case.toml's {key}")


@dataclass(eq=False)
class Bundle:
    """One case's inputs.

    With ``device=None`` (NumPy): ``q`` and ``k`` are :class:`Fp8Codes` (uint8 codes with a
    ``.format``), the rest NumPy arrays. With a device: ``q`` and ``k`` are torch fp8 tensors
    (torch.float8_e4m3fn, ...) viewed from the codes, the rest torch tensors, all on the device.
    Either way ``q_codes``/``k_codes`` are the NumPy codes and ``q_values``/``k_values`` their
    exact float32 values. No ``reference``: this is what a kernel under test is given
    (:class:`ReferencedBundle` adds it).
    """

    path: Path
    suite: str
    case: dict[str, Any]  # every key of case.toml's [[case]]
    device: Any
    q: Any
    k: Any  # None for a paged case: its keys are in kv_cache
    k_scale: Any
    weights: Any
    ks: Any
    ke: Any
    q_codes: Fp8Codes
    k_codes: Fp8Codes | None
    paged: PagedLayout | None = None
    kv_cache: Any = None       # uint8 [num_blocks, page_bytes] (NumPy or a tensor on the device)
    block_table: Any = None    # int32 [batch, max_blocks]
    context_lens: Any = None   # int32 [batch] or [batch, next_n]
    kv_cache_codes: np.ndarray | None = field(default=None, repr=False)  # the cache's bytes, NumPy

    # The case fields a kernel needs, by name (name a str, clean_logits a bool, the rest ints).
    name = _case_key("name")
    m = _case_key("m")
    n = _case_key("n")
    heads = _case_key("heads")
    head_dim = _case_key("head_dim")
    clean_logits = _case_key("clean_logits")
    topk = _case_key("topk")

    @property
    def q_format(self) -> Format:
        return self.q_codes.format  # type: ignore[return-value]

    @property
    def k_format(self) -> Format:
        return format_named(self.case["k_format"])

    @property
    def operation(self) -> str:
        """'prefill' (fp8_mqa_logits) or 'paged' (decode: fp8_paged_mqa_logits)."""
        return "prefill" if self.paged is None else "paged"

    @property
    def q_values(self) -> np.ndarray:
        return self.q_codes.decode()

    @property
    def k_values(self) -> np.ndarray:
        if self.k_codes is None:
            raise BundleError(f"{self.path}: case '{self.name}' is paged decode: its keys are in kv_cache "
                              "(gather_keys(request) reads a request's)")
        return self.k_codes.decode()

    def kv_cache_view(self) -> Any:
        """DeepGEMM's fused cache: uint8 [num_blocks, block_kv, 1, head_dim + 4] over the pages
        (stride(0) = page_bytes, stride(1) = head_dim + 4), on the bundle's device."""
        p = self._paged("kv_cache_view()")
        shape = (p.num_blocks, p.block_kv, 1, self.head_dim + 4)
        strides = (p.page_bytes, self.head_dim + 4, self.head_dim + 4, 1)
        if self.device is None:
            return np.lib.stride_tricks.as_strided(self.kv_cache, shape, strides, writeable=False)
        return self.kv_cache.as_strided(shape, strides)

    def gather_keys(self, request: int, count: int | None = None) -> tuple[Fp8Codes, np.ndarray]:
        """Request ``request``'s keys [0, count) (default: what its rows see) read through its block
        table: codes [count, head_dim] in k_format and float32 scales [count] (NumPy)."""
        p = self._paged("gather_keys()")
        lens = np.asarray(self.context_lens if self.device is None else self.context_lens.cpu().numpy())
        table = np.asarray(self.block_table if self.device is None else self.block_table.cpu().numpy())
        if count is None:
            count = int(lens.reshape(p.batch, -1)[request].max())
        d, cache = self.head_dim, self.kv_cache_codes
        j = np.arange(count)
        pages = table[request, j // p.block_kv].astype(np.int64) * p.page_bytes
        slots = j % p.block_kv
        codes = cache.reshape(-1)[(pages + slots * d)[:, None] + np.arange(d)[None, :]]
        scale_bytes = cache.reshape(-1)[(pages + p.block_kv * d + 4 * slots)[:, None] + np.arange(4)[None, :]]
        scales = np.ascontiguousarray(scale_bytes).view("<f4").reshape(count)
        return Fp8Codes(codes, self.k_format), scales.astype(np.float32)

    def _paged(self, what: str) -> PagedLayout:
        if self.paged is None:
            raise BundleError(f"{self.path}: {what} is for paged decode cases; case '{self.name}' is prefill")
        return self.paged

    def window_mask(self) -> np.ndarray:
        """bool [m, n]: True where ks[i] <= j < ke[i] (out-of-range windows clamp to [0, n))."""
        ks = np.asarray(self.ks if self.device is None else self.ks.cpu().numpy())
        ke = np.asarray(self.ke if self.device is None else self.ke.cpu().numpy())
        j = np.arange(self.n)[None, :]
        return (j >= ks[:, None]) & (j < ke[:, None])

    def __repr__(self) -> str:
        where = "numpy" if self.device is None else str(self.device)
        paged = "" if self.paged is None else f" paged batch={self.paged.batch} next_n={self.paged.next_n}"
        return (f"Bundle({str(self.path)!r}, case {self.name!r} of suite {self.suite!r}: m={self.m} n={self.n} "
                f"heads={self.heads} head_dim={self.head_dim} q={self.q_format} k={self.k_format}{paged} on {where})")


@dataclass(eq=False, repr=False)
class ReferencedBundle(Bundle):
    """A :class:`Bundle` with its exact ``reference``: :func:`load_bundle`'s, for analysis, never
    for a kernel under test."""

    _reference: np.ndarray | None = field(default=None, repr=False)

    @property
    def reference(self) -> np.ndarray:
        """float32 [m, n]: the correctly rounded logits, -inf outside windows (memory-mapped)."""
        if self._reference is None:
            self._reference = _load_array(self.path, "reference", np.dtype("<f4"), (self.m, self.n), mmap=True)
        return self._reference


def load_bundle(path: str | os.PathLike[str], device: Any = None) -> ReferencedBundle:
    """Reads a bundle folder and checks every array's dtype and shape against its case.toml; the
    result also has the exact ``reference`` (read when first used), for a person's own analysis.
    Never hand it to a kernel under test: :func:`load_inputs` is what a kernel gets.

    ``device=None`` gives NumPy arrays; ``device="cuda"`` (or "cpu", a torch.device) gives torch
    tensors there, q and k with their fp8 dtype. Raises BundleError naming the file at fault.
    """
    return _load(Path(path), device, ReferencedBundle)  # type: ignore[return-value]


def load_inputs(path: str | os.PathLike[str], device: Any = None) -> Bundle:
    """The case and its inputs as :func:`load_bundle` reads them, without the reference: what a
    kernel under test is given. The folder may lack reference.npy (``mqacheck run --kernel`` gives
    its adapter such a folder)."""
    return _load(Path(path), device, Bundle)


def _load(root: Path, device: Any, kind: type[Bundle]) -> Bundle:
    if not root.is_dir():
        raise BundleError(f"{root}: no such bundle folder (make one with `mqacheck gen --cases FILE --case NAME --out DIR`)")
    suite, case = _case_of(read_toml(root / "case.toml", BundleError, "missing (every bundle holds the case it was generated from)"),
                           root / "case.toml")
    paged = _paged_layout(root / "case.toml", case)
    shapes = _shapes(root / "case.toml", case, paged)
    arrays = {name: _load_array(root, name, _ARRAYS[name], shape) for name, shape in shapes.items()}
    return _assembled(root, suite, case, paged, arrays, device, kind)


def bundle_in_memory(name: str, case_toml: str, arrays: dict[str, np.ndarray], device: Any = None) -> Bundle:
    """A case's inputs handed over in memory (the in-process suite runner, mqacheck.suite_run): the
    resolved case.toml's text and the arrays a bundle folder holds, checked as load_inputs checks a
    folder's; ``name`` stands for the folder in messages."""
    root = Path(name)
    try:
        doc = tomllib.loads(case_toml)
    except tomllib.TOMLDecodeError as e:
        raise BundleError(f"{root / 'case.toml'}: not valid TOML: {e}") from None
    suite, case = _case_of(doc, root / "case.toml")
    paged = _paged_layout(root / "case.toml", case)
    shapes = _shapes(root / "case.toml", case, paged)
    for a, shape in shapes.items():
        given = arrays.get(a)
        if given is None or given.dtype != _ARRAYS[a] or given.shape != shape:
            found = "missing" if given is None else _describe(given.dtype, given.shape)
            raise BundleError(f"{root / (a + '.npy')}: expected {_describe(_ARRAYS[a], shape)} (from case.toml), found {found}")
    return _assembled(root, suite, case, paged, {a: arrays[a] for a in shapes}, device, Bundle)


def _shapes(file: Path, case: dict[str, Any], paged: PagedLayout | None) -> dict[str, tuple[int, ...]]:
    """The arrays a case carries and their shapes; BundleError for an fp4 case."""
    # fp4: packed codes and q_sf/k_sf block scales, which this package does not read yet.
    fp4 = [k for k in ("q_format", "k_format") if case[k] == "e2m1fn"]
    if fp4:
        raise BundleError(f"{file}: {' and '.join(fp4)} = e2m1fn: fp4 bundles (packed codes, q_sf.npy/k_sf.npy "
                          "block scales) are not loaded by the Python package yet (accepted: fp8 formats; `mqacheck "
                          "check` judges fp4 bundles)")
    m, n, h, d = (case[k] for k in ("m", "n", "heads", "head_dim"))
    shapes = {"q": (m, h, d), "k": (n, d), "k_scale": (n,), "weights": (m, h), "ks": (m,), "ke": (m,)}
    if paged is not None:
        shapes |= {"kv_cache": (paged.num_blocks, paged.page_bytes), "block_table": (paged.batch, paged.max_blocks),
                   "context_lens": (paged.batch, paged.next_n) if paged.context_lens_2d else (paged.batch,)}
    carried = [a for a in _ARRAYS if a not in (_PREFILL_ONLY if paged is not None else _PAGED_ONLY)]
    return {a: shapes[a] for a in carried}


def _assembled(root: Path, suite: str, case: dict[str, Any], paged: PagedLayout | None, arrays: dict[str, np.ndarray],
               device: Any, kind: type[Bundle]) -> Bundle:
    try:
        q_codes = Fp8Codes(arrays["q"], format_named(case["q_format"]))
        k_format = format_named(case["k_format"])
        k_codes = Fp8Codes(arrays["k"], k_format) if paged is None else None
    except FormatError as e:
        raise BundleError(f"{root / 'case.toml'}: {e}") from None
    cache = arrays.get("kv_cache")
    if device is None:
        return kind(root, suite, case, None, q_codes, k_codes, arrays.get("k_scale"), arrays["weights"],
                      arrays["ks"], arrays["ke"], q_codes, k_codes, paged, cache, arrays.get("block_table"),
                      arrays.get("context_lens"), cache)
    torch = require_torch("load_bundle(device=...)")
    dev = torch.device(device)

    def tensor(a: np.ndarray | None) -> Any:
        return None if a is None else torch.from_numpy(np.ascontiguousarray(a)).to(dev)

    try:
        q = tensor(arrays["q"]).view(q_codes.format.torch_dtype())  # type: ignore[union-attr]
        k = None if k_codes is None else tensor(arrays["k"]).view(k_codes.format.torch_dtype())  # type: ignore[union-attr]
        if paged is not None:
            k_format.torch_dtype()  # a format torch lacks is refused here as for prefill
    except FormatError as e:
        raise BundleError(f"{root}: {e}") from None
    return kind(root, suite, case, dev, q, k, tensor(arrays.get("k_scale")), tensor(arrays["weights"]),
                  tensor(arrays["ks"]), tensor(arrays["ke"]), q_codes, k_codes, paged, tensor(cache),
                  tensor(arrays.get("block_table")), tensor(arrays.get("context_lens")), cache)


def _case_of(doc: dict[str, Any], file: Path) -> tuple[str, dict[str, Any]]:
    """The suite's name and the one case of a bundle's case.toml document; BundleError naming ``file``."""
    cases = doc.get("case")
    if not isinstance(cases, list) or len(cases) != 1 or not isinstance(cases[0], dict):
        raise BundleError(f"{file}: expected exactly one [[case]] table (a bundle's case.toml is a one-case suite)")
    case = cases[0]
    suite = doc.get("suite", {}).get("name", "") if isinstance(doc.get("suite"), dict) else ""
    missing = [k for k in _CASE_KEYS if k not in case]
    if missing:
        raise BundleError(f"{file}: the case lacks {', '.join(missing)} (a bundle's case.toml has every key resolved)")
    for k in ("m", "n", "heads", "head_dim", "topk"):
        if not isinstance(case[k], int) or isinstance(case[k], bool) or case[k] < (0 if k in ("m", "n") else 1):
            raise BundleError(f"{file}: {k} = {case[k]!r}; expected a {'non-negative' if k in ('m', 'n') else 'positive'} integer")
    if not isinstance(case["clean_logits"], bool):
        raise BundleError(f"{file}: clean_logits = {case['clean_logits']!r}; expected true or false")
    return suite, case


def _paged_layout(file: Path, case: dict[str, Any]) -> PagedLayout | None:
    layout = case.get("layout")
    if not isinstance(layout, dict) or layout.get("kind") != "paged":
        return None
    missing = [k for k in _PAGED_KEYS if k not in layout]
    if missing:
        raise BundleError(f"{file}: the paged layout lacks {', '.join(missing)} (a bundle's case.toml has every key resolved)")
    for k in _PAGED_KEYS[:-1]:
        if not isinstance(layout[k], int) or isinstance(layout[k], bool) or layout[k] < 1:
            raise BundleError(f"{file}: layout.{k} = {layout[k]!r}; expected a positive integer")
    if case["m"] % layout["next_n"] != 0:
        raise BundleError(f"{file}: m = {case['m']} is not a multiple of layout.next_n = {layout['next_n']}")
    return PagedLayout(case["m"] // layout["next_n"], layout["next_n"], layout["block_kv"], layout["num_blocks"],
                       layout["page_bytes"], layout["max_blocks"], bool(layout["context_lens_2d"]))


def _load_array(root: Path, name: str, dtype: np.dtype, shape: tuple[int, ...], mmap: bool = False) -> np.ndarray:
    file = root / f"{name}.npy"
    try:
        # Mapped first, so that a file larger than case.toml says is refused before it is read.
        a = np.load(file, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise BundleError(f"{file}: missing") from None
    except (ValueError, OSError, EOFError) as e:
        raise BundleError(f"{file}: not a readable .npy file ({e})") from None
    if a.dtype != dtype or a.shape != shape:
        raise BundleError(f"{file}: expected {_describe(dtype, shape)} (from case.toml), found {_describe(a.dtype, a.shape)}")
    if mmap:
        return a
    try:
        return np.array(a)
    except OSError as e:  # a file cut short after its header: the read says so
        raise BundleError(f"{file}: not a readable .npy file ({e})") from None


def _describe(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{np.dtype(dtype).name} [{', '.join(map(str, shape))}]"
