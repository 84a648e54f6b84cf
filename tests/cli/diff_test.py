#!/usr/bin/env python3
"""`mqacheck diff BASELINE NEW` from the outside: two runs of one suite compare clean;
regressions planted from real runs (a correct variant that shows a real mutant's findings, a
mutant no case catches any more, a case whose inputs changed) exit 1 with the regression named in
the table, the JSON and the Markdown; bad input exits 2 and writes nothing.
Usage: diff_test.py MQACHECK_BINARY."""
import copy
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import (  # noqa: E402
    RAGGED_CASE, SMALL_SUITE, SMALL_VARIANTS, expect, finish, load_json, run)



def save(report, path):
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    return path


def kinds(diff):
    return [r["kind"] for r in diff["regressions"]]


with tempfile.TemporaryDirectory() as tmp:
    suite, fewer = os.path.join(tmp, "suite.toml"), os.path.join(tmp, "fewer.toml")
    open(suite, "w").write(SMALL_SUITE + RAGGED_CASE)
    open(fewer, "w").write(SMALL_SUITE)  # the same suite without the case that catches the tail-tile mutant
    base, again = os.path.join(tmp, "base"), os.path.join(tmp, "again")
    for out in (base, again):
        r = run("run", "--cases", suite, *SMALL_VARIANTS, "--out", out)
        expect(r.returncode == 0, f"run {out}: {r.returncode} {r.stdout[-300:]} {r.stderr}")
    base_json = os.path.join(base, "report.json")

    # Two runs of one suite: deterministic, nothing regressed; a folder stands for its report.json.
    js, md = os.path.join(tmp, "d.json"), os.path.join(tmp, "d.md")
    r = run("diff", base, os.path.join(again, "report.json"), "--json", js, "--markdown", md)
    expect(r.returncode == 0 and "nothing regressed" in r.stdout, f"same suite twice: {r.returncode} {r.stdout!r}")
    d = load_json(js)
    expect(d["schema"] == "mqacheck.diff" and d["regressed"] is False and d["regressions"] == [], "diff JSON, clean")
    expect(all(p["status"] == "compared" and not p["changed"] for p in d["pairs"]) and len(d["pairs"]) == 6,
           f"every pair compared and unchanged: {[(p['case'], p['variant'], p['status']) for p in d['pairs']]}")
    expect(all(set(p["metrics"]) >= {"max_error_over_bound", "ulp_p50", "ulp_p99", "ulp_p999", "kernel_seconds"}
               for p in d["pairs"]), "drift of max error/bound, ULP percentiles and kernel time per pair")
    expect(open(md).read().startswith("## mqacheck diff: suite cli-small"), "Markdown for a PR comment")

    # Planted: the correct variant shows the findings a real mutant run produced.
    mutant_run = load_json(base_json)
    planted = copy.deepcopy(mutant_run)
    for i, res in enumerate(planted["results"]):
        if res["variant"] == "fp32-naive" and res["case"] == "ragged":
            real = next(x for x in mutant_run["results"] if x["case"] == "ragged" and x["variant"] == "mutant-tail-tile")
            planted["results"][i] = dict(real, variant="fp32-naive", kind="model", outcome="FAIL")
    r = run("diff", base_json, save(planted, os.path.join(tmp, "planted.json")), "--json", js, "--markdown", md)
    d = load_json(js)
    expect(r.returncode == 1 and kinds(d) == ["model-fails"], f"findings appear: {r.returncode} {kinds(d)}")
    expect("ragged x fp32-naive: pass in the baseline, FAIL now (topk-mismatch x15, unwritten x352)" in r.stdout
           and "REGRESSED (1)" in r.stdout, f"the regression in the table: {r.stdout!r}")
    expect("**model-fails**" in open(md).read(), "the regression in the Markdown")
    row = next(p for p in d["pairs"] if p["case"] == "ragged" and p["variant"] == "fp32-naive")
    expect(row["classes_added"] == ["topk-mismatch", "unwritten"] and row["outcome"] == {"baseline": "pass", "new": "FAIL"},
           f"the pair in the JSON: {row}")

    # Planted: a mutant no case catches any more (the case that caught it left the suite).
    r = run("run", "--cases", fewer, *SMALL_VARIANTS, "--out", os.path.join(tmp, "fewer"))
    expect(r.returncode == 1 and "mutant-tail-tile" in r.stdout, f"the fewer suite alone: {r.returncode}")
    r = run("diff", base_json, os.path.join(tmp, "fewer"), "--json", js)
    d = load_json(js)
    expect(r.returncode == 1 and sorted(kinds(d)) == ["case-missing", "mutant-blind"],
           f"mutant no longer caught: {r.returncode} {kinds(d)} {r.stdout[-500:]}")

    # Planted: a case's inputs changed (another generator, another seed): reported, never compared.
    changed = load_json(base_json)
    changed["cases"][1]["inputs_fingerprint"] = "0000000000000000"
    r = run("diff", base_json, save(changed, os.path.join(tmp, "changed.json")), "--json", js)
    d = load_json(js)
    expect(r.returncode == 1 and kinds(d) == ["case-changed"] and
           all(p["status"] == "case-changed" for p in d["pairs"] if p["case"] == "ragged"),
           f"changed inputs: {r.returncode} {kinds(d)}")

    # A report made by an mqacheck of uncommitted changes or unknown commit: one warning line each.
    for commit in ("351768e5f35a-dirty", "unknown"):
        dirty = load_json(base_json)
        dirty["mqacheck"]["commit"] = commit
        again_clean = load_json(os.path.join(again, "report.json"))
        again_clean["mqacheck"]["commit"] = "0123456789ab"
        r = run("diff", save(dirty, os.path.join(tmp, "dirty.json")), save(again_clean, os.path.join(tmp, "clean.json")))
        warnings = [x for x in r.stderr.splitlines() if "warning" in x]
        expect(r.returncode == 0 and len(warnings) == 1 and "dirty.json" in warnings[0] and f"'{commit}'" in warnings[0],
               f"diff warns of a baseline of commit {commit}: {r.returncode} {r.stderr!r}")
    r = run("diff", os.path.join(tmp, "clean.json"), os.path.join(tmp, "clean.json"))
    expect(r.returncode == 0 and "warning" not in r.stderr, f"no warning for a clean build's report: {r.stderr!r}")

    # Kernel time: reported; regresses only with --max-slowdown.
    slow = load_json(base_json)
    for res in slow["results"]:
        res["kernel_seconds"] = res["kernel_seconds"] * 3 + 1e-3
    slow_path = save(slow, os.path.join(tmp, "slow.json"))
    r = run("diff", base_json, slow_path)
    expect(r.returncode == 0, f"slower without a limit: {r.returncode}")
    r = run("diff", base_json, slow_path, "--max-slowdown", "2", "--json", js)
    expect(r.returncode == 1 and set(kinds(load_json(js))) == {"slower"}, f"slower with a limit: {r.returncode}")
    # ... judged on best times against max(limit, 1 + both reports' noise), stated in the message.
    texts = [g["text"] for g in load_json(js)["regressions"]]
    expect(texts and all("(best of 1; noise 0% and 0%; limit 2x)" in t for t in texts), f"slowdown message: {texts[:2]}")
    for factor, noise in ((3, 1.5), (1, 0.6)):  # every kernel exactly 3x slower, the noise of each run stated
        rep = load_json(base_json)
        for res in rep["results"]:
            res["kernel_seconds"] = max(res["kernel_seconds"], 1e-6) * factor
            res["kernel_launches"], res["kernel_noise"] = 5, noise
        save(rep, os.path.join(tmp, f"noisy-{noise}.json"))
    noisy_base, noisy_slow = os.path.join(tmp, "noisy-0.6.json"), os.path.join(tmp, "noisy-1.5.json")
    r = run("diff", noisy_base, noisy_slow, "--max-slowdown", "2", "--json", js)
    expect(r.returncode == 0 and "slower" not in kinds(load_json(js)),
           f"3x within a noise of 60% and 150% (limit 3.1x): {r.returncode} {kinds(load_json(js))}")
    r = run("diff", noisy_base, noisy_slow, "--max-slowdown", "3.5", "--json", js)
    expect(r.returncode == 0, f"3x under --max-slowdown 3.5: {r.returncode}")
    quiet = load_json(noisy_slow)
    for res in quiet["results"]:
        res["kernel_noise"] = 0.1
    r = run("diff", noisy_base, save(quiet, os.path.join(tmp, "quiet.json")), "--max-slowdown", "2", "--json", js)
    texts = [g["text"] for g in load_json(js)["regressions"]]
    expect(r.returncode == 1 and texts and all("3.00x (best of 5; noise 60% and 10%; limit 2x)" in t for t in texts),
           f"3x beyond a noise of 60% and 10%: {r.returncode} {texts[:2]}")

    # Error in ULPs of the magnitude: reported; regresses (ulp-drift) only with --max-drift.
    drift = load_json(base_json)
    for res in drift["results"]:
        if res["metrics"] and res["metrics"]["magnitude_ulp"]["p99"] is not None:
            res["metrics"]["magnitude_ulp"]["p99"] = res["metrics"]["magnitude_ulp"]["p99"] * 4 + 1
    drift_path = save(drift, os.path.join(tmp, "drift.json"))
    r = run("diff", base_json, drift_path)
    expect(r.returncode == 0, f"ULP drift without a limit: {r.returncode}")
    r = run("diff", base_json, drift_path, "--max-drift", "1.5", "--json", js)
    expect(r.returncode == 1 and set(kinds(load_json(js))) == {"ulp-drift"}, f"ULP drift with a limit: {r.returncode}")

    # Bad input: exit 2, one line naming the file, no output written.
    other = os.path.join(tmp, "other.toml")
    open(other, "w").write(SMALL_SUITE.replace('name = "cli-small"', 'name = "other"'))
    r = run("run", "--cases", other, "--variant", "fp32-naive", "--out", os.path.join(tmp, "other"))
    v1 = load_json(base_json)
    v1["schema_version"] = 1
    check_json = os.path.join(tmp, "check.json")
    save({"schema": "mqacheck.check", "schema_version": 2}, check_json)
    open(os.path.join(tmp, "garbage.json"), "w").write("{ not json")
    shard = load_json(base_json)
    shard["shard"] = {"index": 1, "count": 2}
    out = os.path.join(tmp, "never.json")
    for args, message in [
        ([base_json, os.path.join(tmp, "other")], "is a report of suite 'cli-small'"),
        ([base_json, os.path.join(tmp, "missing.json")], "missing.json: cannot read: No such file or directory"),
        ([save(v1, os.path.join(tmp, "v1.json")), base_json], "v1.json: report schema version 1; this mqacheck reads version 2"),
        ([check_json, base_json], "check.json: schema 'mqacheck.check', not a run report"),
        ([os.path.join(tmp, "garbage.json"), base_json], "garbage.json: not JSON: parse error at line 1"),
        ([base_json, save(shard, os.path.join(tmp, "shard.json"))], "the report of shard 1/2 only: put the shards together"),
        ([base_json, base_json, "--max-slowdown", "0.5"], "--max-slowdown 0.5: expected a factor of at least 1"),
        ([base_json, base_json, "--max-drift", "0.5"], "--max-drift 0.5: expected a factor of at least 1"),
    ]:
        r = run("diff", *args, "--json", out, "--markdown", out + ".md")
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1
               and r.stdout == "" and not os.path.exists(out) and not os.path.exists(out + ".md"),
               f"diff {args}: rc={r.returncode} {r.stderr!r}")
    r = run("diff", base_json, os.path.join(again, "report.json"), "--json", base_json)
    expect(r.returncode == 2 and "BASELINE" in r.stderr and load_json(base_json)["suite"] == "cli-small",
           f"--json onto an input: {r.returncode} {r.stderr!r}")

finish("diff")
