#!/usr/bin/env python3
"""`mqacheck shrink` driven from outside, with planted regressions: outputs made by NumPy code
that shares nothing with the C++ under test (a mask shift, an unwritten tail, a NaN row, an
error-bound on one key), and a NumPy kernel behind the adapter protocol for --kernel. Each is cut to
a small bundle that `check` still flags with the same class. Usage: shrink_test.py MQACHECK_BINARY."""
import json
import os
import subprocess
import sys
import tempfile
import tomllib

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"
POISON = np.array([0x7FC0DEAD], dtype=np.uint32).view(np.float32)[0]


def run(*args):
    # One thread: the tests of a 2-core CI machine run side by side.
    return subprocess.run([BIN, *args], capture_output=True, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})


def decode(codes):
    """e4m3fn codes -> float64, from the format's definition (not from mqacheck)."""
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> 3) & 0xF
    f = c & 7
    value = np.where(e == 0, f * 2.0 ** -9, (f + 8) * 2.0 ** (e - 10)) * sign
    return np.where((c & 0x7F) == 0x7F, np.nan, value)


def load(bundle):
    return {n: np.load(os.path.join(bundle, n + ".npy")) for n in ["q", "k", "k_scale", "weights", "ks", "ke"]}


def fp32_kernel(b, end_extra=0):
    """The operation in float32, -inf outside the windows (ke + end_extra: a planted inclusive end)."""
    q, k = decode(b["q"]).astype(np.float32), decode(b["k"]).astype(np.float32)
    dots = np.maximum(np.einsum("mhd,nd->mhn", q, k).astype(np.float32), np.float32(0))
    logits = (np.einsum("mh,mhn->mn", b["weights"], dots).astype(np.float32) * b["k_scale"][None, :]).astype(np.float32)
    j = np.arange(logits.shape[1])[None, :]
    inside = (j >= b["ks"][:, None]) & (j < b["ke"][:, None] + end_extra)
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32)


def case_of(bundle):
    with open(os.path.join(bundle, "case.toml"), "rb") as f:
        return tomllib.load(f)["case"][0]


def check(bundle, logits, *extra):
    out_json = os.path.join(os.path.dirname(bundle), os.path.basename(bundle) + ".json")
    r = run("check", bundle, "--logits", logits, "--json", out_json, *extra)
    report = json.load(open(out_json)) if os.path.exists(out_json) else None
    return r, report


def classes(report):
    return {f["class"] for f in report["findings"]} if report else set()


def shrink_planted(tmp, bundle, name, logits, wanted, *extra):
    """Shrinks a planted output; the small bundle must show `wanted` to `check`."""
    path = os.path.join(tmp, name + ".npy")
    np.save(path, logits)
    small = os.path.join(tmp, "small-" + name)
    r = run("shrink", bundle, "--logits", path, "--out", small, *extra)
    if name == "mask-shift":  # diagnosed on the whole output, where the evidence is
        expect("(diagnosis: matches a window end read as inclusive" in r.stdout, f"{name}: {r.stdout}")
    extra = [x for x in extra if x not in ("--finding", wanted)]
    expect(r.returncode == 0, f"{name}: shrink rc={r.returncode} {r.stderr}{r.stdout[-600:]}")
    if r.returncode != 0:
        return None, None
    case = case_of(small)
    expect(case["layout"]["kind"] == "explicit" and case["origin"].startswith("shrunk from case 'random' of suite 'quick'"),
           f"{name}: case.toml {case}")
    rc, report = check(small, os.path.join(small, "logits.npy"), *extra)
    expect(rc.returncode == 1 and wanted in classes(report), f"{name}: check on the small bundle: {rc.stdout}")
    expect(f"reproduce: mqacheck check {small} --logits {small}/logits.npy" in r.stdout, f"{name}: {r.stdout}")
    return case, report


with tempfile.TemporaryDirectory() as tmp:
    bundle = os.path.join(tmp, "random")
    r = run("gen", "--cases", QUICK, "--case", "random", "--out", bundle)
    expect(r.returncode == 0, f"gen: {r.stderr}")
    b = load(bundle)
    good = fp32_kernel(b)
    m, n = good.shape

    # A mask shift (ke read as inclusive): one row and the keys around its window's end.
    case, report = shrink_planted(tmp, bundle, "mask-shift", fp32_kernel(b, end_extra=1), "mask-shift")
    if case:
        expect(case["m"] == 1 and case["n"] <= 4, f"mask-shift: shrunk to m={case['m']} n={case['n']}")

    # An overrun of 4 keys past ke: cut, it must stay +4, not become +1 (an inclusive end, diagnosed as
    # one on the small bundle).
    case, report = shrink_planted(tmp, bundle, "overrun-4", fp32_kernel(b, end_extra=4), "mask-shift")
    if report:
        shift = [f["detail"] for f in report["findings"] if f["class"] == "mask-shift"]
        expect(shift and shift[0].startswith("window end shifted by +4"), f"overrun-4: {shift}")

    # An unwritten tail: the last 3 columns keep the poison.
    tail = good.copy()
    tail[:, -3:] = POISON
    case, _ = shrink_planted(tmp, bundle, "unwritten", tail, "unwritten")
    if case:
        expect(case["m"] == 1 and case["n"] == 1, f"unwritten: shrunk to m={case['m']} n={case['n']}")

    # A NaN row (one whose window is not empty), kept by its own class.
    row = int(np.argwhere(b["ke"] - b["ks"] > 2)[3][0])
    nan_row = good.copy()
    nan_row[row, :] = np.nan
    case, report = shrink_planted(tmp, bundle, "nan-row", nan_row, "nan", "--finding", "nan")
    if case:
        expect(case["m"] == 1 and f"rows [{row}]" in case["description"], f"nan-row: {case['description']}")
        # One element left: too little to tell one bug that writes NaN from another.
        expect(case["n"] > 1 or all(f["diagnosis"] is None for f in report["findings"]), f"nan-row: {report}")

    # An error-bound on one key: every value of key j off by half.
    j = int(np.argwhere(np.isfinite(good).any(axis=0))[5][0])
    one_key = good.copy()
    one_key[:, j] *= np.float32(1.5)
    case, _ = shrink_planted(tmp, bundle, "one-key", one_key, "error-bound")
    if case:
        expect(case["m"] == 1 and case["n"] == 1 and f"keys [{j}]" in case["description"], f"one-key: {case}")

    # --kernel: the kernel re-run on every candidate, so heads and head_dim are cut too.
    kbundle = os.path.join(tmp, "sliding")
    r = run("gen", "--cases", QUICK, "--case", "sliding", "--out", kbundle)
    small = os.path.join(tmp, "small-kernel")
    r = run("shrink", kbundle, "--kernel", ADAPTER + " --bug inclusive-end", "--out", small)
    expect(r.returncode == 0, f"shrink --kernel: rc={r.returncode} {r.stderr}{r.stdout[-600:]}")
    if r.returncode == 0:
        case = case_of(small)
        expect(case["m"] == 1 and case["heads"] == 1 and case["head_dim"] < 64, f"shrink --kernel: {case}")
        rc, report = check(small, os.path.join(small, "logits.npy"))
        expect(rc.returncode == 1 and "mask-shift" in classes(report), f"check after shrink --kernel: {rc.stdout}")

    # A nondeterministic kernel: both launches kept, check --repeat shows it again.
    small = os.path.join(tmp, "small-race")
    r = run("shrink", kbundle, "--kernel", ADAPTER + " --bug nondeterministic", "--out", small)
    expect(r.returncode == 0 and os.path.exists(os.path.join(small, "repeat.npy")),
           f"shrink a nondeterministic kernel: rc={r.returncode} {r.stderr}{r.stdout[-400:]}")
    if r.returncode == 0:
        rc, report = check(small, os.path.join(small, "logits.npy"), "--repeat", os.path.join(small, "repeat.npy"))
        expect("nondeterministic" in classes(report), f"check --repeat after shrink: {rc.stdout}")

    # The small bundle's arrays are its inputs: gen and run refuse its case, and an edit is caught.
    small = os.path.join(tmp, "small-mask-shift")
    for args in (["gen", "--cases", os.path.join(small, "case.toml"), "--case", "random", "--out", os.path.join(tmp, "regen")],
                 ["run", "--cases", os.path.join(small, "case.toml")]):
        r = run(*args)
        expect(r.returncode == 2 and "has origin" in r.stderr and "no generator" in r.stderr, f"{args[0]}: {r.stderr}")
    scale = np.load(os.path.join(small, "k_scale.npy"))
    np.save(os.path.join(small, "k_scale.npy"), (scale * np.float32(2)).astype(np.float32))
    # digest.json (shrink writes one) catches the edit; without it (--recompute), reference.npy is
    # no longer the exact reference of the arrays.
    r = run("check", small, "--logits", os.path.join(small, "logits.npy"))
    expect(r.returncode == 2 and "k_scale.npy: differs from the file `mqacheck gen` wrote" in r.stderr,
           f"an edited shrunk bundle: {r.stderr}")
    r = run("check", small, "--logits", os.path.join(small, "logits.npy"), "--recompute")
    expect(r.returncode == 2 and "reference.npy" in r.stderr, f"an edited shrunk bundle, --recompute: {r.stderr}")

    # Bad input: one message, exit 2, nothing written.
    def refused(name, args, message):
        out = os.path.join(tmp, "refused-" + name)
        r = run("shrink", *args, "--out", out)
        expect(r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1,
               f"{name}: rc={r.returncode} {r.stderr!r}")
        expect(not os.path.exists(out), f"{name}: --out was written")

    np.save(os.path.join(tmp, "good.npy"), good)
    refused("passes", [bundle, "--logits", os.path.join(tmp, "good.npy")], "nothing to shrink")
    refused("no-output", [bundle], "--logits is required without --kernel")
    refused("absent-class", [bundle, "--logits", os.path.join(tmp, "mask-shift.npy"), "--finding", "nan"],
            "shows no nan")
    refused("unknown-class", [bundle, "--logits", os.path.join(tmp, "mask-shift.npy"), "--finding", "leak"],
            "is not a finding class (accepted: mask-leak")
    refused("not-reproduced", [bundle, "--logits", os.path.join(tmp, "mask-shift.npy"), "--kernel", ADAPTER],
            "does not reproduce mask-shift")
    # A kernel whose bug goes away after the whole bundle's two launches: nothing stable to attach.
    flaky = os.path.join(tmp, "flaky_adapter.py")
    with open(flaky, "w") as f:
        f.write(f"""import json, sys
sys.path.insert(0, {os.path.join(HERE, 'adapters')!r})
import numpy_adapter
class Args:
    fresh = False
    bug = "inclusive-end"
    head_sum = None
served = 0
def handle(request):
    global served
    served += 1
    if served > 2:
        Args.bug = None
    return {{"ok": True, "seconds": numpy_adapter.run(request, Args)}}
numpy_adapter.serve(handle)
""")
    refused("flaky", [kbundle, "--kernel", f"{sys.executable} {flaky}"], "disappeared")
    inside = os.path.join(bundle, "small")
    r = run("shrink", bundle, "--logits", os.path.join(tmp, "mask-shift.npy"), "--out", inside)
    expect(r.returncode == 2 and "is inside the bundle" in r.stderr and not os.path.exists(inside),
           f"--out inside the bundle: rc={r.returncode} {r.stderr!r}")
    existing = os.path.join(tmp, "existing")
    os.mkdir(existing)
    with open(os.path.join(existing, "keep.txt"), "w") as f:
        f.write("mine")
    r = run("shrink", bundle, "--logits", os.path.join(tmp, "mask-shift.npy"), "--out", existing)
    expect(r.returncode == 2 and "already exists" in r.stderr and os.listdir(existing) == ["keep.txt"],
           f"--out that exists: rc={r.returncode} {r.stderr!r}")
    leftovers = [e for e in os.listdir(tmp) if "partial" in e]
    expect(not leftovers, f"partial folders left behind: {leftovers}")

finish("shrink")
