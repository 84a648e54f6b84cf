#!/usr/bin/env python3
"""`mqacheck run --out DIR` prints where the reports are as a path a user can paste: one
separator between the folder and report.json, whatever DIR ends with (`--out reports/` once
printed `reports//report.json`). Usage: report_paths_test.py MQACHECK_BINARY."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, ROOT, expect, finish  # noqa: E402
SUITE = os.path.join(ROOT, "cases", "bugs", "11-inclusive-end.toml")


with tempfile.TemporaryDirectory() as tmp:
    for given in ["reports", "reports/", "reports//", "./reports/"]:
        r = subprocess.run([BIN, "run", "--cases", SUITE, "--out", given], capture_output=True, text=True, cwd=tmp)
        lines = [line for line in r.stdout.splitlines() if line.startswith("reports: ")]
        expect(r.returncode == 0 and lines == ["reports: reports/report.json, report.xml, summary.md, report.html"],
               f"--out {given!r}: rc={r.returncode} {lines!r} {r.stderr!r}")
        printed = lines[0].split()[1].rstrip(",") if lines else ""
        expect(os.path.isfile(os.path.join(tmp, printed)), f"--out {given!r}: {printed!r} is not the report")
    absolute = os.path.join(tmp, "abs") + "/"
    r = subprocess.run([BIN, "run", "--cases", SUITE, "--out", absolute], capture_output=True, text=True)
    expect(f"reports: {tmp}/abs/report.json, report.xml, summary.md, report.html" in r.stdout and "//" not in r.stdout,
           f"--out {absolute!r}: {r.stdout[-200:]!r}")

finish("report paths")
