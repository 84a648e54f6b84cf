"""The fp8 formats of a bundle: what each of the 256 codes means, and which torch / ml_dtypes dtype
holds it.

One rule decodes every format from its traits (exponent and mantissa bits, bias, and which codes
are NaN or Inf), in the manner of ml_dtypes' float8.h: a new format is a new row of ``FORMATS``.
The values are exact: every fp8 value is an integer times a power of two that float32 holds.

    e4m3fn       bias 7,  no Inf, NaN = S.1111.111         max 448 = 1.75 * 2^8      (OCP)
    e4m3fnuz     bias 8,  no Inf, NaN = 0x80 (no -0)       max 240 = 1.875 * 2^7     (AMD gfx942)
    e5m2         bias 15, IEEE:   S.11111.00 = Inf, S.11111.xx = NaN, max 57344     (OCP)
    e5m2fnuz     bias 16, no Inf, NaN = 0x80 (no -0)       max 57344 = 1.75 * 2^15
    e4m3b11fnuz  bias 11, no Inf, NaN = 0x80 (no -0)       max 30 = 1.875 * 2^4      (Graphcore)
"""
from __future__ import annotations

import enum
import importlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Specials(enum.Enum):
    """Where a format keeps NaN and Inf."""

    FN = "fn"  # finite only; the all-ones exponent and mantissa is NaN, the rest are numbers
    FNUZ = "fnuz"  # finite only, unsigned zero; 0x80 (negative zero's code) is the one NaN
    IEEE = "ieee"  # the all-ones exponent holds +-Inf (mantissa 0) and NaN (otherwise)


@dataclass(frozen=True)
class Format:
    """One fp8 format: its traits, its decode table, and the dtypes that hold it elsewhere."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    specials: Specials
    torch_dtype_name: str | None  # attribute of torch; None: torch has no such dtype
    ml_dtypes_name: str
    table: np.ndarray = field(init=False, repr=False, compare=False)  # float64 [256]

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", _decode_table(self))

    def decode(self, codes: Any, dtype: Any = np.float32) -> np.ndarray:
        """The values of ``codes`` (uint8 array-like) as ``dtype``; exact in float32 and float64."""
        values = self.table[np.asarray(codes, dtype=np.uint8)]
        return values.astype(dtype, copy=False)

    @property
    def max(self) -> float:
        """The largest finite value."""
        return float(np.nanmax(np.where(np.isinf(self.table), np.nan, self.table)))

    def torch_dtype(self) -> Any:
        """The torch dtype viewing these codes; raises FormatError where torch has none."""
        torch = _import("torch")
        if torch is None:
            raise FormatError(f"{self.name}: torch is not installed (load the bundle with device=None for NumPy arrays)")
        if self.torch_dtype_name is None or not hasattr(torch, self.torch_dtype_name):
            raise FormatError(f"{self.name}: torch {torch.__version__} has no dtype for it "
                              "(load the bundle with device=None for NumPy arrays)")
        return getattr(torch, self.torch_dtype_name)

    def ml_dtype(self) -> np.dtype | None:
        """The ml_dtypes NumPy dtype of this format, or None where ml_dtypes is not installed."""
        ml_dtypes = _import("ml_dtypes")
        if ml_dtypes is None or not hasattr(ml_dtypes, self.ml_dtypes_name):
            return None
        return np.dtype(getattr(ml_dtypes, self.ml_dtypes_name))

    def __str__(self) -> str:
        return self.name


class FormatError(ValueError):
    """A format that is not known, or that a library cannot hold."""


def _decode_table(f: Format) -> np.ndarray:
    codes = np.arange(256, dtype=np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1)
    mantissa = codes & ((1 << f.mantissa_bits) - 1)
    # Subnormals (exponent field 0): mantissa * 2^(1 - bias - mantissa_bits); normals carry the
    # implicit leading one: (2^mantissa_bits + mantissa) * 2^(exponent - bias - mantissa_bits).
    significand = np.where(exponent == 0, mantissa, mantissa + (1 << f.mantissa_bits)).astype(np.float64)
    scale = np.ldexp(1.0, (np.maximum(exponent, 1) - f.bias - f.mantissa_bits).astype(np.int64))
    values = sign * significand * scale
    top = (1 << f.exponent_bits) - 1
    if f.specials is Specials.FN:
        values[(codes & 0x7F) == 0x7F] = np.nan
    elif f.specials is Specials.FNUZ:
        values[0x80] = np.nan
    else:
        values[(exponent == top) & (mantissa == 0)] = sign[(exponent == top) & (mantissa == 0)] * np.inf
        values[(exponent == top) & (mantissa != 0)] = np.nan
    values.setflags(write=False)
    return values


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("e4m3fn", 4, 3, 7, Specials.FN, "float8_e4m3fn", "float8_e4m3fn"),
        Format("e4m3fnuz", 4, 3, 8, Specials.FNUZ, "float8_e4m3fnuz", "float8_e4m3fnuz"),
        Format("e5m2", 5, 2, 15, Specials.IEEE, "float8_e5m2", "float8_e5m2"),
        Format("e5m2fnuz", 5, 2, 16, Specials.FNUZ, "float8_e5m2fnuz", "float8_e5m2fnuz"),
        Format("e4m3b11fnuz", 4, 3, 11, Specials.FNUZ, None, "float8_e4m3b11fnuz"),
    )
}


def format_named(name: str) -> Format:
    """The format called ``name`` (as case.toml spells it); FormatError names the accepted ones."""
    try:
        return FORMATS[name]
    except KeyError:
        raise FormatError(f"fp8 format '{name}' is not known (accepted: {', '.join(FORMATS)})") from None


def _import(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
