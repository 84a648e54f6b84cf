#!/usr/bin/env python3
"""Ctrl-C (once or twice, and SIGTERM) during `run --kernel` leaves nothing behind: no --out folder, no hidden
staging folder next to it, no scratch folder under TMPDIR, and mqacheck ends by the signal, as a
shell expects. The signal lands while a slow adapter is working on the first case, after the
reports' staging folder and the scratch folder exist. Usage: run_kernel_interrupt_test.py MQACHECK_BINARY."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish, suite_toml  # noqa: E402

# An adapter (docs/protocol.md) that notes its first request in a file, then takes its time. It
# echoes a request's "id" where there is one.
SLOW_ADAPTER = '''
import json, sys, time
started = sys.argv[1]
for line in sys.stdin:
    request = json.loads(line)
    open(started, "a").write(request["bundle"] + "\\n")
    time.sleep(60)
    answer = {"ok": False, "error": "too slow"}
    if "id" in request:
        answer["id"] = request["id"]
    print(json.dumps(answer), flush=True)
'''


def wait_for(predicate, process, limit=60):
    end = time.monotonic() + limit
    while time.monotonic() < end and process.poll() is None:
        if predicate():
            return True
        time.sleep(0.02)
    return False


with tempfile.TemporaryDirectory() as name:
    tmp = Path(name)
    work = tmp / "work"
    scratch = tmp / "scratch"
    work.mkdir()
    scratch.mkdir()
    (tmp / "slow.py").write_text(SLOW_ADAPTER)
    suite = tmp / "slow.toml"
    shape = dict(m=8, n=32, heads=2, head_dim=32, layout=dict(kind="causal"))
    suite.write_text(suite_toml("slow", [dict(name="a", **shape), dict(name="b", **shape)]))
    env = dict(os.environ, TMPDIR=str(scratch))
    # (signal, sent twice): a second Ctrl-C acts at once, in the signal handler, which removes the
    # scratch folder with its folder per case too.
    for sig, twice in ((signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGINT, True)):
        started = tmp / f"started-{sig.name}-{twice}"
        out = work / "reports"
        command = f"{sys.executable} {tmp / 'slow.py'} {started}"
        # Default dispositions: a background job of a script would otherwise inherit SIGINT ignored.
        p = subprocess.Popen([BIN, "run", "--cases", str(suite), "--kernel", command, "--accumulate", "fp32",
                              "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)])
        reached = wait_for(started.exists, p)
        staged = sorted(x.name for x in work.iterdir())
        p.send_signal(sig)
        if twice:
            # After the first is delivered (two pending signals are one) and before mqacheck acts
            # on it (it polls every 100 ms). On a machine too loaded to deliver the first within
            # 2 ms the two are one, and the run only shows the one-signal path again.
            time.sleep(0.002)
            p.send_signal(sig)
        _, stderr = p.communicate(timeout=60)
        expect(reached, f"{sig.name}: the adapter got the first case")
        expect(staged != [], f"{sig.name}: the reports' staging folder existed when the signal came: {staged}")
        expect(p.returncode == -sig and ("interrupted" in stderr or twice), f"{sig.name}: rc={p.returncode} {stderr!r}")
        left = sorted(x.name for x in work.iterdir())
        expect(left == [], f"{sig.name}: left next to --out: {left}")
        expect(sorted(os.listdir(scratch)) == [], f"{sig.name}: left in TMPDIR: {os.listdir(scratch)}")

finish("run --kernel interrupted")
