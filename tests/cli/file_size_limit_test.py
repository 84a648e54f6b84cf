#!/usr/bin/env python3
"""A file-size limit (`ulimit -f`, RLIMIT_FSIZE) reached while writing: the write fails like any
other (EFBIG), never SIGXFSZ ending mqacheck half-way. Exit status 2, one line naming the path,
and no partial file or staging folder left. Usage: file_size_limit_test.py MQACHECK_BINARY."""
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish, suite_toml  # noqa: E402

# reference.npy alone is 256 KiB, past a 100 KiB limit.
SUITE = suite_toml("limited", [dict(name="wide", m=64, n=1024, heads=2, head_dim=32, layout=dict(kind="causal"))])


def limited(*args, cwd):
    """mqacheck under `ulimit -f 100` (KiB), as a shell user would run it."""
    line = " ".join(f"'{a}'" for a in (BIN, *map(str, args)))
    return subprocess.run(["bash", "-c", f"ulimit -f 100; exec {line}"], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


with tempfile.TemporaryDirectory() as name:
    tmp = Path(name)
    work = tmp / "work"
    work.mkdir()
    (tmp / "limited.toml").write_text(SUITE)
    out = work / "bundle"
    r = limited("gen", "--cases", tmp / "limited.toml", "--case", "wide", "--out", out, cwd=tmp)
    expect(r.returncode == 2, f"gen past the file-size limit: exit 2, not a signal: rc={r.returncode} {r.stderr!r}")
    expect(len(r.stderr.strip().splitlines()) == 1 and str(out) in r.stderr and "File too large" in r.stderr,
           f"one line naming the path and the reason: {r.stderr!r}")
    expect(sorted(p.name for p in work.iterdir()) == [], f"nothing left: {sorted(p.name for p in work.iterdir())}")
    # Within the limit the same command works.
    small = suite_toml("small", [dict(name="narrow", m=4, n=64, heads=2, head_dim=32, layout=dict(kind="causal"))])
    (tmp / "small.toml").write_text(small)
    r = limited("gen", "--cases", tmp / "small.toml", "--case", "narrow", "--out", out, cwd=tmp)
    expect(r.returncode == 0 and (out / "reference.npy").is_file(), f"a bundle within the limit: {r.stderr!r}")

finish("file-size limit")
