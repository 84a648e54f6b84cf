#!/usr/bin/env python3
"""`mqacheck --version`: the version (CMake's project version) and the git commit of the build,
the same two a report carries, exit 0. Usage: version_test.py MQACHECK_BINARY."""
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, SMALL_SUITE, expect, finish, load_json, run  # noqa: E402

with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
    version = next(line.split()[2] for line in f if line.startswith("project(mqacheck VERSION"))

r = run("--version")
m = re.fullmatch(r"mqacheck (\S+) \((\S+)\)\n", r.stdout)
expect(r.returncode == 0 and m and m.group(1) == version and r.stderr == "",
       f"--version: {r.returncode} {r.stdout!r} {r.stderr!r}")

with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "suite.toml")
    open(suite, "w").write(SMALL_SUITE)
    r2 = run("run", "--cases", suite, "--variant", "fp32-naive", "--out", os.path.join(tmp, "out"))
    expect(r2.returncode == 0, f"run: {r2.returncode} {r2.stderr}")
    built = load_json(os.path.join(tmp, "out", "report.json"))["mqacheck"]
    expect(m is not None and built == {"version": m.group(1), "commit": m.group(2)},
           f"--version says what reports carry: {built} {r.stdout!r}")

finish("--version")
