#!/usr/bin/env python3
"""`run --devices` from the outside: CPU workers (cpu:N) and named devices stand in for a host's
GPUs. The merged report equals the plain run's with the timing fields removed; the cases are split
whole, largest first to the least loaded worker, by m*n*heads*head_dim (recomputed here); each
worker's --kernel adapter sees its device in CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES; bad
--devices values, --devices all on a host without GPUs and --devices with --shard: exit 2, one
line, nothing written; CUDA_VISIBLE_DEVICES set and empty is no device at all, and
ROCR_VISIBLE_DEVICES alone lists the devices (each worker told its position in it); a worker that
dies, exit 2 naming it, the others ended and no scratch folder left; SIGTERM or SIGKILL to the
parent ends every worker and adapter and leaves nothing. `certify --devices` certifies as `certify`
alone.
Usage: run_devices_test.py MQACHECK_BINARY."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, ROOT, as_clean_build, expect, finish, load_json, run, suite_toml, untimed  # noqa: E402

ADAPTER = os.path.join(ROOT, "tests", "cli", "adapters", "numpy_adapter.py")
# Sizes that make the split visible: one case outweighs the others together.
CASES = [
    dict(name="wide", m=16, n=256, heads=4, head_dim=64, layout={"kind": "causal"}),
    dict(name="small-causal", m=8, n=32, heads=2, head_dim=32, layout={"kind": "causal"}),
    dict(name="small-sliding", m=8, n=32, heads=2, head_dim=32, layout={"kind": "sliding", "window": 5}),
    dict(name="mid", m=8, n=64, heads=2, head_dim=64, layout={"kind": "causal"}),
    dict(name="tiny", m=4, n=16, heads=1, head_dim=32, layout={"kind": "causal"}),
]


def expected_split(workers):
    """The documented split, independently: (case count, share of the cost in %) per worker."""
    costs = [c["m"] * c["n"] * c["heads"] * c["head_dim"] for c in CASES]
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    load, count = [0] * min(workers, len(costs)), [0] * min(workers, len(costs))
    for i in order:
        w = load.index(min(load))
        load[w] += costs[i]
        count[w] += 1
    return [(count[w], round(100 * load[w] / sum(costs))) for w in range(len(load))]


def printed_split(stdout, name, weighed="estimated"):
    return [(int(c), int(p)) for c, p in re.findall(name + r" \d+: (\d+) cases, \d+ pairs, (\d+)% of the " + weighed +
                                                    " work", stdout)]


def alive(pid):
    """True while `pid` runs (a zombie, ended but not yet reaped, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def children(pid):
    """The processes whose parent is `pid`."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    return out


def wait_until(condition, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "devices.toml")
    with open(suite, "w") as f:
        f.write(suite_toml("devices", CASES))
    plain = os.path.join(tmp, "plain")
    r = run("run", "--cases", suite, "--out", plain)
    # The built-in mutants break expectations on this suite (exit 1): the split runs must say so too.
    plain_status = r.returncode
    expect(plain_status == 1 and os.path.exists(os.path.join(plain, "report.json")), f"plain run: {r.returncode}")
    for workers in (1, 2, 3, 7):
        out = os.path.join(tmp, f"cpu{workers}")
        r = run("run", "--cases", suite, "--devices", f"cpu:{workers}", "--out", out)
        expect(r.returncode == plain_status and os.path.exists(os.path.join(out, "report.json")),
               f"--devices cpu:{workers}: {r.returncode} {r.stdout[-300:]} {r.stderr}")
        expect(f"on {min(workers, len(CASES))} workers:" in r.stdout,
               f"cpu:{workers}: the summary counts the workers started: {r.stdout[-300:]}")
        if not os.path.exists(os.path.join(out, "report.json")):
            continue
        merged = load_json(os.path.join(out, "report.json"))
        expect(untimed(merged) == untimed(load_json(os.path.join(plain, "report.json"))),
               f"--devices cpu:{workers}: the merged report equals the plain run's, timings removed")
        expect(merged["shard"] is None, "the merged report is the whole run's")
        expect(printed_split(r.stdout, "CPU worker") == expected_split(workers),
               f"cpu:{workers}: the split printed {printed_split(r.stdout, 'CPU worker')} is the documented one "
               f"{expected_split(workers)}")

    # --balance-by: an earlier report's timings weigh the cases. The tiny case, timed as the
    # slowest by far, gets a worker of its own.
    timed = load_json(os.path.join(plain, "report.json"))
    for t in timed["timings"]:
        t["total_seconds"] = 1000.0 if t["case"] == "tiny" else 0.001
    with open(os.path.join(tmp, "timed.json"), "w") as f:
        json.dump(timed, f)
    r = run("run", "--cases", suite, "--devices", "cpu:2", "--balance-by", os.path.join(tmp, "timed.json"))
    expect(r.returncode == plain_status and printed_split(r.stdout, "CPU worker", "measured") == [(1, 100), (4, 0)],
           f"--balance-by: the case timed slowest alone: {r.returncode} {r.stdout[:400]} {r.stderr}")
    # Every pair skipped (sm90-wgmma takes no e4m3fnuz case): not one case judged, exit 2 alone and
    # over workers alike.
    skipped_suite = os.path.join(tmp, "skipped.toml")
    with open(skipped_suite, "w") as f:
        f.write(suite_toml("skipped", [dict(c, q_format="e4m3fnuz", k_format="e4m3fnuz", profile="hip-satfinite")
                                       for c in CASES[1:3]]))
    for args in ([], ["--devices", "cpu:2"]):
        r = run("run", "--cases", skipped_suite, "--variant", "sm90-wgmma", *args)
        expect(r.returncode == 2 and "not one case was judged: every pair (2) was skipped" in r.stdout,
               f"every pair skipped {args}: {r.returncode} {r.stdout[-400:]} {r.stderr}")
    timed["suite"] = "another"
    with open(os.path.join(tmp, "other-suite.json"), "w") as f:
        json.dump(timed, f)

    # certify --devices: the same certificate as certify alone, against a baseline of the plain run.
    # Correct variants only, so that the run certifies.
    correct = ["--variant", "fp32-naive", "--variant", "exact"]
    r = run("run", "--cases", suite, *correct, "--out", os.path.join(tmp, "plain-correct"))
    expect(r.returncode == 0, f"the correct variants' plain run: {r.returncode} {r.stdout[-300:]}")
    baseline = os.path.join(tmp, "baseline.json")
    shutil.copy(os.path.join(tmp, "plain-correct", "report.json"), baseline)
    as_clean_build(baseline)
    certified = {}
    for name, args in (("alone", []), ("devices", ["--devices", "cpu:2"])):
        out = os.path.join(tmp, f"cert-{name}")
        r = run("certify", "--cases", suite, *correct, "--baseline", baseline, "--out", out, *args)
        certificate = os.path.join(out, "certificate.json")
        expect(("CPU worker 2:" in r.stdout) == bool(args), f"certify {name}: workers only with --devices")
        expect(r.returncode == 0 and os.path.exists(certificate), f"certify {name}: {r.returncode} {r.stderr}")
        if os.path.exists(certificate):
            c = load_json(certificate)
            certified[name] = (r.returncode, c["certified"], c["reasons"], c["failures"])
    expect(len(certified) == 2 and certified["alone"] == certified["devices"] and certified["alone"][0] == 0,
           f"certify --devices cpu:2 certifies as certify alone: {certified}")

    # A --kernel adapter per device, told its device: the log of what each adapter saw.
    seen = os.path.join(tmp, "seen.txt")
    kernel = (f'echo "$CUDA_VISIBLE_DEVICES $HIP_VISIBLE_DEVICES ${{ROCR_VISIBLE_DEVICES-unset}}" >> {seen}; '
              f"exec {sys.executable} {ADAPTER}")
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        env.pop(variable, None)
    plain_kernel = os.path.join(tmp, "plain-kernel")
    r = run("run", "--cases", suite, "--kernel", kernel, "--accumulate", "fp32", "--out", plain_kernel, env=env)
    plain_kernel_status = r.returncode
    expect(plain_kernel_status == 0, f"plain --kernel run: {r.returncode} {r.stderr}")
    os.remove(seen)
    # ROCR_VISIBLE_DEVICES filters first and HIP numbers what it leaves: a worker per entry, told
    # its position, ROCR_VISIBLE_DEVICES passed on as it was.
    for devices, variable_env, names in [("3,5", {}, ["3 3 unset", "5 5 unset"]),
                                         ("all", {"CUDA_VISIBLE_DEVICES": "4,7"}, ["4 4 unset", "7 7 unset"]),
                                         ("all", {"ROCR_VISIBLE_DEVICES": "5,9"}, ["0 0 5,9", "1 1 5,9"]),
                                         ("all", {"HIP_VISIBLE_DEVICES": "1", "ROCR_VISIBLE_DEVICES": "5,9"},
                                          ["1 1 5,9"])]:
        out = os.path.join(tmp, f"kernel-{devices.replace(',', '-')}-{'-'.join(variable_env)}")
        r = run("run", "--cases", suite, "--kernel", kernel, "--accumulate", "fp32", "--devices", devices, "--out", out,
                env=dict(env, **variable_env))
        expect(r.returncode == plain_kernel_status and os.path.exists(os.path.join(out, "report.json")),
               f"--kernel with --devices {devices}: {r.returncode} {r.stdout[-300:]} {r.stderr}")
        lines = set()
        if os.path.exists(seen):  # absent where no adapter started
            with open(seen) as f:
                lines = set(f.read().split("\n")) - {""}
            os.remove(seen)
        expect(lines == set(names), f"--devices {devices} {variable_env}: each adapter saw its device: {lines}")
        if os.path.exists(os.path.join(out, "report.json")):
            a = untimed(load_json(os.path.join(plain_kernel, "report.json")))
            b = untimed(load_json(os.path.join(out, "report.json")))
            # The adapter's own times, measured per launch, differ from run to run.
            measured = {"adapter", "kernel_noise", "kernel_seconds_median", "warmup_seconds"}
            a["results"] = [{k: v for k, v in x.items() if k not in measured} for x in a["results"]]
            b["results"] = [{k: v for k, v in x.items() if k not in measured} for x in b["results"]]
            expect(a == b, f"--devices {devices}: the merged kernel report equals the plain run's")

    # Bad input: exit 2, one line naming what is wrong, nothing written.
    never = os.path.join(tmp, "never")
    no_gpu_env = dict(os.environ)
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        no_gpu_env.pop(variable, None)
    host_has_gpu = os.path.isdir("/proc/driver/nvidia/gpus") or os.path.isdir("/sys/class/kfd")
    bad = [
        (["--devices", "0,0"], "device 0 is given twice"),
        (["--devices", "cpu:0"], "expected cpu:N with N between 1 and 256"),
        (["--devices", "cpu:2x"], "expected cpu:N with N between 1 and 256"),
        (["--devices", "gpu one"], "expected all, cpu:N, or device numbers"),
        (["--devices", "1,"], "expected all, cpu:N, or device numbers"),
        (["--devices", "cpu:2", "--shard", "1/2"], "--devices and --shard"),
        (["--devices", "cpu:2", "--balance-by", os.path.join(tmp, "other-suite.json")], "a report of suite 'another'"),
        (["--balance-by", os.path.join(tmp, "timed.json")], "--balance-by requires --devices"),
        (["--devices", "cpu:2", "--brief"], "--brief with --devices"),
        (["--devices", "cpu:2", "--verbose"], "--verbose with --devices"),
        (["--devices", "cpu:2", "--timing"], "--timing with --devices"),
    ]
    if not host_has_gpu:
        bad.append((["--devices", "all"], "--devices all: no GPU on this host"))
    for args, message in bad:
        r = run("run", "--cases", suite, *args, "--out", never, env=no_gpu_env)
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
               not os.path.exists(never), f"run {args}: rc={r.returncode} {r.stderr!r}")
    # Set and empty hides every device: no device at all, whatever the host has, and said so.
    for variable in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        r = run("run", "--cases", suite, "--devices", "all", "--out", never, env=dict(no_gpu_env, **{variable: ""}))
        expect(r.returncode == 2 and f"{variable} is set and empty" in r.stderr and
               len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(never),
               f"--devices all with {variable}='': rc={r.returncode} {r.stderr!r}")

    # The scratch root of the runs below, so that what a run leaves in it shows.
    scratch = os.path.join(tmp, "scratch")
    os.mkdir(scratch)
    scratch_env = dict(os.environ, TMPDIR=scratch)

    # A worker that dies (its adapter kills it) leaves no report: exit 2 naming the worker, after
    # the end of its output; nothing written, and no scratch folder left, its own included.
    r = run("run", "--cases", suite, "--kernel", "kill -9 $PPID", "--devices", "cpu:2", "--out", never, env=scratch_env)
    expect(r.returncode == 2 and "wrote no report (exit status 137)" in r.stderr and "CPU worker" in r.stderr and
           not os.path.exists(never), f"a worker killed: rc={r.returncode} {r.stderr!r}")
    expect(os.listdir(scratch) == [], f"a worker killed: left in the scratch root: {os.listdir(scratch)}")

    # The first worker to fail ends the others at once: worker 1's adapter never answers, worker
    # 2's kills its worker. Worker 1 is stopped long before its adapter's sleep would end.
    pids = os.path.join(tmp, "adapter-pids")
    start = time.monotonic()
    r = run("run", "--cases", suite, "--kernel", f'echo $$ >> {pids}; [ "$HIP_VISIBLE_DEVICES" = 1 ] && kill -9 $PPID; '
            "exec sleep 60", "--devices", "0,1", "--out", never, env=scratch_env, timeout=120)
    expect(r.returncode == 2 and "the worker on GPU 1 wrote no report (exit status 137)" in r.stderr and
           time.monotonic() - start < 30 and not os.path.exists(never),
           f"one worker failed: rc={r.returncode} after {time.monotonic() - start:.1f} s {r.stderr!r}")
    with open(pids) as f:
        adapters = [int(p) for p in f.read().split()]
    expect(wait_until(lambda: not any(alive(p) for p in adapters), 5),
           f"one worker failed: the other's adapter was ended: {[p for p in adapters if alive(p)]}")
    expect(os.listdir(scratch) == [], f"one worker failed: left in the scratch root: {os.listdir(scratch)}")

    # SIGTERM to the parent alone (not its process group) ends every worker and adapter; SIGKILL
    # too, through the workers' parent-death signal. Nothing in --out, nothing in the scratch root
    # after SIGTERM (after SIGKILL the parent removes nothing: its own scratch folder stays).
    for sig in (signal.SIGTERM, signal.SIGKILL):
        os.remove(pids)
        # Default dispositions: a background job of a script would otherwise inherit SIGINT ignored.
        p = subprocess.Popen([BIN, "run", "--cases", suite, "--kernel", f"echo $$ >> {pids}; exec sleep 60",
                              "--devices", "cpu:2", "--out", never], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=scratch_env,
                             preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGINT, signal.SIGTERM)])

        def both_started():
            return os.path.exists(pids) and len(open(pids).read().split()) == 2
        started = wait_until(both_started, 60)
        workers = children(p.pid)
        p.send_signal(sig)
        _, stderr = p.communicate(timeout=60)
        adapters = [int(x) for x in open(pids).read().split()] if os.path.exists(pids) else []
        expect(started and len(workers) == 2, f"{sig.name}: two workers and two adapters ran: {workers} {adapters}")
        expect(p.returncode == -sig, f"{sig.name}: the parent ends by the signal: rc={p.returncode} {stderr!r}")
        if sig == signal.SIGTERM:
            expect("interrupted" in stderr, f"SIGTERM: the parent says it was interrupted: {stderr!r}")
        survivors = [x for x in workers + adapters if not wait_until(lambda: not alive(x), 10)]
        expect(survivors == [], f"{sig.name}: workers and adapters still running: {survivors}")
        expect(not os.path.exists(never), f"{sig.name}: nothing written to --out")
        if sig == signal.SIGTERM:
            expect(os.listdir(scratch) == [], f"SIGTERM: left in the scratch root: {os.listdir(scratch)}")
        for x in survivors:
            os.kill(x, signal.SIGKILL)

finish("run --devices")
