#!/usr/bin/env python3
"""`mqacheck run --kernel` with adapters that misbehave (adapters/faulty_adapter.py): each fault on
one case is that case's error (or finding), the other cases are still judged, the adapter is
restarted where it died, nothing is left behind (scratch folder, processes), and the exit status
is 2 only when no case could be judged. Ctrl-C stops the run cleanly. Usage: adapter_faults_test.py MQACHECK."""
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish, suite_toml  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
FAULTY = f"{sys.executable} {os.path.join(HERE, 'adapters', 'faulty_adapter.py')}"
TAG = f"faults-test-{os.getpid()}"

SUITE = suite_toml("faults", [dict(name="a", m=8, n=40),
                              dict(name="b", m=8, n=40, layout=dict(kind="random")),
                              dict(name="c", m=6, n=30, q_format="e5m2", k_format="e5m2"),
                              dict(name="d", m=4, n=20)],
                   defaults=dict(heads=4, head_dim=32))


def tagged_processes():
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if TAG.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(int(pid))
        except OSError:
            pass
    return found


with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "faults.toml")
    open(suite, "w").write(SUITE)
    scratch = os.path.join(tmp, "scratch")
    os.makedirs(scratch)
    # Several runs at once on a small CI machine: one thread each, and no OpenBLAS threads spinning.
    env = dict(os.environ, TMPDIR=scratch, OPENBLAS_NUM_THREADS="1")

    def run(name, fault, timeout="5", timing_launches="0"):
        # The faults land on a case's judged launches (1 and 2), and the checks count requests and
        # restarts per case: no timing launches unless a check is about them.
        out = os.path.join(tmp, name)
        r = subprocess.run([BIN, "run", "--cases", suite, "--kernel", f"{FAULTY} --tag {TAG} --fault {fault}",
                            "--timeout", timeout, "--threads", "1", "--timing-launches", timing_launches, "--out", out],
                           capture_output=True, text=True, errors="replace", env=env)
        path = os.path.join(out, "report.json")
        rep = json.load(open(path, errors="replace")) if os.path.exists(path) else None  # strictly: report_text
        return r, rep, out

    # fault on case b: (name, fault, timeout, words in b's error or None for a finding, adapter starts)
    faults = [
        ("crash", "crash --on b", "5", "killed by signal 11 (SIGSEGV", 2),
        # The first request's timeout includes the adapter's start-up: a loaded machine needs a second.
        ("hang", "hang --on b", "2", "no answer within 2 s (--timeout): the adapter's process group was killed", 2),
        ("garbage", "garbage --on b", "5", "not JSON; stdout is reserved for protocol lines", 2),
        # The stray line and the answer may come in one read or two: either message names the line.
        ("noise", "noise --on b", "5", "'loading the kernel... done'", 2),
        ("two-lines", "two-lines --on b", "5", "answered more than one line", 2),
        ("bad-seconds", "bad-seconds --on b", "5", "\"seconds\" is -1, expected a finite number >= 0", 2),
        ("wrong-shape", "wrong-shape --on b", "5", "expected float32 [8, S] with S >= 40 (the case's m and n), found float32 [7, 40]", 1),
        ("wrong-dtype", "wrong-dtype --on b", "5", "found float64 [8, 40]", 1),
        ("refuse", "refuse --on b", "5", "the adapter reported an error: this kernel does not take case b", 1),
        ("crash-2", "crash --on b --launch 2", "5", "launch 2: the adapter closed its stdout without answering", 2),
        ("lie", "lie --on b", "5", None, 1),
        ("exit-after", "exit-after --on b", "5", None, 2),
    ]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda f: (f, run(f[0], f[1], f[2])), faults))
        never = {name: pool.submit(run, name, fault, timeout) for name, fault, timeout in
                 [("silent", "silent", "0.3"), ("exit", "exit", "5")]}
        never = {name: f.result() for name, f in never.items()}

    for (name, fault, _, words, starts), (r, rep, out) in results:
        if rep is None:
            expect(False, f"{name}: no report, rc={r.returncode} {r.stderr}")
            continue
        rows = {x["case"]: x for x in rep["results"]}
        b = rows["b"]
        others_pass = all(rows[c]["outcome"] == "pass" and rows[c]["verdict"] == "pass" for c in "acd")
        expect(others_pass, f"{name}: the other cases judged and passing")
        expect(rep["kernel"]["adapter_starts"] == starts, f"{name}: adapter started {rep['kernel']['adapter_starts']} times")
        if name == "exit-after":  # ended between requests: restarted, and no case is charged with it
            expect(r.returncode == 0 and b["outcome"] == "pass" and "restarted and asked again" in rep["kernel"]["notes"][0]
                   and "003-c" in rep["kernel"]["notes"][0], f"{name}: rc={r.returncode} {rep['kernel']['notes']}")
            continue
        expect(r.returncode == 1, f"{name}: rc={r.returncode}")
        if words is None:  # "ok" without writing: the poison shows through, a finding, not an error
            expect(b["outcome"] == "FAIL" and [f["class"] for f in b["findings"]] == ["unwritten"] and "error" not in b,
                   f"{name}: {b['outcome']} {b['findings']}")
            continue
        expect(b["outcome"] == "error" and words in b.get("error", ""), f"{name}: error {b.get('error')!r}")
        if name in ("garbage", "noise", "two-lines"):
            expect("stdout is reserved for protocol lines" in b["error"], f"{name}: the hint")
        expect(f"could not be judged on case 'b'" in r.stdout and "error: launch" in r.stdout, f"{name}: table and summary")
        xml = open(os.path.join(out, "report.xml")).read()
        expect('failures="0" errors="1"' in xml and xml.count("<error message=") == 1, f"{name}: JUnit <error>")
        if name == "crash-2":  # launch 1 was judged; its metrics stay
            expect(b["verdict"] == "pass" and b["metrics"] is not None and len(b["adapter"]["launch_seconds"]) == 1,
                   f"crash on launch 2 keeps launch 1's judgement: {b.get('verdict')}")
        else:
            expect(b["verdict"] is None and b["metrics"] is None, f"{name}: an error row has no verdict")
    crash = [rep for (f, (r, rep, out)) in results if f[0] == "crash"][0]
    expect("faulty adapter: crashing on case b" in [x for x in crash["results"] if x["case"] == "b"][0]["error"],
           "the adapter's stderr tail is in the error")

    # An adapter that never answers: every case an error, and after three the rest not attempted; exit 2.
    for name, words in [("silent", "no answer within 0.3 s"), ("exit", "exited with status 3")]:
        r, rep, out = never[name]
        rows = {x["case"]: x for x in rep["results"]}
        expect(r.returncode == 2 and all(rows[c]["outcome"] == "error" for c in "abcd"), f"{name}: rc={r.returncode}")
        expect(words in rows["a"]["error"] and "not attempted" in rows["d"]["error"] and rep["kernel"]["adapter_starts"] == 3,
               f"{name}: {rows['a']['error']!r} / {rows['d']['error']!r}")
        expect(rep["kernel"]["label"] is None and rows["a"]["variant"] == "kernel", f"{name}: no label")
    expect("faulty adapter: exiting at once" in {x["case"]: x for x in never["exit"][1]["results"]}["a"]["error"],
           "the stderr of an adapter that exits at once")

    # Hostile adapters: what they send and leave behind must neither cost the report, nor the
    # later cases, nor a process outliving the run.
    # A timing launch is never judged, but it must succeed: an error there is the case's error.
    r, rep, _ = run("refuse-timing", "refuse --on b --launch 4", "5", "3")
    rows = {x["case"]: x for x in rep["results"]} if rep else {}
    expect(r.returncode == 1 and rows and rows["b"]["outcome"] == "error" and
           "timing launch 4 (not judged, but it must succeed): the adapter reported an error" in rows["b"].get("error", "")
           and all(rows[c]["outcome"] == "pass" for c in "acd"),
           f"refused timing launch: rc={r.returncode} {rows.get('b', {}).get('error')!r}")

    def timed_run(name, fault, timeout="5"):
        start = time.monotonic()
        r, rep, out = run(name, fault, timeout)
        return r, rep, out, time.monotonic() - start

    flood_side, escape_side = os.path.join(tmp, "flood.sizes"), os.path.join(tmp, "escape.pid")
    hostile = {
        "bad-bytes": ("bad-bytes --on b", "5"),
        "long-error": ("long-error --on b", "5"),
        "flood": (f"flood --on b --launch 1 --side {flood_side}", "60"),
        "late-answer": ("late-answer --on b --launch 1", "5"),
        # A long --timeout: the crash must be seen without waiting for it.
        "orphan": ("orphan --on b", "60"),
        "escape": (f"escape --on b --launch 1 --side {escape_side}", "5"),
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        hostile = {name: pool.submit(timed_run, name, fault, timeout) for name, (fault, timeout) in hostile.items()}
        hostile = {name: f.result() for name, f in hostile.items()}

    def report_text(name):
        """report.json, which must exist and be UTF-8 JSON (strictly decoded)."""
        path = os.path.join(hostile[name][2], "report.json")
        if not os.path.exists(path):
            expect(False, f"{name}: no report, rc={hostile[name][0].returncode} {hostile[name][0].stderr[-2000:]}")
            return None
        try:
            return json.loads(open(path, "rb").read().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            expect(False, f"{name}: report.json is not UTF-8 JSON: {e}")
            return None

    def rows_of(name):
        rep = report_text(name)
        return ({x["case"]: x for x in rep["results"]}, rep) if rep else ({}, None)

    # Bytes that are not UTF-8, in the answer and on stderr: shown as \xNN, the report written.
    rows, _ = rows_of("bad-bytes")
    if rows:
        error = rows["b"].get("error", "")
        expect(rows["b"]["outcome"] == "error" and "not JSON" in error and "bad \\xFF byte" in error,
               f"bad-bytes: the line quoted with \\xFF: {error!r}")
        expect("faulty adapter: \\xFF\\xFE bytes that are not UTF-8" in error, f"bad-bytes: the stderr tail: {error!r}")
        expect(all(rows[c]["outcome"] == "pass" for c in "acd"), "bad-bytes: the other cases judged")
    # An answer of three-byte characters quoted at 120 bytes: cut between characters.
    rows, _ = rows_of("long-error")
    if rows:
        error = rows["b"].get("error", "")
        expect(rows["b"]["outcome"] == "error" and "answered more than one line" in error and "\u20ac" * 20 in error,
               f"long-error: {error!r}")
    # 50 MB of stderr: no file grows in the scratch folder, and the later cases run.
    rows, _ = rows_of("flood")
    if rows:
        sizes = [int(x) for x in open(flood_side).read().split()] if os.path.exists(flood_side) else []
        expect(len(sizes) == 8 and max(sizes) < 1 << 20, f"flood: largest scratch file at each request: {sizes}")
        expect(all(rows[c]["outcome"] == "pass" for c in "abcd"), f"flood: {[rows[c]['outcome'] for c in 'abcd']}")
    # The answer to b's launch 1 sent again after launch 2's request: launch 2's protocol error,
    # not a finding (nondeterministic) on b or on the next case.
    rows, rep = rows_of("late-answer")
    if rows:
        error = rows["b"].get("error", "")
        expect(rows["b"]["outcome"] == "error" and error.startswith("launch 2: ")
               and 'answered request "2.1" where the answer to request "2.2" was expected' in error,
               f"late-answer: {rows['b']['outcome']} {error!r}")
        findings = [f["class"] for x in rows.values() for f in x.get("findings", [])]
        expect("nondeterministic" not in findings and all(rows[c]["outcome"] == "pass" for c in "acd"),
               f"late-answer: findings {findings}, {[rows[c]['outcome'] for c in 'acd']}")
        expect(rep["kernel"]["adapter_starts"] == 2, f"late-answer: restarted once: {rep['kernel']['adapter_starts']}")
    # A crash while a child holds stdout: seen at once, not at the 60 s timeout.
    rows, _ = rows_of("orphan")
    elapsed = hostile["orphan"][3]
    if rows:
        error = rows["b"].get("error", "")
        expect(rows["b"]["outcome"] == "error" and "killed by signal 11 (SIGSEGV" in error, f"orphan: {error!r}")
        expect(all(rows[c]["outcome"] == "pass" for c in "acd"), "orphan: the other cases judged")
    expect(elapsed < 30, f"orphan: the run took {elapsed:.1f} s with --timeout 60")
    # A setsid'd `sleep 300`: killed by the end of the run, and noted.
    rows, rep = rows_of("escape")
    escaped = int(open(escape_side).read()) if os.path.exists(escape_side) else 0
    expect(escaped > 0, "escape: the adapter started its child")
    if escaped > 0:
        try:
            os.kill(escaped, 0)
            alive = open(f"/proc/{escaped}/stat").read().split()[2] != "Z"
        except (ProcessLookupError, FileNotFoundError):
            alive = False
        expect(not alive, f"escape: process {escaped} (sleep 300) outlived the run")
        if alive:
            os.kill(escaped, signal.SIGKILL)
        if rep:
            note = f"the adapter left process {escaped} (sleep) running outside its process group; it was killed"
            expect(note in rep["kernel"]["notes"], f"escape: notes {rep['kernel']['notes']}")
            expect(all(rows[c]["outcome"] == "pass" for c in "abcd"), "escape: every case judged")

    expect(os.listdir(scratch) == [], f"scratch folders left behind: {os.listdir(scratch)}")
    expect(tagged_processes() == [], f"adapter processes left behind: {tagged_processes()}")

    # Ctrl-C while the adapter hangs: the adapter stopped, the scratch folder removed, no report,
    # and mqacheck ends by the signal, as a shell expects.
    out = os.path.join(tmp, "interrupted")
    p = subprocess.Popen([BIN, "run", "--cases", suite, "--kernel", f"{FAULTY} --tag {TAG} --fault hang --on a",
                          "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for _ in range(1000):
        if len(tagged_processes()) >= 1 and os.listdir(scratch):
            break
        time.sleep(0.01)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=20)
    expect(p.returncode == -signal.SIGINT and "interrupted" in stderr, f"Ctrl-C: rc={p.returncode} {stderr!r}")
    expect(not os.path.exists(os.path.join(out, "report.json")), "no report after Ctrl-C")
    expect(os.listdir(scratch) == [], f"scratch left behind after Ctrl-C: {os.listdir(scratch)}")
    time.sleep(0.1)
    expect(tagged_processes() == [], f"adapter left behind after Ctrl-C: {tagged_processes()}")

finish("misbehaving adapters")
