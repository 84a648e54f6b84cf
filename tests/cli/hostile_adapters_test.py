#!/usr/bin/env python3
"""`mqacheck run --kernel` against adapters that try to pass without computing
(adapters/hostile_adapter.py; docs/protocol.md, "What a kernel can see"): copying the reference
from the folder it is given, searching the scratch folder for one, linking its output to another
file, answering with a stale output, writing after it answered, leaving a process writing behind
it, looking into mqacheck's /proc entries, planting links where mqacheck writes. Every case of
the quick suite fails or is an error, never a pass; `certify` refuses each; nothing outside the
scratch folder is touched and the scratch folder is gone afterwards. The honest adapter still
passes and certifies. Usage: hostile_adapters_test.py MQACHECK."""
import concurrent.futures
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, ROOT, as_clean_build, expect, finish, run  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
HOSTILE = f"{sys.executable} {os.path.join(HERE, 'adapters', 'hostile_adapter.py')}"
HONEST = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"
ATTACKS = ["copy-reference", "sibling", "link-out", "stale", "write-after", "fork-writer", "proc-snoop", "plant-links"]
CONTRACT = ["--accumulate", "fp32", "--operation", "both", "--threads", "1", "--timeout", "60"]

EXACT = "exact-float64"  # computes the answer exactly while declaring float32: passes, suspected

with tempfile.TemporaryDirectory() as tmp:
    scratch = os.path.join(tmp, "scratch")
    os.makedirs(scratch)
    victim_folder = os.path.join(tmp, "victim")
    os.makedirs(victim_folder)
    victim = os.path.join(victim_folder, "precious.txt")
    open(victim, "w").write("a file no adapter may make mqacheck overwrite\n")
    env = dict(os.environ, TMPDIR=scratch, OPENBLAS_NUM_THREADS="1")

    def command(attack):
        return (f"{HOSTILE} --attack {attack} --record {os.path.join(tmp, attack + '.record')} --victim {victim} "
                f"--suite {QUICK}")

    def judged(name, kernel, *extra):
        out = os.path.join(tmp, name)
        r = run(*extra, "--cases", QUICK, "--kernel", kernel, *CONTRACT, "--out", out, env=env)
        report = os.path.join(out, "report.json")
        return r, (json.load(open(report)) if os.path.exists(report) else None)

    honest, honest_report = judged("honest", HONEST, "run")
    expect(honest.returncode == 0 and honest_report and
           [x["outcome"] for x in honest_report["results"]] == ["pass"] * 19,
           f"the honest adapter passes every case: rc={honest.returncode} {honest.stderr[-600:]}")
    expect(honest_report and not any("suspicion" in x for x in honest_report["results"]),
           "the honest adapter is never suspected")
    baseline = as_clean_build(os.path.join(tmp, "honest", "report.json"))
    certified, _ = judged("honest-certified", HONEST, "certify", "--baseline", baseline)
    expect(certified.returncode == 0 and "NOT CERTIFIED" not in certified.stdout,
           f"the honest adapter certifies: rc={certified.returncode} {certified.stdout[-400:]}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        runs = dict(zip(ATTACKS, pool.map(lambda a: judged(a, command(a), "run"), ATTACKS)))
        certificates = dict(zip(ATTACKS, pool.map(
            lambda a: judged(a + "-certify", command(a), "certify", "--baseline", baseline), ATTACKS)))
        exact, exact_report = judged(EXACT, command(EXACT), "run")
        exact_certificate, _ = judged(EXACT + "-certify", command(EXACT), "certify", "--baseline", baseline)

    # Computing the answer exactly is no bug in the values: the prefill cases pass, but every one
    # with enough elements the declared float32 arithmetic rounds away from the exact value
    # carries the suspicion note, in report.json, summary.md and the certificate, which refuses.
    prefill = [x for x in exact_report["results"] if x["case"] not in ("paged", "paged-2d", "paged-dont-care")]
    suspected = [x["case"] for x in prefill if "suspicion" in x]
    expect(all(x["outcome"] == "pass" for x in prefill), f"{EXACT}: its values pass")
    expect(len(suspected) >= 10 and all(x["suspicion"]["matched"] >= 0.9 * x["suspicion"]["differing"]
                                        for x in prefill if "suspicion" in x),
           f"{EXACT}: suspected on {len(suspected)} of {len(prefill)} prefill cases: {suspected}")
    summary = open(os.path.join(tmp, EXACT, "summary.md")).read()
    expect("suspicious: the output has the exact reference's bits" in summary, f"{EXACT}: summary.md says so")
    certificate = json.load(open(os.path.join(tmp, EXACT + "-certify", "certificate.json")))
    expect(exact_certificate.returncode != 0 and certificate["certified"] is False and
           any("suspicious" in why for why in certificate["reasons"]), f"{EXACT}: certify refuses, saying why")

    for attack in ATTACKS:
        r, report = runs[attack]
        if report is None:
            expect(False, f"{attack}: no report, rc={r.returncode} {r.stderr[-600:]}")
            continue
        outcomes = {x["case"]: x["outcome"] for x in report["results"]}
        passed = [c for c, o in outcomes.items() if o == "pass"]
        expect(len(outcomes) == 19 and not report["skipped"], f"{attack}: every case of the quick suite is tried")
        expect(not passed, f"{attack}: never a pass ({passed} passed)")
        expect(set(outcomes.values()) <= {"FAIL", "error"}, f"{attack}: each case fails or is an error: {outcomes}")
        expect(r.returncode != 0, f"{attack}: the run's exit status is not 0")
        c, certificate = certificates[attack]
        expect(c.returncode != 0 and "NOT CERTIFIED" in c.stdout, f"{attack}: certify refuses: rc={c.returncode}")

    errors = {a: " ".join(x.get("error", "") for x in runs[a][1]["results"]) for a in ATTACKS if runs[a][1]}
    expect("is a symbolic link" in errors.get("link-out", ""), "link-out: the link is refused, whatever it points at")
    expect("changed after the adapter had answered" in errors.get("fork-writer", ""),
           "fork-writer: the output changed after the answer is that launch's error")
    expect(open(victim).read() == "a file no adapter may make mqacheck overwrite\n" and
           os.listdir(victim_folder) == ["precious.txt"], f"plant-links: nothing outside the scratch folder written: "
           f"{os.listdir(victim_folder)}")
    snooped = [json.loads(line) for line in open(os.path.join(tmp, "proc-snoop.record"))]
    expect(len(snooped) >= 18, "proc-snoop looked on every launch")
    if os.geteuid() != 0:  # root (CI containers) may read any process: then nothing there to find is the defence
        expect(all(s.get("fd") != "listed" and s.get("mem") != "opened" for s in snooped),
               f"mqacheck's /proc/<pid>/fd and mem are closed to the adapter: {snooped[:2]}")
    expect(os.listdir(scratch) == [], f"the scratch folder is removed: {os.listdir(scratch)}")

finish("hostile_adapters")
