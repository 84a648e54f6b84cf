"""Bundles (`mqacheck gen`): a case's inputs as NumPy arrays or torch tensors, checked against the
case they claim to be.

A bundle folder holds (cases/README.md, validator/bundle/bundle.hpp):

    case.toml      the resolved case: [suite] name and exactly one [[case]] with every key
    q.npy          uint8   [m, heads, head_dim]   fp8 codes in q_format
    k.npy          uint8   [n, head_dim]          fp8 codes in k_format
    k_scale.npy    float32 [n]
    weights.npy    float32 [m, heads]             q's per-token scale folded in
    ks.npy, ke.npy int32   [m]                    row i sees keys ks[i] <= j < ke[i]
    reference.npy  float32 [m, n]                 correctly rounded logits, -inf outside windows
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .formats import Format, FormatError, format_named
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


# The array files and their dtype; shapes come from the case (one table, as validator/bundle/files.hpp).
_ARRAYS: dict[str, np.dtype] = {
    "q": np.dtype(np.uint8),
    "k": np.dtype(np.uint8),
    "k_scale": np.dtype("<f4"),
    "weights": np.dtype("<f4"),
    "ks": np.dtype("<i4"),
    "ke": np.dtype("<i4"),
}
_CASE_KEYS = ("name", "m", "n", "heads", "head_dim", "q_format", "k_format", "clean_logits", "topk")


@dataclass(eq=False)
class Bundle:
    """One case's inputs.

    With ``device=None`` (NumPy): ``q`` and ``k`` are :class:`Fp8Codes` (uint8 codes with a
    ``.format``), the rest NumPy arrays. With a device: ``q`` and ``k`` are torch fp8 tensors
    (torch.float8_e4m3fn, ...) viewed from the codes, the rest torch tensors, all on the device.
    Either way ``q_codes``/``k_codes`` are the NumPy codes, ``q_values``/``k_values`` their exact
    float32 values, and ``reference`` the exact logits (NumPy, read when first used).
    """

    path: Path
    suite: str
    case: dict[str, Any]  # every key of case.toml's [[case]]
    device: Any
    q: Any
    k: Any
    k_scale: Any
    weights: Any
    ks: Any
    ke: Any
    q_codes: Fp8Codes
    k_codes: Fp8Codes
    _reference: np.ndarray | None = field(default=None, repr=False)

    # The case fields a kernel needs, by name.
    @property
    def name(self) -> str:
        return self.case["name"]

    @property
    def m(self) -> int:
        return self.case["m"]

    @property
    def n(self) -> int:
        return self.case["n"]

    @property
    def heads(self) -> int:
        return self.case["heads"]

    @property
    def head_dim(self) -> int:
        return self.case["head_dim"]

    @property
    def q_format(self) -> Format:
        return self.q_codes.format  # type: ignore[return-value]

    @property
    def k_format(self) -> Format:
        return self.k_codes.format  # type: ignore[return-value]

    @property
    def clean_logits(self) -> bool:
        return self.case["clean_logits"]

    @property
    def topk(self) -> int:
        return self.case["topk"]

    @property
    def q_values(self) -> np.ndarray:
        return self.q_codes.decode()

    @property
    def k_values(self) -> np.ndarray:
        return self.k_codes.decode()

    @property
    def reference(self) -> np.ndarray:
        """float32 [m, n]: the correctly rounded logits, -inf outside windows (memory-mapped)."""
        if self._reference is None:
            self._reference = _load_array(self.path, "reference", np.dtype("<f4"), (self.m, self.n), mmap=True)
        return self._reference

    def window_mask(self) -> np.ndarray:
        """bool [m, n]: True where ks[i] <= j < ke[i] (out-of-range windows clamp to [0, n))."""
        ks = np.asarray(self.ks if self.device is None else self.ks.cpu().numpy())
        ke = np.asarray(self.ke if self.device is None else self.ke.cpu().numpy())
        j = np.arange(self.n)[None, :]
        return (j >= ks[:, None]) & (j < ke[:, None])

    def __repr__(self) -> str:
        where = "numpy" if self.device is None else str(self.device)
        return (f"Bundle({str(self.path)!r}, case {self.name!r} of suite {self.suite!r}: m={self.m} n={self.n} "
                f"heads={self.heads} head_dim={self.head_dim} q={self.q_format} k={self.k_format} on {where})")


def load_bundle(path: str | os.PathLike[str], device: Any = None) -> Bundle:
    """Reads a bundle folder and checks every array's dtype and shape against its case.toml.

    ``device=None`` gives NumPy arrays; ``device="cuda"`` (or "cpu", a torch.device) gives torch
    tensors there, q and k with their fp8 dtype. Raises BundleError naming the file at fault.
    """
    root = Path(path)
    if not root.is_dir():
        raise BundleError(f"{root}: no such bundle folder (make one with `mqacheck gen --cases FILE --case NAME --out DIR`)")
    suite, case = _read_case(root / "case.toml")
    m, n, h, d = (case[k] for k in ("m", "n", "heads", "head_dim"))
    shapes = {"q": (m, h, d), "k": (n, d), "k_scale": (n,), "weights": (m, h), "ks": (m,), "ke": (m,)}
    arrays = {name: _load_array(root, name, dtype, shapes[name]) for name, dtype in _ARRAYS.items()}
    try:
        q_codes = Fp8Codes(arrays["q"], format_named(case["q_format"]))
        k_codes = Fp8Codes(arrays["k"], format_named(case["k_format"]))
    except FormatError as e:
        raise BundleError(f"{root / 'case.toml'}: {e}") from None
    if device is None:
        return Bundle(root, suite, case, None, q_codes, k_codes, arrays["k_scale"], arrays["weights"],
                      arrays["ks"], arrays["ke"], q_codes, k_codes)
    torch = require_torch("load_bundle(device=...)")
    dev = torch.device(device)

    def tensor(a: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(a)).to(dev)

    try:
        q = tensor(arrays["q"]).view(q_codes.format.torch_dtype())  # type: ignore[union-attr]
        k = tensor(arrays["k"]).view(k_codes.format.torch_dtype())  # type: ignore[union-attr]
    except FormatError as e:
        raise BundleError(f"{root}: {e}") from None
    return Bundle(root, suite, case, dev, q, k, tensor(arrays["k_scale"]), tensor(arrays["weights"]),
                  tensor(arrays["ks"]), tensor(arrays["ke"]), q_codes, k_codes)


def _read_case(file: Path) -> tuple[str, dict[str, Any]]:
    try:
        with open(file, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise BundleError(f"{file}: missing (every bundle holds the case it was generated from)") from None
    except tomllib.TOMLDecodeError as e:
        raise BundleError(f"{file}: not valid TOML: {e}") from None
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


def _load_array(root: Path, name: str, dtype: np.dtype, shape: tuple[int, ...], mmap: bool = False) -> np.ndarray:
    file = root / f"{name}.npy"
    try:
        a = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
    except FileNotFoundError:
        raise BundleError(f"{file}: missing") from None
    except (ValueError, OSError, EOFError) as e:
        raise BundleError(f"{file}: not a readable .npy file ({e})") from None
    if a.dtype != dtype or a.shape != shape:
        raise BundleError(f"{file}: expected {_describe(dtype, shape)} (from case.toml), found {_describe(a.dtype, a.shape)}")
    return a


def _describe(dtype: np.dtype, shape: tuple[int, ...]) -> str:
    return f"{np.dtype(dtype).name} [{', '.join(map(str, shape))}]"
