#!/usr/bin/env python3
"""`mqacheck run --kernel` with an adapter that answers some cases {"ok": false, "unsupported": WHY}
(docs/protocol.md): those cases are skipped with the reason (report.json, JUnit, the terminal's
count), never errors; the reason is one bounded line whatever the adapter wrote; a kernel that ran
launch 1 of a case and calls launch 2 unsupported is that case's error. Usage:
unsupported_cases_test.py MQACHECK."""
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import expect, finish, run, suite_toml  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"
SUITE = suite_toml("unsupported", [
    dict(name="eight-heads", m=16, n=96, layout=dict(kind="causal")),
    dict(name="four-heads", m=16, n=80, heads=4, layout=dict(kind="causal")),
    dict(name="eight-again", m=12, n=64, layout=dict(kind="packed", requests=3)),
], defaults=dict(heads=8, head_dim=32))


def kernel_run(tmp, name, *adapter_flags):
    out = os.path.join(tmp, name)
    r = run("run", "--cases", os.path.join(tmp, "suite.toml"), "--kernel", " ".join([ADAPTER, *adapter_flags]),
            "--accumulate", "fp32", "--threads", "1", "--out", out)
    report = json.load(open(os.path.join(out, "report.json"))) if os.path.exists(os.path.join(out, "report.json")) else None
    junit = ET.parse(os.path.join(out, "report.xml")).getroot() if os.path.exists(os.path.join(out, "report.xml")) else None
    return r, report, junit


with tempfile.TemporaryDirectory() as tmp:
    open(os.path.join(tmp, "suite.toml"), "w").write(SUITE)

    # The four-head case is not the kernel's: skipped with its reason; the rest pass, so the run passes.
    r, rep, junit = kernel_run(tmp, "skips", "--unsupported-heads", "4")
    expect(r.returncode == 0, f"unsupported case: exit {r.returncode} (expected 0)\n{r.stdout[-1500:]}{r.stderr[-800:]}")
    expect("1 pair skipped" in r.stdout, f"the terminal counts the skip: {r.stdout[-800:]}")
    if rep:
        expect(sorted(x["case"] for x in rep["results"]) == ["eight-again", "eight-heads"] and
               all(x["outcome"] == "pass" and not x.get("error") for x in rep["results"]),
               f"judged results: {[(x['case'], x['outcome'], x.get('error')) for x in rep['results']]}")
        expect([s["case"] for s in rep["skipped"]] == ["four-heads"], f"skipped: {rep['skipped']}")
        reason = rep["skipped"][0]["reason"] if rep["skipped"] else ""
        expect(reason == "the kernel does not take this case: 4 heads: this kernel is built for other head counts",
               f"the skip's reason: {reason!r}")
    if junit is not None:
        suite = junit if junit.tag == "testsuite" else junit.find("testsuite")
        skipped = [(c.get("name"), c.find("skipped").get("message")) for c in suite.iter("testcase") if c.find("skipped") is not None]
        expect(len(skipped) == 1 and skipped[0][0] == "four-heads" and "4 heads" in skipped[0][1],
               f"JUnit <skipped>: {skipped}")
        expect(suite.get("skipped") == "1" and suite.get("errors") == "0", f"JUnit counts: {suite.attrib}")
    else:
        expect(False, "no report.xml")

    # Hostile reason text: cut to one bounded line, control bytes shown as \xNN, markup escaped in JUnit.
    r, rep, junit = kernel_run(tmp, "hostile", "--unsupported-heads", "4", "--hostile-reason")
    expect(r.returncode == 0, f"hostile reason: exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-800:]}")
    if rep and rep["skipped"]:
        reason = rep["skipped"][0]["reason"]
        expect(len(reason.encode()) < 450 and "\x1b" not in reason and "\n" not in reason and "\\x1B[2J" in reason
               and reason.endswith("bytes)"), f"hostile reason kept as: {reason[:200]!r}... ({len(reason)} chars)")
    else:
        expect(False, f"hostile reason: no skip in {rep and rep['skipped']}")
    expect(junit is not None, "hostile reason: report.xml parses")  # ET.parse above would have thrown otherwise
    expect("\x1b" not in r.stdout, "no terminal escape reaches the terminal")

    # A case whose launch 1 ran and whose launch 2 is called unsupported: the case's error.
    r, rep, junit = kernel_run(tmp, "lie", "--unsupported-heads", "4", "--unsupported-on", "launch-2")
    expect(r.returncode == 1, f"unsupported on launch 2: exit {r.returncode} (expected 1)\n{r.stdout[-1500:]}")
    if rep:
        lied = [x for x in rep["results"] if x["case"] == "four-heads"]
        expect(len(lied) == 1 and lied[0]["outcome"] == "error" and "launch 2" in lied[0].get("error", "")
               and "on every launch or on none" in lied[0].get("error", ""), f"the lie: {lied}")
        expect(rep["skipped"] == [], f"nothing skipped after a lie: {rep['skipped']}")

finish("unsupported cases")
