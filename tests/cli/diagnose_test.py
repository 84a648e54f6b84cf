#!/usr/bin/env python3
"""The diagnosis from outside: outputs planted by NumPy code that shares nothing with the C++ under
test, judged by `check`, each finding naming the bug that made it; outputs whose errors no planted
bug makes get no diagnosis; `run --kernel` diagnoses a kernel behind its adapter too.
Usage: diagnose_test.py MQACHECK_BINARY."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def decode(codes, fmt="e4m3fn"):
    """fp8 codes -> float64, from the formats' definitions (not from mqacheck)."""
    bias, fnuz = {"e4m3fn": (7, False), "e4m3fnuz": (8, True)}[fmt]
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    f = c & 7
    value = np.where(e == 0, f * 2.0 ** (-2 - bias), (f + 8) * 2.0 ** (e - bias - 3)) * sign
    nan = (c == 0x80) if fnuz else ((c & 0x7F) == 0x7F)
    return np.where(nan, np.nan, value)


def load(bundle):
    return {n: np.load(os.path.join(bundle, n + ".npy")) for n in ["q", "k", "k_scale", "weights", "ks", "ke"]}


def kernel(b, k_format="e4m3fn", bf16=False, fmax=False, transposed=False, end_extra=0):
    """The operation in float32 as a torch einsum does it, with one planted bug at a time."""
    q, k = decode(b["q"]).astype(np.float32), decode(b["k"], k_format).astype(np.float32)
    with np.errstate(invalid="ignore"):
        dots = np.einsum("mhd,nd->mhn", q, k).astype(np.float32)
    if bf16:
        bits = dots.view(np.uint32).astype(np.uint64)
        dots = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    relu = np.where(np.isnan(dots), np.float32(0) if fmax else dots, np.maximum(dots, np.float32(0)))
    w = b["weights"]
    if transposed:
        w = w.reshape(-1).reshape(w.shape[1], w.shape[0]).T
    with np.errstate(invalid="ignore"):
        logits = (np.einsum("mh,mhn->mn", w, relu).astype(np.float32) * b["k_scale"][None, :]).astype(np.float32)
    j = np.arange(logits.shape[1])[None, :]
    inside = (j >= b["ks"][:, None]) & (j < b["ke"][:, None] + end_extra)
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32)


def check(tmp, bundle, logits, *extra):
    path, out_json = os.path.join(tmp, "out.npy"), os.path.join(tmp, "out.json")
    np.save(path, logits)
    if os.path.exists(out_json):
        os.remove(out_json)
    r = run("check", bundle, "--logits", path, "--json", out_json, *extra)
    report = json.load(open(out_json)) if os.path.exists(out_json) else {"findings": []}
    return r, report


def diagnoses(report):
    return {f["class"]: f["diagnosis"] for f in report["findings"]}


with tempfile.TemporaryDirectory() as tmp:
    bundles = {}
    for case in ["random", "nan-codes"]:
        bundles[case] = os.path.join(tmp, case)
        r = run("gen", "--cases", QUICK, "--case", case, "--out", bundles[case])
        expect(r.returncode == 0, f"gen {case}: {r.stderr}")
    b, bn = load(bundles["random"]), load(bundles["nan-codes"])

    r, rep = check(tmp, bundles["random"], kernel(b))
    expect(r.returncode == 0 and rep["findings"] == [], f"a correct kernel: {r.stdout}")

    def named(name, logits, cls, cause, *contains, bundle="random"):
        r, rep = check(tmp, bundles[bundle], logits)
        d = diagnoses(rep).get(cls)
        expect(r.returncode == 1 and d is not None and d["cause"] == cause and all(c in d["sentence"] for c in contains),
               f"{name}: {cls} should be diagnosed {cause} {contains}, got {diagnoses(rep)}")
        expect(d is None or f"diagnosis: {d['sentence']}" in r.stdout, f"{name}: check prints the diagnosis")
        return d

    named("inclusive end", kernel(b, end_extra=1), "mask-shift", "inclusive-end", "window end read as inclusive")
    named("bf16 dots", kernel(b, bf16=True), "error-bound", "bf16-dot", "would pass under --accumulate bf16")
    r, _ = check(tmp, bundles["random"], kernel(b, bf16=True), "--accumulate", "bf16")
    expect(r.returncode == 0, f"bf16 dots pass under the flag the diagnosis named: {r.stdout}")
    # k's bytes misread: the products halve exactly as if q's were, so both are named.
    named("k read as fnuz", kernel(b, k_format="e4m3fnuz"), "scale-factor", "fnuz-mixup-q", "mix-up on q", "or equally",
          "mix-up on k")
    named("weights transposed", kernel(b, transposed=True), "error-bound", "weights-transposed", "[H, M]")
    named("relu by fmax", kernel(bn, fmax=True), "error-bound", "relu-fmax", "declare --relu fmax", bundle="nan-codes")
    r, _ = check(tmp, bundles["nan-codes"], kernel(bn, fmax=True), "--relu", "fmax")
    expect(r.returncode == 0, f"fmax passes under --relu fmax: {r.stdout}")
    zero = kernel(b)
    zero[np.isneginf(zero)] = 0
    named("zero fill", zero, "mask-leak", "zero-fill", "clean_logits not honoured")

    # Errors no planted bug makes: no diagnosis.
    good = kernel(b)
    inside = np.argwhere(np.isfinite(good))
    one = good.copy()
    one[tuple(inside[len(inside) // 2])] += np.float32(1000)
    nan_row = good.copy()
    nan_row[int(inside[0][0]), :] = np.nan
    for name, logits in [("one element off", one), ("a NaN row", nan_row)]:
        r, rep = check(tmp, bundles["random"], logits)
        expect(r.returncode == 1 and rep["findings"] and all(f["diagnosis"] is None for f in rep["findings"]),
               f"{name}: no diagnosis expected, got {diagnoses(rep)}")
        expect("diagnosis:" not in r.stdout, f"{name}: nothing printed")

    r, rep = check(tmp, bundles["random"], kernel(b, end_extra=1), "--no-diagnosis")
    expect(r.returncode == 1 and rep["findings"] and all(f["diagnosis"] is None for f in rep["findings"]),
           f"--no-diagnosis: {diagnoses(rep)}")

    # run --kernel: the adapter's kernel diagnosed like a built-in variant.
    out = os.path.join(tmp, "reports")
    r = run("run", "--cases", os.path.join(ROOT, "cases", "bugs", "11-inclusive-end.toml"), "--kernel",
            ADAPTER + " --bug inclusive-end", "--must-produce", "mask-shift", "--out", out)
    expect(r.returncode == 0, f"run --kernel: rc={r.returncode} {r.stderr}{r.stdout[-400:]}")
    if r.returncode == 0:
        report = json.load(open(os.path.join(out, "report.json")))
        shifts = [f for res in report["results"] for f in res["findings"] if f["class"] == "mask-shift"]
        expect(shifts and all(f["diagnosis"] and f["diagnosis"]["cause"] == "inclusive-end" for f in shifts),
               f"run --kernel diagnosis: {shifts}")

finish("diagnose")
