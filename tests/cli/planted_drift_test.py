#!/usr/bin/env python3
"""A drift planted through a real kernel behind the adapter protocol: the NumPy adapter sums the 64
heads of every logit in float32, once as a pairwise tree and once left to right. Both are honest
under the fp32 contract (any order), so both pass; `mqacheck diff --max-drift` of the sequential run
against the pairwise one must flag `ulp-drift` (the arithmetic changed), and two runs of the same
order must not. Usage: planted_drift_test.py MQACHECK."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import expect, finish, run, suite_toml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"

# The quick suite's prefill layouts at DeepSeek's 64 heads.
SUITE = suite_toml("drift-64-heads", [
    dict(name="causal", m=32, n=150, layout=dict(kind="causal")),
    dict(name="packed", m=24, n=120, layout=dict(kind="packed", requests=5)),
    dict(name="sliding", m=32, n=160, layout=dict(kind="sliding", window=48)),
    dict(name="random", m=48, n=131, layout=dict(kind="random", empty_fraction=0.1)),
], defaults=dict(heads=64, head_dim=64, q_format="e4m3fn", k_format="e4m3fn", seed=20261203))

# The limit: --max-drift 1.5, the documented example (reports/README.md). Why the sequential order
# must exceed it: a float32 sum of H terms rounds H - 1 times; left to right, the partial sums grow
# to the whole and each rounding is up to half an ulp of it, so the error is a random walk of about
# sqrt(H) roundings (8 at H = 64), where a pairwise tree puts each term through log2(H) = 6 roundings
# of partial sums, about sqrt(log2 H) (2.4) of them. The expected growth of the error in ULPs of A
# is then about 3.3x; docs/contracts.md measured 2x at p99 (0.0625 -> 0.125) on a 64-head case.
# Measured here (NumPy 1.24, these cases): p99 grows 1.5x to 2x and max 1.33x to 2.5x; the
# figures step by fractions of an output ULP, so the growth shows as 1.5x or 2x rather than 3.3x.
# Three of the four pairs pass the limit, one (packed: p99 1.5x, max 1.33x) stays at or under it:
# the test asks for the drift to be flagged on the suite, not on every pair. Two runs of one
# order are bit for bit the same, a factor of exactly 1.
MAX_DRIFT = "1.5"


def kernel_run(tmp, name, order):
    out = os.path.join(tmp, name)
    r = run("run", "--cases", os.path.join(tmp, "suite.toml"), "--kernel", f"{ADAPTER} --head-sum {order}",
            "--accumulate", "fp32", "--threads", "1", "--timing-launches", "0", "--out", out)
    expect(r.returncode == 0, f"{name} ({order} head sum) passes the fp32 contract: {r.returncode}\n{r.stdout[-1500:]}{r.stderr}")
    return os.path.join(out, "report.json")


def drift(tmp, before, now):
    out = os.path.join(tmp, "diff.json")
    r = run("diff", before, now, "--max-drift", MAX_DRIFT, "--json", out)
    return r, json.load(open(out)) if os.path.exists(out) else {"regressions": []}


with tempfile.TemporaryDirectory() as tmp:
    open(os.path.join(tmp, "suite.toml"), "w").write(SUITE)
    pairwise, again, sequential = (kernel_run(tmp, name, order) for name, order in
                                   (("pairwise", "pairwise"), ("again", "pairwise"), ("sequential", "sequential")))

    r, d = drift(tmp, pairwise, sequential)
    flagged = [g for g in d["regressions"] if g["kind"] == "ulp-drift"]
    print(f"sequential against pairwise, --max-drift {MAX_DRIFT}: {len(flagged)} of 4 pairs flagged")
    for g in flagged:
        print("  ", g["text"])
    # Deterministic (the same inputs, the same NumPy): the three pairs measured above, at least.
    expect(r.returncode == 1 and len(flagged) >= 3 and all(g["kind"] == "ulp-drift" for g in d["regressions"]),
           f"the sequential head sum drifts from the pairwise one: rc={r.returncode} {d['regressions']}\n{r.stdout[-1500:]}")

    r, d = drift(tmp, pairwise, again)
    expect(r.returncode == 0 and d["regressions"] == [], f"the same order twice does not drift: rc={r.returncode} {d['regressions']}")

    # The growth is the kernel's order, not noise of one case: every pair's p99 grew.
    before = {x["case"]: x["metrics"]["magnitude_ulp"] for x in json.load(open(pairwise))["results"]}
    now = {x["case"]: x["metrics"]["magnitude_ulp"] for x in json.load(open(sequential))["results"]}
    for case in before:
        print(f"  {case}: ULPs of A p99 {before[case]['p99']} -> {now[case]['p99']}, max {before[case]['max']} -> {now[case]['max']}")
    expect(all(now[c]["p99"] > before[c]["p99"] for c in before), f"p99 grows on every case: {before} {now}")

finish("planted drift")
