#!/usr/bin/env python3
"""`run --shard I/N` and `mqacheck merge` from the outside, literally: the quick suite
run whole and as 3 shards; the merged JSON equals the unsharded one with the timing fields
removed, the JUnit with its times removed, the Markdown and the HTML byte for byte. Shards are
deterministic and follow the documented rule (pair = case_index * variants + variant_index,
shard I runs pair mod N = I - 1). Shards that overlap or miss pairs, reports of other suites or
schema versions: exit 2, one line, nothing written. Usage: merge_test.py MQACHECK_BINARY."""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, expect, finish, load_json, run, untimed  # noqa: E402
QUICK = os.path.join(ROOT, "cases", "quick.toml")


def untimed_xml(text):
    return re.sub(r' time="[^"]*"', "", text)


def read(folder, name):
    with open(os.path.join(folder, name)) as f:
        return f.read()


def kernel_shards(tmp):
    """Shards of `run --kernel` merge only when they ran the same kernel command, operation and
    contract: otherwise exit 2, one line naming both files and the field that differs."""
    adapter = f"{sys.executable} {os.path.join(ROOT, 'tests', 'cli', 'adapters', 'numpy_adapter.py')}"
    suite = os.path.join(tmp, "kernel.toml")
    with open(suite, "w") as f:
        f.write('[suite]\nname = "kernel-shards"\n[defaults]\nm = 8\nn = 32\nheads = 2\nhead_dim = 32\n'
                '[[case]]\nname = "causal"\nlayout = { kind = "causal" }\n'
                '[[case]]\nname = "sliding"\nlayout = { kind = "sliding", window = 5 }\n')
    env = dict(os.environ, TMPDIR=tmp, OPENBLAS_NUM_THREADS="1")

    def shard(name, index, *args):
        out = os.path.join(tmp, name)
        r = run("run", "--cases", suite, "--shard", f"{index}/2", "--out", out, *args, env=env)
        # Under an exact contract the fp32 kernel has findings (exit 1): still a shard to merge.
        expect(r.returncode in (0, 1) and os.path.exists(os.path.join(out, "report.json")),
               f"kernel shard {name}: {r.returncode} {r.stdout[-300:]} {r.stderr}")
        return os.path.join(out, "report.json")

    kernel = ["--kernel", adapter, "--accumulate", "fp32"]
    first, second = shard("k1", 1, *kernel), shard("k2", 2, *kernel)
    merged = os.path.join(tmp, "k-merged")
    r = run("merge", first, second, "--out", merged)
    expect(r.returncode == 0, f"kernel shards of one run merge: {r.returncode} {r.stderr}")
    if r.returncode == 0:
        kernel_record = load_json(os.path.join(merged, "report.json"))["kernel"]
        expect(kernel_record.get("operation") == "prefill", f"report.json records the operation: {kernel_record}")
    for name, args, field in [
        ("k2-command", ["--kernel", adapter + " --fresh", "--accumulate", "fp32"], "kernel command (--kernel)"),
        ("k2-operation", [*kernel, "--operation", "both"], "operation (--operation)"),
        ("k2-contract", ["--kernel", adapter, "--accumulate", "exact"], "declared contract"),
        ("k2-builtin", ["--variant", "exact"], "judged a kernel (run --kernel)"),
    ]:
        other = shard(name, 2, *args)
        out = os.path.join(tmp, "k-never")
        r = run("merge", first, other, "--out", out)
        expect(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and first in r.stderr and
               other in r.stderr and field in r.stderr and not os.path.exists(out),
               f"merge of kernel shards, {name}: rc={r.returncode} {r.stderr!r}")


with tempfile.TemporaryDirectory() as tmp:
    kernel_shards(tmp)
    whole = os.path.join(tmp, "whole")
    r = run("run", "--cases", QUICK, "--out", whole)
    expect(r.returncode == 0, f"the quick suite unsharded: {r.returncode} {r.stdout[-300:]}")
    shards = [os.path.join(tmp, f"shard{i}") for i in (1, 2, 3)]
    for i, out in enumerate(shards, 1):
        r = run("run", "--cases", QUICK, "--shard", f"{i}/3", "--out", out)
        # A shard judges its own pairs; mutant coverage waits for the merge.
        expect(r.returncode == 0 and f"shard {i}/3" in r.stdout, f"shard {i}/3: {r.returncode} {r.stdout[-300:]}")
    merged = os.path.join(tmp, "merged")
    r = run("merge", *[os.path.join(s, "report.json") for s in shards], "--out", merged)
    expect(r.returncode == 0 and "every expectation holds" in r.stdout, f"merge: {r.returncode} {r.stdout} {r.stderr}")

    a, b = load_json(os.path.join(whole, "report.json")), load_json(os.path.join(merged, "report.json"))
    expect(untimed(a) == untimed(b), "merged report.json == unsharded report.json, timing fields removed")
    expect(len(b["results"]) > 400 and b["shard"] is None and b["expectations_hold"], "the merged report is whole")
    expect(untimed_xml(read(whole, "report.xml")) == untimed_xml(read(merged, "report.xml")),
           "merged report.xml == unsharded report.xml, times removed")
    expect(read(whole, "summary.md") == read(merged, "summary.md"), "merged summary.md == unsharded")
    expect(read(whole, "report.html") == read(merged, "report.html"), "merged report.html == unsharded")
    expect(abs(b["seconds"] - sum(load_json(os.path.join(s, "report.json"))["seconds"] for s in shards)) < 1e-6,
           "merged seconds: the shards' machine time")

    # Shards follow the documented rule and are deterministic.
    cases = [c["case"] for c in a["cases"]]
    variants = [v["variant"] for v in a["variants"]]
    for i, s in enumerate(shards, 1):
        rep = load_json(os.path.join(s, "report.json"))
        expect(rep["shard"] == {"index": i, "count": 3}, f"shard {i} marks itself")
        pairs = [(x["case"], x["variant"]) for x in rep["results"] + rep["skipped"]]
        expect(all((cases.index(c) * len(variants) + variants.index(v)) % 3 == i - 1 for c, v in pairs),
               f"shard {i}/3 runs exactly the pairs with pair mod 3 = {i - 1}")
        expect(len(pairs) == len([p for p in range(len(cases) * len(variants)) if p % 3 == i - 1]),
               f"shard {i}/3 runs every pair it owns")
        xml = read(s, "report.xml")
        expect('<property name="shard" value="%d/3"/>' % i in xml and "<skipped" in xml,
               f"shard {i}'s JUnit marks the shard and leaves mutant coverage to the merge")
    again = os.path.join(tmp, "again2")
    r = run("run", "--cases", QUICK, "--shard", "2/3", "--out", again)
    expect(untimed(load_json(os.path.join(again, "report.json"))) == untimed(load_json(os.path.join(shards[1], "report.json"))),
           "shard 2/3 twice: the same report")

    # Bad input: exit 2, one line naming what is wrong, no --out created.
    other = os.path.join(tmp, "other.toml")
    with open(other, "w") as f:
        f.write('[suite]\nname = "other"\n[[case]]\nname = "c"\nm = 4\nn = 8\nheads = 1\nhead_dim = 32\n'
                'layout = { kind = "causal" }\n')
    r = run("run", "--cases", other, "--variant", "exact", "--shard", "2/3", "--out", os.path.join(tmp, "other"))
    v1 = load_json(os.path.join(shards[0], "report.json"))
    v1["schema_version"] = 1
    with open(os.path.join(tmp, "v1.json"), "w") as f:
        json.dump(v1, f)
    s1, s2, s3 = (os.path.join(s, "report.json") for s in shards)
    out = os.path.join(tmp, "never")
    for args, message in [
        ([s1, s3], "shard 2/3 is missing"),
        ([s1, s2, s3, again], "are both shard 2/3: their pairs overlap"),
        ([s1, os.path.join(tmp, "other"), s3], "are shards of different runs: the suites differ"),
        ([os.path.join(tmp, "v1.json"), s2, s3], "v1.json: report schema version 1"),
        ([os.path.join(whole, "report.json"), s2, s3], "not a shard's report"),
        ([s1, s2, os.path.join(tmp, "nowhere.json")], "nowhere.json: cannot read"),
    ]:
        r = run("merge", *args, "--out", out)
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
               not os.path.exists(out) and not [n for n in os.listdir(tmp) if n.startswith(".never")],
               f"merge {[os.path.basename(os.path.dirname(a)) for a in args]}: rc={r.returncode} {r.stderr!r}")
    before = read(shards[0], "report.json")
    r = run("merge", s1, s2, s3, "--out", shards[0])
    expect(r.returncode == 2 and "would replace" in r.stderr and read(shards[0], "report.json") == before,
           f"--out onto a shard's folder: {r.returncode} {r.stderr!r}")
    for bad in ("0/3", "4/3", "x", "1/0"):
        r = run("run", "--cases", QUICK, "--shard", bad, "--out", out)
        expect(r.returncode == 2 and f"--shard '{bad}'" in r.stderr and not os.path.exists(out),
               f"run --shard {bad}: {r.returncode} {r.stderr!r}")

    # The same shard read from a Slurm array task: the same pairs, so the same report but for the
    # source it records; diff compares it with the shard given by hand as two runs of one shard.
    slurm = os.path.join(tmp, "slurm2")
    slurm_env = dict(os.environ, SLURM_ARRAY_TASK_ID="7", SLURM_ARRAY_TASK_MIN="6", SLURM_ARRAY_TASK_COUNT="3")
    r = run("run", "--cases", QUICK, "--shard", "auto", "--out", slurm, env=slurm_env)
    expect(r.returncode == 0 and "shard 2/3 (from slurm: " in r.stdout, f"--shard auto in task 7 of 6-8: {r.stdout[:300]}")
    if r.returncode == 0:
        a2, s2_auto = untimed(load_json(os.path.join(again, "report.json"))), untimed(load_json(os.path.join(slurm, "report.json")))
        expect(s2_auto["shard"].pop("source") == {"scheduler": "slurm", "variables": {
            "SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "6", "SLURM_ARRAY_TASK_COUNT": "3"}} and a2 == s2_auto,
               "--shard auto in a Slurm task: shard 2/3's report, with its source recorded")
        r = run("diff", os.path.join(again, "report.json"), os.path.join(slurm, "report.json"))
        expect(r.returncode == 0, f"diff of shard 2/3 by hand and from Slurm: {r.returncode} {r.stderr}")

    # A folder of shards as a scheduler's tasks leave them: one subfolder per task, or the files.
    def shard_folder(name, reports, as_files=False):
        folder = os.path.join(tmp, name)
        os.mkdir(folder)
        for k, report in enumerate(reports):
            if as_files:
                shutil.copy(report, os.path.join(folder, f"task-{k}.json"))
            else:
                os.mkdir(os.path.join(folder, f"task-{k}"))
                shutil.copy(report, os.path.join(folder, f"task-{k}", "report.json"))
        return folder

    for name, as_files in (("tasks", False), ("task-files", True)):
        folder = shard_folder(name, [s3, s1, s2], as_files)
        out = os.path.join(tmp, f"merged-{name}")
        r = run("merge", folder, "--out", out)
        expect(r.returncode == 0 and "3 shards" in r.stdout, f"merge of the folder {name}: {r.returncode} {r.stderr}")
        if r.returncode == 0:
            expect(untimed(load_json(os.path.join(out, "report.json"))) == untimed(a),
                   f"merge of the folder {name} == the unsharded report, timing fields removed")
    four = os.path.join(tmp, "four1")
    r = run("run", "--cases", QUICK, "--shard", "1/4", "--out", four)
    out = os.path.join(tmp, "never")
    for name, reports, message in [
        ("missing", [s1, s3], "shard 2/3 is missing"),
        ("doubled", [s1, s2, s3, os.path.join(again, "report.json")], "are both shard 2/3"),
        ("other-n", [s1, s2, s3, os.path.join(four, "report.json")], "shards of one run have the same N"),
        ("other-suite", [s1, s2, os.path.join(tmp, "other", "report.json")], "the suites differ"),
        ("empty", [], "a folder with no shard reports"),
    ]:
        folder = shard_folder(f"folder-{name}", reports)
        r = run("merge", folder, "--out", out)
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
               not os.path.exists(out), f"merge of the folder {name}: rc={r.returncode} {r.stderr!r}")

finish("shards and merge")
