#!/usr/bin/env python3
"""Every report the command line makes, diffed against itself, is unchanged: exit 0, nothing
regressed, no case changed. The reports are those the other CLI tests make cheaply: a built-in
run, a `run --kernel` run (the NumPy adapter, prefill only, so the paged cases are skipped and
their inputs fingerprints null), a run whose kernel could not be judged on a case (an error with
the same reason on both sides), one shard and the merged report of both shards.
Usage: self_diff_test.py MQACHECK_BINARY."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import RAGGED_CASE, ROOT, SMALL_SUITE, SMALL_VARIANTS, expect, finish, load_json, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
NUMPY = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"
FAULTY = f"{sys.executable} {os.path.join(HERE, 'adapters', 'faulty_adapter.py')}"
# One prefill case and two paged ones: under the default --operation prefill the paged pair is skipped.
SOME_QUICK = ["--cases", QUICK, "--case", "causal", "--case", "sliding", "--case", "paged", "--case", "paged-2d"]


def make(tmp, name, *args):
    out = os.path.join(tmp, name)
    r = run("run", *args, "--out", out)
    expect(r.returncode in (0, 1) and os.path.exists(os.path.join(out, "report.json")),
           f"run {name}: {r.returncode} {r.stdout[-300:]} {r.stderr}")
    return os.path.join(out, "report.json")


with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "suite.toml")
    open(suite, "w").write(SMALL_SUITE + RAGGED_CASE)
    reports = {
        "built-in": make(tmp, "built-in", "--cases", suite, *SMALL_VARIANTS),
        "kernel": make(tmp, "kernel", *SOME_QUICK, "--kernel", NUMPY, "--accumulate", "fp32"),
        "kernel-error": make(tmp, "kernel-error", "--cases", QUICK, "--case", "causal", "--case", "sliding", "--case", "paged",
                             "--kernel", f"{FAULTY} --fault refuse --on causal", "--accumulate", "fp32"),
        "shard": make(tmp, "shard-1", "--cases", suite, *SMALL_VARIANTS, "--shard", "1/2"),
    }
    make(tmp, "shard-2", "--cases", suite, *SMALL_VARIANTS, "--shard", "2/2")
    merged = os.path.join(tmp, "merged")
    r = run("merge", os.path.join(tmp, "shard-1"), os.path.join(tmp, "shard-2"), "--out", merged)
    expect(r.returncode == 0, f"merge: {r.returncode} {r.stderr}")
    reports["merged"] = os.path.join(merged, "report.json")

    kernel = load_json(reports["kernel"])
    expect(any(c["inputs_fingerprint"] is None for c in kernel["cases"]) and kernel["skipped"],
           f"the kernel run skips the paged cases: {kernel['cases']} {kernel['skipped']}")
    failing = load_json(reports["kernel-error"])
    expect(any(x["outcome"] == "error" for x in failing["results"]), "the faulty kernel's case is an error")

    for name, path in reports.items():
        js = os.path.join(tmp, f"{name}.diff.json")
        r = run("diff", path, path, "--json", js)
        expect(r.returncode == 0 and "nothing regressed" in r.stdout and "changed (" not in r.stdout,
               f"{name} against itself: {r.returncode} {r.stdout!r} {r.stderr!r}")
        if os.path.exists(js):
            d = json.load(open(js))
            expect(d["regressions"] == [] and all(c["status"] == "same" for c in d["cases"]) and
                   not any(p["changed"] for p in d["pairs"]),
                   f"{name} against itself, JSON: {d['regressions']} {[c for c in d['cases'] if c['status'] != 'same']}")

    # A shard still never compares with a whole run, nor with another shard.
    r = run("diff", reports["shard"], reports["merged"])
    expect(r.returncode == 2 and "put the shards together first" in r.stderr, f"shard against merged: {r.returncode} {r.stderr}")
    r = run("diff", reports["shard"], os.path.join(tmp, "shard-2", "report.json"))
    expect(r.returncode == 2 and "put the shards together first" in r.stderr, f"shard 1 against 2: {r.returncode} {r.stderr}")

finish("every report diffed against itself is unchanged")
