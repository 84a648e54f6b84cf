#!/usr/bin/env python3
"""`mqacheck run` and `mqacheck check` driven from outside. Outputs are planted by NumPy code that
shares nothing with the C++ under test: an fp32 einsum kernel, a bf16-dot kernel, and the bugs of
docs/bug-classes.md made by editing the reference. Usage: run_check_test.py MQACHECK_BINARY."""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, expect, finish, gen_bundle, run  # noqa: E402


def decode(codes, fmt):
    """fp8 codes -> float64, written from the format definitions (not from mqacheck)."""
    bias, man, fnuz = {"e4m3fn": (7, 3, False), "e4m3fnuz": (8, 3, True)}[fmt]
    c = codes.astype(np.int64)
    sign = np.where(c & 0x80, -1.0, 1.0)
    e = (c >> man) & ((1 << (7 - man)) - 1)
    f = c & ((1 << man) - 1)
    value = np.where(e == 0, f * 2.0 ** (1 - bias - man), (f + 2**man) * 2.0 ** (e - bias - man)) * sign
    nan = (c == 0x80) if fnuz else ((c & 0x7F) == 0x7F)
    return np.where(nan, np.nan, value)


def fp32_kernel(b, bf16_dots=False):
    """The operation in float32 as torch's fp32 einsum does it; -inf outside windows."""
    q = decode(b["q"], "e4m3fn").astype(np.float32)
    k = decode(b["k"], "e4m3fn").astype(np.float32)
    dots = np.einsum("mhd,nd->mhn", q, k).astype(np.float32)
    if bf16_dots:
        bits = dots.view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        dots = bits.view(np.float32)
    relu = np.maximum(dots, np.float32(0))
    logits = (np.einsum("mh,mhn->mn", b["weights"], relu).astype(np.float32) * b["k_scale"][None, :]).astype(np.float32)
    j = np.arange(logits.shape[1])[None, :]
    inside = (j >= b["ks"][:, None]) & (j < b["ke"][:, None])
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32), inside


def check(bundle, logits, path, *extra):
    np.save(path, logits)
    out_json = path + ".json"
    r = run("check", bundle, "--logits", path, "--json", out_json, *extra)
    report = json.load(open(out_json)) if os.path.exists(out_json) else None
    return r, report


def classes(report):
    return {f["class"] for f in report["findings"]} if report else set()


with tempfile.TemporaryDirectory() as tmp:
    # run: the quick suite passes with every mutant caught, reports are written and well formed.
    # Under CTest the test suite.quick has run it with --out (the fixture quick-reports,
    # tests/CMakeLists.txt) and MQA_QUICK_REPORTS names that folder; run alone, the script runs it.
    out = os.environ.get("MQA_QUICK_REPORTS")
    if not out:
        out = os.path.join(tmp, "reports")
        r = run("run", "--cases", os.path.join(ROOT, "cases", "quick.toml"), "--out", out)
        expect(r.returncode == 0 and "every expectation holds" in r.stdout,
               f"run quick: rc={r.returncode} {r.stdout[-400:]}")
    report = json.load(open(os.path.join(out, "report.json")))
    expect(report["schema"] == "mqacheck.report" and report["schema_version"] == 2 and report["expectations_hold"],
           "report.json header")
    # Every mutant that ran is caught; one whose bug needs inputs quick does not hold (fp4 block scales)
    # is skipped on every case and reported as not exercised (cases/bugs/29 catches it).
    ran = {r["variant"] for r in report["results"]}
    expect(all(m["caught_by"] for m in report["mutants"] if m["variant"] in ran) and len(ran) >= 16, "every mutant caught")
    expect("mutant-fp4-scale-per-token" not in ran, "the fp4 mutant is refused on quick's fp8 cases")
    xml = open(os.path.join(out, "report.xml")).read()
    expect(xml.startswith("<?xml") and "<testsuite" in xml and 'failures="0"' in xml, "JUnit XML")
    summary = open(os.path.join(out, "summary.md")).read()
    expect("| case | variant |" in summary, "Markdown summary")
    expect(any("mutant-fp4-scale-per-token" in line and "not exercised: skipped on every case" in line
               for line in summary.splitlines()), "the fp4 mutant is reported as not exercised")
    expect("skipped on every case" in xml, "JUnit marks the fp4 mutant skipped")

    # run: a mutant the suite cannot catch breaks the expectations (exit 1)
    r = run("run", "--cases", os.path.join(ROOT, "cases", "bugs", "11-inclusive-end.toml"),
            "--variant", "fp32-naive", "--variant", "mutant-fnuz-keeps-0x80")
    expect(r.returncode == 1 and "went blind" in r.stdout, f"blind mutant: rc={r.returncode}")
    r = run("run", "--cases", os.path.join(ROOT, "cases", "quick.toml"), "--variant", "fp33-naive")
    expect(r.returncode == 2 and "unknown variant 'fp33-naive'" in r.stderr, f"unknown variant: {r.stderr!r}")

    # run --case: only the named cases, in the suite's order; a name the suite lacks is bad input
    quick = os.path.join(ROOT, "cases", "quick.toml")
    one = os.path.join(tmp, "one")
    r = run("run", "--cases", quick, "--case", "sliding", "--case", "causal", "--variant", "fp32-naive", "--out", one)
    report = json.load(open(os.path.join(one, "report.json"))) if r.returncode == 0 else {"results": []}
    expect([x["case"] for x in report["results"]] == ["causal", "sliding"], f"--case picks two cases: {r.stdout[-300:]}")
    r = run("run", "--cases", quick, "--case", "causl", "--variant", "fp32-naive")
    expect(r.returncode == 2 and "--case causl" in r.stderr and quick in r.stderr and "causal" in r.stderr,
           f"--case with a name the suite lacks: {r.stderr!r}")

    # check: outputs planted by programs outside the project
    bundle = gen_bundle(os.path.join(ROOT, "cases", "quick.toml"), "random", os.path.join(tmp, "bundle"))
    b = {name: np.load(os.path.join(bundle, name + ".npy"))
         for name in ["q", "k", "k_scale", "weights", "ks", "ke", "reference"]}
    ref = b["reference"]
    m, n = ref.shape
    logits, inside = fp32_kernel(b)
    out = os.path.join(tmp, "out.npy")

    r, rep = check(bundle, ref, out, "--accumulate", "exact")
    expect(r.returncode == 0 and rep["verdict"] == "pass" and rep["metrics"]["ulp"]["max"] == 0, "reference itself")
    r, rep = check(bundle, logits, out)
    expect(r.returncode == 0 and rep["verdict"] == "pass", f"numpy fp32 kernel passes: {r.stdout}")
    r, rep = check(bundle, logits, out, "--accumulate", "exact")
    expect(r.returncode == 1 and "error-bound" in classes(rep), "numpy fp32 kernel is not exact")
    bf16, _ = fp32_kernel(b, bf16_dots=True)
    r, rep = check(bundle, bf16, out)
    expect(r.returncode == 1 and "error-bound" in classes(rep), f"bf16 dots fail an fp32 contract: {classes(rep)}")
    r, rep = check(bundle, bf16, out, "--accumulate", "bf16")
    expect(r.returncode == 0, f"bf16 dots pass a bf16 contract: {r.stdout}")

    padded = np.full((m, n + 37), np.float32(7.0))
    padded[:, :n] = logits
    r, rep = check(bundle, padded, out)
    expect(r.returncode == 0, f"padded stride: only [0, N) is judged: {r.stdout}")

    halved = np.where(inside, logits * np.float32(0.5), logits).astype(np.float32)
    r, rep = check(bundle, halved, out)
    expect(classes(rep) == {"scale-factor"} and "2^-1" in rep["findings"][0]["detail"], f"x0.5: {classes(rep)}")

    # A float32 output is mapped, not read: its file must come out of a failing check,
    # diagnosis included, byte for byte as it went in; a Fortran-order copy (read, not mapped) of
    # the same values gets the same judgement.
    before = open(out, "rb").read()
    r, rep_again = check(bundle, halved, out + ".again.npy")
    expect(open(out + ".again.npy", "rb").read() == before and rep_again["findings"] == rep["findings"],
           "a mapped output is left as it was")
    fortran = os.path.join(tmp, "fortran.npy")
    np.save(fortran, np.asfortranarray(halved))
    r = run("check", bundle, "--logits", fortran, "--json", fortran + ".json")
    rep_fortran = json.load(open(fortran + ".json")) if os.path.exists(fortran + ".json") else {"findings": None}
    expect(r.returncode == 1 and rep_fortran["findings"] == rep["findings"], "a Fortran-order output: same judgement")

    inclusive = logits.copy()
    rows = np.nonzero(b["ke"] < n)[0]
    inclusive[rows, b["ke"][rows]] = 1.0
    r, rep = check(bundle, inclusive, out)
    expect(r.returncode == 1 and classes(rep) >= {"mask-shift"}, f"ke inclusive: {classes(rep)}")

    zero_fill = np.where(inside, logits, np.float32(0)).astype(np.float32)
    r, rep = check(bundle, zero_fill, out)
    # The top-k changes as a consequence of the leak: said in the mask finding, not a second finding.
    leak = [f for f in rep["findings"] if f["class"] == "mask-leak"] if rep else []
    expect(classes(rep) == {"mask-leak"} and leak and "top-k of" in leak[0]["detail"], f"0 outside: {classes(rep)}")
    r, rep = check(bundle, zero_fill, out, "--mask", "dont-care")
    expect(r.returncode == 0, "0 outside is fine under dont-care")

    poisoned = logits.copy()
    i, j = np.argwhere(inside)[3]
    poisoned[i, j] = np.nan
    r, rep = check(bundle, poisoned, out)
    expect(classes(rep) == {"nan"} and rep["findings"][0]["first"] == [int(i), int(j)], f"one NaN: {rep['findings']}")

    holed = logits.copy()
    holed[i, j] = -np.inf
    r, rep = check(bundle, holed, out)
    expect("mask-hole" in classes(rep) and "mask-shift" not in classes(rep), f"-inf inside: {classes(rep)}")

    one_off = logits.copy()
    one_off[i, j] = np.float32(one_off[i, j] * 1.01 + 1e-3)
    r, rep = check(bundle, one_off, out)
    expect(classes(rep) >= {"error-bound"} and rep["findings"][0]["first"] == [int(i), int(j)], "one element off")

    late_start = logits.copy()
    starts = np.nonzero(inside.any(axis=1))[0]
    late_start[starts, np.maximum(b["ks"][starts], 0)] = -np.inf
    r, rep = check(bundle, late_start, out)
    expect("mask-shift" in classes(rep) and "mask-hole" not in classes(rep)
           and "start shifted by +1" in rep["findings"][0]["detail"],
           f"ks + 1: {rep['findings']}")

    poison = np.array([0x7FC0DEAD], dtype=np.uint32).view(np.float32)[0]
    tail = logits.copy()
    tail[:, n - 5:] = poison
    r, rep = check(bundle, tail, out)
    expect(classes(rep) >= {"unwritten"} and "nan" not in classes(rep), f"poison tail: {classes(rep)}")

    again = logits.copy()
    again[i, j] = np.nextafter(again[i, j], np.float32(np.inf))
    np.save(os.path.join(tmp, "again.npy"), again)
    r, rep = check(bundle, logits, out, "--repeat", os.path.join(tmp, "again.npy"))
    expect(classes(rep) == {"nondeterministic"} and r.returncode == 1, f"--repeat: {classes(rep)}")

    # check: bad input is exit 2 with one line
    np.save(os.path.join(tmp, "f64.npy"), logits.astype(np.float64))
    np.save(os.path.join(tmp, "short.npy"), logits[:, : n - 1])
    for args, message in [
        ([bundle, "--logits", os.path.join(tmp, "f64.npy")], "expected float32"),
        ([bundle, "--logits", os.path.join(tmp, "short.npy")], "S >= "),
        ([bundle, "--logits", os.path.join(tmp, "missing.npy")], "no such file"),
        ([os.path.join(tmp, "nowhere"), "--logits", out], "nowhere"),
        ([bundle, "--logits", out, "--accumulate", "fp16"], "accepted: exact, fp32"),
        ([bundle, "--logits", out, "--mask", "clear"], "accepted: clean, dont-care"),
    ]:
        r = run("check", *args)
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1,
               f"check {args[1:]}: rc={r.returncode} {r.stderr!r}")
    os.makedirs(os.path.join(tmp, "a-folder"))
    r = run("check", bundle, "--logits", out, "--json", os.path.join(tmp, "a-folder"))
    expect(r.returncode == 2 and "is a folder" in r.stderr and
           not [n for n in os.listdir(tmp) if n.endswith(".partial")], f"--json onto a folder: {r.returncode} {r.stderr!r}")
    # check computes the reference again and compares it with reference.npy (by default, and with
    # --recompute, which also ignores digest.json); with --trust-digest it judges in row blocks against
    # the reference.npy digest.json proves: the same verdicts every way.
    for how, extra in [("default", []), ("--trust-digest", ["--trust-digest"]), ("--recompute", ["--recompute"])]:
        r, rep = check(bundle, logits, out, *extra)
        expect(r.returncode == 0 and rep["verdict"] == "pass", f"{how}: numpy fp32 kernel passes: {r.stdout}")
        r, rep = check(bundle, halved, out, *extra)
        expect(classes(rep) == {"scale-factor"}, f"{how}: x0.5: {classes(rep)}")
        r, rep = check(bundle, logits, out, "--relu", "fmax", *extra)
        expect(r.returncode == 0, f"{how}: fmax relu on finite inputs: {r.stdout}")
    digest = open(os.path.join(bundle, "digest.json")).read()
    os.remove(os.path.join(bundle, "digest.json"))
    r, rep = check(bundle, one_off, out)
    expect(classes(rep) >= {"error-bound"} and rep["findings"][0]["first"] == [int(i), int(j)], "no digest: one element off")
    open(os.path.join(bundle, "digest.json"), "w").write(digest)

    tampered = np.where(inside, ref * np.float32(1.5), ref).astype(np.float32)
    np.save(os.path.join(bundle, "reference.npy"), tampered)
    r = run("check", bundle, "--logits", out)
    expect(r.returncode == 2 and "reference.npy: differs from the file `mqacheck gen` wrote" in r.stderr
           and "modified or mixed up" in r.stderr, f"tampered bundle: {r.stderr!r}")
    r = run("check", bundle, "--logits", out, "--recompute")
    expect(r.returncode == 2 and "differs from the exact reference of the bundle's inputs" in r.stderr
           and "modified or mixed up" in r.stderr, f"tampered bundle, --recompute: {r.stderr!r}")
    os.remove(os.path.join(bundle, "digest.json"))
    r = run("check", bundle, "--logits", out)
    expect(r.returncode == 2 and "modified or mixed up" in r.stderr, f"tampered bundle without a digest: {r.stderr!r}")

    # A digest.json that is a folder: its read threw past every handler (an abort that left shrink's
    # staging folder behind); now exit 2 naming it, and nothing left.
    os.mkdir(os.path.join(bundle, "digest.json"))
    shrunk = os.path.join(tmp, "shrunk")
    for command in (["check", bundle, "--logits", out], ["shrink", bundle, "--logits", out, "--out", shrunk]):
        r = run(*command)
        expect(r.returncode == 2 and "digest.json: is a folder, not a file" in r.stderr, f"{command[0]}: {r.stderr!r}")
    expect(not [f for f in os.listdir(tmp) if "shrunk" in f], f"shrink left nothing: {os.listdir(tmp)}")
    os.rmdir(os.path.join(bundle, "digest.json"))

    # --threads far past what the system starts: the buffers' fill takes no more threads than cores.
    many = os.path.join(tmp, "many-threads")
    r = run("run", "--cases", os.path.join(ROOT, "cases", "quick.toml"), "--case", "causal", "--variant", "exact",
            "--threads", "100000", "--out", many)
    expect(r.returncode == 0 and os.path.isfile(os.path.join(many, "report.json")), f"--threads 100000: {r.stderr!r}")
    expect(not [f for f in os.listdir(tmp) if ".partial" in f], f"nothing partial: {os.listdir(tmp)}")

finish("run and check")
