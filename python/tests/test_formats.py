"""fp8 decode tables: hand-checked values from the format definitions, and all 256 codes of every
format against `mqacheck fp8 table` (the C++ implementation) and ml_dtypes where installed."""
import math
import subprocess

import numpy as np
import pytest

from mqacheck.formats import FORMATS, FormatError, format_named

NAN = float("nan")


@pytest.mark.parametrize("fmt, code, value", [
    ("e4m3fn", 0x7E, 448.0), ("e4m3fn", 0x7F, NAN), ("e4m3fn", 0xFF, NAN), ("e4m3fn", 0x01, 2.0**-9),
    ("e4m3fn", 0x08, 2.0**-6), ("e4m3fn", 0x38, 1.0), ("e4m3fn", 0x80, -0.0), ("e4m3fn", 0xFE, -448.0),
    ("e4m3fnuz", 0x7F, 240.0), ("e4m3fnuz", 0x80, NAN), ("e4m3fnuz", 0x01, 2.0**-10), ("e4m3fnuz", 0x40, 1.0),
    ("e4m3fnuz", 0xFF, -240.0),
    ("e5m2", 0x7B, 57344.0), ("e5m2", 0x7C, math.inf), ("e5m2", 0xFC, -math.inf), ("e5m2", 0x7D, NAN),
    ("e5m2", 0x01, 2.0**-16), ("e5m2", 0x3C, 1.0), ("e5m2", 0x80, -0.0),
    ("e5m2fnuz", 0x7F, 57344.0), ("e5m2fnuz", 0x80, NAN), ("e5m2fnuz", 0x01, 2.0**-17), ("e5m2fnuz", 0x40, 1.0),
    ("e4m3b11fnuz", 0x7F, 30.0), ("e4m3b11fnuz", 0x01, 2.0**-13), ("e4m3b11fnuz", 0x58, 1.0),
    ("e4m3b11fnuz", 0x80, NAN),
])
def test_hand_checked_values(fmt, code, value):
    got = format_named(fmt).table[code]
    if math.isnan(value):
        assert math.isnan(got)
    else:
        assert got == value and math.copysign(1, got) == math.copysign(1, value)


@pytest.mark.parametrize("fmt, largest", [("e4m3fn", 448), ("e4m3fnuz", 240), ("e5m2", 57344),
                                          ("e5m2fnuz", 57344), ("e4m3b11fnuz", 30)])
def test_largest_finite(fmt, largest):
    assert format_named(fmt).max == largest


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_code_matches_the_binary(fmt, binary):
    done = subprocess.run([binary, "fp8", "table", "--format", fmt], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    theirs = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if fields and fields[0].startswith("0x"):
            theirs[int(fields[0], 16)] = float(fields[2])  # code, bits, value, class
    assert sorted(theirs) == list(range(256)), done.stdout[:500]
    ours = format_named(fmt).table
    for code, value in theirs.items():
        assert (math.isnan(value) and math.isnan(ours[code])) or (
            value == ours[code] and math.copysign(1, value) == math.copysign(1, ours[code])), hex(code)


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_every_code_matches_ml_dtypes(fmt):
    ml_dtype = format_named(fmt).ml_dtype()
    if ml_dtype is None:
        pytest.skip("ml_dtypes is not installed here")
    theirs = np.arange(256, dtype=np.uint8).view(ml_dtype).astype(np.float64)
    np.testing.assert_array_equal(theirs, format_named(fmt).table)


def test_decode_is_exact_float32():
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    for f in FORMATS.values():
        values = f.decode(codes)
        assert values.dtype == np.float32 and values.shape == (16, 16)
        np.testing.assert_array_equal(values.astype(np.float64).ravel(), f.table)


def test_unknown_format_names_the_accepted():
    with pytest.raises(FormatError, match="e4m3fz.*accepted: e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e4m3b11fnuz"):
        format_named("e4m3fz")


@pytest.mark.torch
def test_torch_dtypes():
    import torch
    for name, f in FORMATS.items():
        if name == "e4m3b11fnuz":
            with pytest.raises(FormatError, match="no dtype"):
                f.torch_dtype()
            continue
        dtype = f.torch_dtype()
        values = torch.arange(256, dtype=torch.uint8).view(dtype).float().numpy().astype(np.float64)
        np.testing.assert_array_equal(values, f.table)
