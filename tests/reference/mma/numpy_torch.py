"""The few torch calls that MMA-Sim's AMD MFMA model makes, over numpy (torch is not installed
here, and MMA-Sim uses it only as a container of values).

install() puts this module in sys.modules as `torch` before mmasim is imported. It covers what
mmasim/isa/common.py, mmasim/isa/amd.py, mmasim/simulator/amd.py and mmasim/simulator/arithmetic.py
reach on the CDNA3 fp8 path: dtypes as dictionary keys, zeros and tensor construction, indexing
and slicing, double(), products and sums, isnan/isinf/any, item(), numel(), shape and dtype.
Anything else raises AttributeError, so an MMA-Sim path this adapter does not cover fails loudly
instead of computing something else.

Values: an fp8 tensor holds its decoded values as float64 (exact), a float32 tensor float32 and a
float64 tensor float64. torch.tensor(x, dtype=float32) rounds a Python float to nearest even, as
torch's C++ cast does; that rounding is MMA-Sim's last step of every MFMA k-group.
"""

import sys
import types

import numpy as np


class dtype:
    def __init__(self, name, storage):
        self.name, self.storage = name, storage

    def __repr__(self):
        return f"torch.{self.name}"


_DTYPES = {
    "float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": None,
    "float8_e4m3fn": np.float64, "float8_e5m2": np.float64, "float8_e8m0fnu": np.float64,
    "float8_e4m3fnuz": np.float64, "float8_e5m2fnuz": np.float64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "int32": np.int32,
}


DTYPES = {name: dtype(name, storage) for name, storage in _DTYPES.items()}
float64 = DTYPES["float64"]


class Tensor:
    __slots__ = ("v", "dtype")

    def __init__(self, values, dt):
        self.v, self.dtype = values, dt

    # Construction and shape.
    @property
    def shape(self):
        return tuple(np.shape(self.v))

    def numel(self):
        return int(np.size(self.v))

    def cpu(self):
        return self

    def double(self):
        with np.errstate(invalid="ignore"):  # a signalling NaN C is quieted, as the host's cast does
            return Tensor(np.asarray(self.v, dtype=np.float64), float64)

    def item(self):
        assert np.size(self.v) == 1, "item() of a tensor with more than one element"
        return float(np.asarray(self.v).reshape(()))

    # Indexing: a full index gives a 0-d tensor, a slice a tensor view.
    def __getitem__(self, index):
        return Tensor(self.v[index], self.dtype)

    def __setitem__(self, index, value):
        assert isinstance(value, Tensor) and value.dtype is self.dtype, "setitem across dtypes"
        self.v[index] = value.v

    # Arithmetic (float64 operands only on MMA-Sim's AMD fp8 path).
    def _operand(self, other):
        return other.v if isinstance(other, Tensor) else other

    def __mul__(self, other):
        return Tensor(self.v * self._operand(other), self.dtype)

    def __add__(self, other):
        return Tensor(self.v + self._operand(other), self.dtype)

    def sum(self):
        return Tensor(np.sum(self.v), self.dtype)

    def any(self):
        return bool(np.any(self.v))

    def __bool__(self):
        return bool(self.v)

    def __ge__(self, other):
        return bool(self.v >= self._operand(other))

    def __le__(self, other):
        return bool(self.v <= self._operand(other))


def zeros(shape, dtype):
    return Tensor(np.zeros(shape, dtype=dtype.storage), dtype)


def tensor(value, dtype):
    # double -> float32 in one IEEE conversion: round to nearest even, overflow to infinity.
    with np.errstate(over="ignore"):
        return Tensor(np.asarray(value, dtype=dtype.storage), dtype)


def isnan(x):
    return Tensor(np.isnan(x.v), None)


def isinf(x):
    return Tensor(np.isinf(x.v), None)


def from_values(values, dt):
    """A tensor of dtype dt holding `values` (a numpy array already in dt's value set)."""
    return Tensor(np.asarray(values, dtype=dt.storage), dt)


def install():
    module = types.ModuleType("torch")
    module.__doc__ = __doc__
    for name, dt in DTYPES.items():
        setattr(module, name, dt)
    module.dtype, module.Tensor = dtype, Tensor
    module.zeros, module.tensor, module.isnan, module.isinf = zeros, tensor, isnan, isinf
    module.from_values = from_values
    sys.modules["torch"] = module
    return module
