#!/usr/bin/env python3
"""What `mqacheck run` prints on the terminal: quiet by default (the table, the skipped pairs as one
count line, no timings), --verbose lists the skipped pairs, --timing the stages of each case (for a
kernel behind an adapter, the stages mqacheck measured around it), --brief keeps CI's log short,
and a built-in mutant's findings are diagnosed only with --diagnose-mutants.
Usage: run_terminal_test.py MQACHECK_BINARY."""
import json
import os
import re
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, expect, finish, run  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
INCLUSIVE_END = os.path.join(ROOT, "cases", "bugs", "11-inclusive-end.toml")
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"


def main_sh_run_arguments(out):
    """The arguments ci/main.sh gives `mqacheck run` (its last line), --out replaced by `out`."""
    line = [x for x in open(os.path.join(ROOT, "ci", "main.sh")).read().splitlines() if x.startswith("exec ")][-1]
    words = shlex.split(line)[2:]  # past `exec build-main/mqacheck`
    words[words.index("--out") + 1] = out
    return [os.path.join(ROOT, w) if w.endswith(".toml") else w for w in words]


def report(folder):
    return json.load(open(os.path.join(folder, "report.json")))


with tempfile.TemporaryDirectory() as tmp:
    # CI's main job: the quick suite, as ci/main.sh runs it, fits on a screen.
    out = os.path.join(tmp, "main")
    r = run(*main_sh_run_arguments(out))
    lines = r.stdout.splitlines()
    rep = report(out) if os.path.exists(os.path.join(out, "report.json")) else {"skipped": [], "results": []}
    expect(r.returncode == 0 and "every expectation holds" in r.stdout, f"ci/main.sh's run: rc={r.returncode} {r.stdout[-600:]}")
    expect(len(lines) < 40, f"ci/main.sh's run prints {len(lines)} lines, under 40 wanted:\n{r.stdout[:3000]}")
    skipped = len(rep["skipped"])
    expect(skipped > 0 and f"{skipped} pairs skipped: --verbose lists them" in lines, f"one count line for {skipped} skipped pairs")
    expect(not any(x.startswith("skipped: ") for x in lines), "no skipped pair listed by default")
    expect("output buffers" not in r.stdout and "reference" not in r.stdout, "no per-case timing by default")

    # The table by default: one row per (case, variant), each as expected here.
    out = os.path.join(tmp, "table")
    r = run("run", "--cases", INCLUSIVE_END, "--out", out)
    rows = [x for x in r.stdout.splitlines() if re.match(r"\S+\s+(exact|fp32-naive|fp32-blocked|mutant-inclusive-end)\s", x)]
    cases = len(report(out)["cases"])
    expect(r.returncode == 0 and cases > 1 and len(rows) == cases * 4, f"one row per case x variant: {len(rows)}\n{r.stdout}")
    expect("output buffers" not in r.stdout, "no stage line by default")

    # --verbose: every skipped pair with its reason.
    out = os.path.join(tmp, "verbose")
    r = run("run", "--cases", QUICK, "--variant", "sm90-wgmma", "--variant", "fp32-naive", "--verbose", "--out", out)
    listed = [x for x in r.stdout.splitlines() if x.startswith("skipped: ")]
    rep = report(out)
    expect(r.returncode == 0 and rep["skipped"] and len(listed) == len(rep["skipped"]) and "--verbose lists" not in r.stdout,
           f"--verbose lists {len(listed)} of {len(rep['skipped'])} skipped pairs:\n{r.stdout[-1500:]}")

    # --timing: the per-case table and each case's stages.
    r = run("run", "--cases", INCLUSIVE_END, "--timing")
    stage_lines = [x for x in r.stdout.splitlines() if ": output buffers " in x]
    expect(r.returncode == 0 and len(stage_lines) == cases and "reference" in r.stdout, f"--timing, built-in:\n{r.stdout}")

    # A kernel behind an adapter: its stages are the ones measured around the adapter, never the
    # built-in runner's (which it does not go through); the best of launch 2 and the timing
    # launches is the kernel's time and launch 1, the warm-up, is reported apart.
    out = os.path.join(tmp, "kernel")
    r = run("run", "--cases", INCLUSIVE_END, "--kernel", ADAPTER, "--accumulate", "fp32", "--timing", "--out", out)
    rep = report(out)
    stage_lines = [x for x in r.stdout.splitlines() if ": inputs written " in x]
    expect(r.returncode == 0 and len(stage_lines) == len(rep["results"]) == cases, f"--timing under --kernel:\n{r.stdout}")
    expect("output buffers" not in r.stdout and "launches 0.00" not in r.stdout, "no built-in stage under --kernel")
    for x in stage_lines:
        turns = [float(t) for t in re.findall(r"adapter's turn (\d+\.\d+) s", x)]
        expect(len(turns) == 2 and all(t > 0 for t in turns) and "output read" in x and "comparator" in x,
               f"two measured adapter turns: {x}")
    for x in rep["results"]:
        seconds = x["adapter"]["launch_seconds"]
        timed = [seconds[1]] + x["adapter"]["timing_launch_seconds"]
        expect(len(seconds) == 2 and x["kernel_seconds"] == min(timed) and x["kernel_launches"] == len(timed) == 4,
               f"kernel time is the best of launch 2 and the timing launches: {x['kernel_seconds']} {timed}")
    expect("warm-up (launch 1 of each case" in r.stdout, f"the warm-up apart:\n{r.stdout[-800:]}")

    # An adapter that never answers: the stages it never reached are not printed as zeros.
    r = run("run", "--cases", QUICK, "--kernel", "exit 1", "--timing")
    stage_lines = [x for x in r.stdout.splitlines() if re.match(r"\S+: (inputs written|nothing measured)", x)]
    expect(r.returncode == 2 and stage_lines and not any("launch 1" in x or "comparator" in x for x in stage_lines)
           and any("nothing measured (the adapter was not reached)" in x for x in stage_lines),
           f"--timing, an adapter that never answers:\n{r.stdout[-2500:]}")

    # A built-in mutant: caught by class without a diagnosis; diagnosed when asked.
    for flag, diagnosed in (([], False), (["--diagnose-mutants"], True)):
        out = os.path.join(tmp, f"mutant{len(flag)}")
        r = run("run", "--cases", INCLUSIVE_END, "--variant", "mutant-inclusive-end", *flag, "--out", out)
        found = [f for x in report(out)["results"] for f in x["findings"]]
        expect(r.returncode == 0 and "mutants caught 1/1" in r.stdout and found, f"mutant caught {flag}: {r.stdout[-400:]}")
        causes = [f["diagnosis"]["cause"] for f in found if f["diagnosis"]]
        expect(("inclusive-end" in causes) if diagnosed else not causes, f"mutant diagnosis {flag}: {causes}")

finish("run_terminal")
