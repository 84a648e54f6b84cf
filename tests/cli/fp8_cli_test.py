#!/usr/bin/env python3
"""`mqacheck fp8 ...` driven from outside, with oracles written in NumPy that share no code with
the C++ under test. Usage: fp8_cli_test.py MQACHECK_BINARY. Exits non-zero on any failure."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import expect, finish, run  # noqa: E402
GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "golden", "fp8")
FORMATS = ["e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz", "e4m3b11fnuz", "e8m0fnu"]


def golden_values(fmt):
    return np.load(os.path.join(GOLDEN, f"ml_dtypes.{fmt}.decode_f32bits.npy")).view(np.float32).astype(np.float64)


def nearest_oracle(fmt, x):
    """Rounding of positive finite float64 x to the nearest code, by comparing with the midpoints of
    the ladder: what a producer that rounds the double once does (CUDA's double conversion)."""
    values = golden_values(fmt)
    limit = 128 if fmt != "e8m0fnu" else 256
    codes = np.array([c for c in range(limit) if np.isfinite(values[c])])
    ladder = values[codes]
    order = np.argsort(ladder)
    ladder, codes = ladder[order], codes[order]
    i = np.clip(np.searchsorted(ladder, x, side="right") - 1, 0, len(ladder) - 2)
    a, b = ladder[i], ladder[i + 1]
    mid = (a + b) / 2  # exact: dyadic neighbours
    even_up = (codes[i] % 2 == 1) if fmt != "e8m0fnu" else np.ones_like(i, dtype=bool)
    up = (x > mid) | ((x == mid) & even_up)
    return np.where(up, codes[i + 1], codes[i]).astype(np.uint8)


def ml_dtypes_oracle(fmt, x):
    """ml_dtypes' float64 cast: NumPy's float32 cast (round to nearest even) first, then the nearest
    code; e8m0 sends a float32 subnormal above 2^-127 to 2^-126."""
    x32 = x.astype(np.float32).astype(np.float64)
    codes = nearest_oracle(fmt, np.maximum(x32, 2.0**-127) if fmt == "e8m0fnu" else x32)
    if fmt == "e8m0fnu":
        codes = np.where(x32 < 2.0**-126, np.where(x32 > 2.0**-127, 1, 0), codes).astype(np.uint8)
    return codes


with tempfile.TemporaryDirectory() as tmp:
    def path(name):
        return os.path.join(tmp, name)

    # decode, encode, table
    r = run("fp8", "decode", "--format", "e4m3fn", "0x7e", "1", "0x80", "0xFF")
    expect(r.returncode == 0 and r.stdout.split() == ["448", "0.001953125", "-0", "nan"], f"decode: {r.stdout!r}")
    # A NaN code prints as nan whatever its sign bit, in every command that prints values.
    r = run("fp8", "decode", "--format", "e5m2", "0xFF", "0x7F", "0xFE", "0xFD")
    expect(r.returncode == 0 and r.stdout.split() == ["nan", "nan", "nan", "nan"], f"decode e5m2 NaNs: {r.stdout!r}")
    for fmt in FORMATS:
        r = run("fp8", "table", "--format", fmt)
        expect(r.returncode == 0 and "-nan" not in r.stdout and " nan " in r.stdout, f"table {fmt} prints -nan")
    r = run("fp8", "compare", "--format", "e5m2", "-nan", "nan", "-inf")
    expect(r.returncode == 0 and "-nan" not in r.stdout and "0xFE (nan)" in r.stdout, f"compare NaNs: {r.stdout!r}")
    r = run("fp8", "encode", "--format", "e4m3fn", "--profile", "hip-nosat", "449", "-inf", "1.5")
    expect(r.stdout.split() == ["0x7F", "0xFF", "0x3C"], f"encode hip-nosat: {r.stdout!r}")
    r = run("fp8", "encode", "--format", "e4m3fnuz", "--profile", "saturate", "--bound", "224", "1e6", "-1e-9")
    expect(r.stdout.split() == ["0x7E", "0x00"], f"encode saturate 224: {r.stdout!r}")
    r = run("fp8", "table", "--format", "e5m2")
    rows = r.stdout.strip().splitlines()[1:]
    classes = [row.split()[-1] for row in rows]
    expect(len(rows) == 256 and classes.count("nan") == 6 and classes.count("inf") == 2
           and classes.count("max") == 2 and classes.count("zero") == 2, "table e5m2 classes")
    expect(rows[0x7B].split()[:3] == ["0x7B", "0.11110.11", "57344"], f"table row 0x7B: {rows[0x7B]!r}")

    # convert: float64 inputs at, and a hair either side of, every rounding midpoint. ml_dtypes (the
    # default profile) rounds a float64 to float32 first; cuda-satfinite rounds it once.
    for fmt in FORMATS:
        values = golden_values(fmt)
        limit = 128 if fmt != "e8m0fnu" else 256
        ladder = np.sort(values[:limit][np.isfinite(values[:limit])])
        mids = (ladder[:-1] + ladder[1:]) / 2
        x = np.concatenate([mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf),
                            mids * (1 + 2.0**-40), mids * (1 - 2.0**-40), ladder[ladder > 0]])
        x = x[x > 0]
        np.save(path("x64.npy"), x)
        r = run("fp8", "convert", "--format", fmt, "--in", path("x64.npy"), "--out", path("c64.npy"))
        expect(r.returncode == 0, f"convert {fmt} float64: {r.stderr}")
        got = np.load(path("c64.npy"))
        want = ml_dtypes_oracle(fmt, x)
        bad = np.nonzero(got != want)[0]
        expect(got.dtype == np.uint8 and got.shape == x.shape and len(bad) == 0,
               f"convert {fmt} float64 near midpoints: {len(bad)} mismatches, first "
               f"{[(x[i].hex(), int(got[i]), int(want[i])) for i in bad[:3]]}")
        # Double rounding shows: some inputs a hair off a midpoint tie in float32.
        expect(np.any(want != nearest_oracle(fmt, x)), f"{fmt}: no input tells the float32 path from the direct one")
        if fmt in ("e4m3fn", "e5m2"):  # CUDA's double conversion: one rounding
            r = run("fp8", "convert", "--format", fmt, "--profile", "cuda-satfinite", "--in", path("x64.npy"),
                    "--out", path("cuda.npy"))
            below_max = x <= values[np.isfinite(values)].max()
            gotc = np.load(path("cuda.npy"))
            expect(r.returncode == 0 and np.array_equal(gotc[below_max], nearest_oracle(fmt, x[below_max])),
                   f"convert {fmt} float64 cuda-satfinite: rounded once")
        if fmt in ("e4m3fn", "e5m2", "e4m3fnuz"):  # negatives mirror
            np.save(path("neg.npy"), -x)
            run("fp8", "convert", "--format", fmt, "--in", path("neg.npy"), "--out", path("negc.npy"))
            gotn = np.load(path("negc.npy"))
            wantn = np.where(want == 0, 0x80 if fmt != "e4m3fnuz" else 0, want | 0x80).astype(np.uint8)
            expect(np.array_equal(gotn, wantn), f"convert {fmt} negative midpoints")

    # convert --decode reproduces ml_dtypes' float32 bits for all 256 codes
    for fmt in FORMATS:
        np.save(path("codes.npy"), np.arange(256, dtype=np.uint8))
        r = run("fp8", "convert", "--format", fmt, "--decode", "--in", path("codes.npy"), "--out", path("v.npy"))
        got = np.load(path("v.npy"))
        want = np.load(os.path.join(GOLDEN, f"ml_dtypes.{fmt}.decode_f32bits.npy"))
        expect(r.returncode == 0 and got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want),
               f"convert --decode {fmt}")

    # bad input: exit 2, one line naming the problem and what is accepted, no output file
    np.save(path("ints.npy"), np.arange(4, dtype=np.int32))
    np.save(path("two_d.npy"), np.zeros((2, 2), np.float32))
    with open(path("trunc.npy"), "wb") as f:
        f.write(open(path("x64.npy"), "rb").read()[:100])
    cases = [
        (["--format", "e4m3fx", "--in", path("x64.npy")], "accepted: e4m3fn"),
        (["--format", "e4m3fnuz", "--profile", "cuda-nosat", "--in", path("x64.npy")], "covers: e4m3fn, e5m2"),
        (["--format", "e4m3fn", "--profile", "nvidia", "--in", path("x64.npy")], "accepted: ml_dtypes"),
        (["--format", "e4m3fn", "--in", path("missing.npy")], "no such file"),
        (["--format", "e4m3fn", "--in", path("ints.npy")], "1-D float32 or float64"),
        (["--format", "e4m3fn", "--in", path("two_d.npy")], "found float32 [2, 2]"),
        (["--format", "e4m3fn", "--in", path("trunc.npy")], "truncated"),
        (["--format", "e4m3fn", "--decode", "--in", path("x64.npy")], "expected uint8"),
        (["--format", "e4m3fn", "--bound", "-3", "--in", path("x64.npy")], "positive finite"),
    ]
    for args, message in cases:
        out = path("should_not_exist.npy")
        r = run("fp8", "convert", *args, "--out", out)
        lines = r.stderr.strip().splitlines()
        expect(r.returncode == 2 and len(lines) == 1 and message in r.stderr and not os.path.exists(out)
               and not [n for n in os.listdir(tmp) if n.endswith(".partial")],
               f"bad input {args}: rc={r.returncode} stderr={r.stderr!r}")
    for args, message in [(["decode", "--format", "e4m3fn", "256"], "0x00..0xFF"),
                          (["encode", "--format", "e4m3fn", "1.5x"], "not a number"),
                          (["encode", "--format", "e4m3fn"], "no VALUE"),
                          (["table"], "--format")]:
        r = run("fp8", *args)
        expect(r.returncode == 2 and message in r.stderr, f"bad input {args}: rc={r.returncode} {r.stderr!r}")

finish("fp8 command line")
