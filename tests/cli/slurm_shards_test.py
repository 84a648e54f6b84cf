#!/usr/bin/env python3
"""The quick suite on a real scheduler: a one-node Slurm cluster started here (tests/support/
local_slurm.py), ci/slurm/submit.sh's job array of 4 shards, each `run --shard auto`, and its
merge job (afterok). The merged report equals the unsharded run's with the timing fields removed;
each shard's report, in the submission's own folder, records the Slurm variables it was read from.
A stale shard left in REPORTS_DIR/shards by an earlier submission is not merged. Skipped
(exit 77, the reason printed) where slurm-wlm and munge are not installed or this is not root.
Usage: slurm_shards_test.py MQACHECK_BINARY."""
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, ROOT, expect, finish, load_json, run, untimed  # noqa: E402
import local_slurm  # noqa: E402

QUICK = os.path.join(ROOT, "cases", "quick.toml")
SHARDS = 4


why = local_slurm.why_unavailable()
if why:
    print(f"skipped: no local Slurm cluster: {why}")
    sys.exit(77)
# CTest's timeout ends a test with SIGTERM first: the cluster's `with` still cleans up.
signal.signal(signal.SIGTERM, lambda *_: sys.exit("ended by SIGTERM"))

with tempfile.TemporaryDirectory() as tmp, local_slurm.Cluster(cpus=len(os.sched_getaffinity(0))) as cluster:
    reports = os.path.join(tmp, "reports")
    # What an earlier submission to the same REPORTS_DIR left (Slurm's job ids start at 1): merged
    # too, it would fail the merge job (exit 2, not a shard's report).
    stale = os.path.join(reports, "shards", "0", "shard-0")
    os.makedirs(stale)
    with open(os.path.join(stale, "report.json"), "w") as f:
        f.write("{}")
    env = dict(cluster.env, MQACHECK=BIN)
    submit = subprocess.run([os.path.join(ROOT, "ci", "slurm", "submit.sh"), str(SHARDS), reports, "--cases", QUICK],
                            capture_output=True, text=True, env=env, cwd=tmp)
    expect(submit.returncode == 0 and "merge job" in submit.stdout,
           f"ci/slurm/submit.sh: {submit.returncode} {submit.stdout} {submit.stderr}")
    words = submit.stdout.split()
    array_job, merge_job = words[2], words[words.index("merge") + 2].rstrip(":")
    print(submit.stdout.strip())

    # The unsharded run, here, while the array waits for its CPUs or runs.
    whole = os.path.join(tmp, "whole")
    r = run("run", "--cases", QUICK, "--out", whole)
    expect(r.returncode == 0, f"the quick suite unsharded: {r.returncode} {r.stdout[-300:]}")

    finished = cluster.wait([array_job, merge_job], seconds=900)
    expect(finished, "the array and its merge job end within 15 minutes")
    tasks = cluster.job_state(array_job)
    expect(len(tasks) == SHARDS and all(s == ("COMPLETED", "0:0") for s in tasks), f"every array task completed: {tasks}")
    merge_state = cluster.job_state(merge_job)
    expect(merge_state == [("COMPLETED", "0:0")], f"the merge job ran after them and passed: {merge_state}")
    if not finished or tasks != [("COMPLETED", "0:0")] * SHARDS or merge_state != [("COMPLETED", "0:0")]:
        for name in sorted(os.listdir(os.path.join(reports, "logs"))):
            with open(os.path.join(reports, "logs", name), errors="replace") as f:
                print(f"--- {name}\n" + "\n".join(f.read().splitlines()[-8:]))

    merged = os.path.join(reports, "merged", "report.json")
    expect(os.path.exists(merged), f"the merge job wrote {merged}\n{cluster.logs()}")
    if os.path.exists(merged):
        a, b = load_json(os.path.join(whole, "report.json")), load_json(merged)
        expect(untimed(a) == untimed(b), "merged report.json == unsharded report.json, timing fields removed")
        expect(b["shard"] is None and b["expectations_hold"] and len(b["results"]) > 400, "the merged report is whole")
    for task in range(SHARDS):
        shard = os.path.join(reports, "shards", array_job, f"shard-{task}", "report.json")
        if not os.path.exists(shard):
            expect(False, f"array task {task} wrote {shard}")
            continue
        s = load_json(shard)["shard"] or {}
        source = s.get("source", {})
        expect(s.get("index") == task + 1 and s.get("count") == SHARDS and source.get("scheduler") == "slurm" and
               source.get("variables", {}).get("SLURM_ARRAY_TASK_ID") == str(task) and
               source.get("variables", {}).get("SLURM_ARRAY_TASK_COUNT") == str(SHARDS),
               f"task {task}'s report records its shard and the Slurm variables: {s}")
        with open(os.path.join(reports, "logs", f"shard-{array_job}-{task}.log"), errors="replace") as f:
            log = f.read()
        expect(f"shard {task + 1}/{SHARDS} (from slurm: " in log, f"task {task} printed its shard: {log[:300]}")

finish("slurm shards")
