#!/usr/bin/env python3
"""`mqacheck certify` from the outside: a run certified against its own baseline writes
the certificate (what, suite and fingerprints, contracts, mqacheck version, machine, verdicts,
diff) with the run's reports; planted regressions (a mutant no case catches any more, a case whose
inputs changed) are NOT CERTIFIED, exit 1; a bad baseline is exit 2 before the run, nothing
written. The quick suite against the baseline in reports/baselines/ certifies: the baseline is
current. Usage: certify_test.py MQACHECK_BINARY."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import (  # noqa: E402
    RAGGED_CASE, ROOT, SMALL_SUITE, SMALL_VARIANTS, as_clean_build, expect, finish, load_json, run)

NUMPY = f"{sys.executable} {os.path.join(os.path.dirname(os.path.abspath(__file__)), 'adapters', 'numpy_adapter.py')}"
FILES = ["certificate.json", "certificate.md", "report.html", "report.json", "report.xml", "summary.md"]


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(mqacheck VERSION"):
                return line.split()[2]


with tempfile.TemporaryDirectory() as tmp:
    suite, fewer = os.path.join(tmp, "suite.toml"), os.path.join(tmp, "fewer.toml")
    open(suite, "w").write(SMALL_SUITE + RAGGED_CASE)
    open(fewer, "w").write(SMALL_SUITE)
    base = os.path.join(tmp, "base")
    r = run("run", "--cases", suite, *SMALL_VARIANTS, "--out", base)
    expect(r.returncode == 0, f"baseline run: {r.returncode}")
    baseline = os.path.join(base, "report.json")
    as_clean_build(baseline)

    # Certified: the same suite and variants against their own baseline.
    cert = os.path.join(tmp, "cert")
    r = run("certify", "--cases", suite, *SMALL_VARIANTS, "--baseline", baseline, "--out", cert)
    expect(r.returncode == 0 and "CERTIFIED" in r.stdout and "NOT CERTIFIED" not in r.stdout,
           f"certify against its own baseline: {r.returncode} {r.stdout[-400:]} {r.stderr}")
    expect(sorted(os.listdir(cert)) == FILES, f"certify writes {FILES}: {sorted(os.listdir(cert))}")
    c = load_json(os.path.join(cert, "certificate.json"))
    b = load_json(baseline)
    expect(c["schema"] == "mqacheck.certificate" and c["certified"] is True and c["reasons"] == [], "certified")
    expect(c["suite"]["name"] == "cli-small" and c["suite"]["file"] == suite, "the suite and its file")
    expect([x["inputs_fingerprint"] for x in c["suite"]["cases"]] == [x["inputs_fingerprint"] for x in b["cases"]]
           and all(len(x["inputs_fingerprint"]) == 16 for x in c["suite"]["cases"]), "every case's inputs fingerprint")
    expect([v["variant"] for v in c["subject"]["variants"]] == ["fp32-naive", "mutant-inclusive-end", "mutant-tail-tile"]
           and all(v["contract"].startswith("dot ") for v in c["subject"]["variants"]) and c["subject"]["kernel"] is None,
           f"what was certified, with the contracts declared: {c['subject']}")
    expect(c["mqacheck"]["version"] == cmake_version() and c["mqacheck"]["commit"] != "", f"mqacheck {c['mqacheck']}")
    expect(c["machine"]["system"].startswith(os.uname().sysname) and c["machine"]["cores"] >= 1 and c["machine"]["cpu"],
           f"the machine: {c['machine']}")
    expect(len(c["verdicts"]) == 6 and {v["outcome"] for v in c["verdicts"]} == {"pass", "caught", "silent"},
           f"the verdict per case: {c['verdicts']}")
    expect(c["diff"]["regressed"] is False and len(c["diff"]["pairs"]) == 6, "the diff")
    md = open(os.path.join(cert, "certificate.md")).read()
    expect(md.startswith("# mqacheck certificate: CERTIFIED") and "## Contracts declared" in md and
           "## Suite and inputs" in md and "## mqacheck diff" in md and c["suite"]["cases"][0]["inputs_fingerprint"] in md,
           "certificate.md")
    expect(load_json(os.path.join(cert, "report.json"))["results"] and "<svg" in open(os.path.join(cert, "report.html")).read(),
           "the run's reports beside the certificate")

    # Planted: the case that caught the tail-tile mutant is gone from the suite.
    r = run("certify", "--cases", fewer, *SMALL_VARIANTS, "--baseline", baseline, "--out", os.path.join(tmp, "fewer"))
    c = load_json(os.path.join(tmp, "fewer", "certificate.json"))
    expect(r.returncode == 1 and "NOT CERTIFIED" in r.stdout and c["certified"] is False,
           f"a mutant no longer caught: {r.returncode} {r.stdout[-400:]}")
    kinds = {x["kind"] for x in c["diff"]["regressions"]}
    expect(kinds == {"case-missing", "mutant-blind"} and any("mutant-tail-tile" in why for why in c["reasons"]),
           f"the reasons: {c['reasons']}")
    expect(open(os.path.join(tmp, "fewer", "certificate.md")).read().startswith("# mqacheck certificate: NOT CERTIFIED"),
           "NOT CERTIFIED in the Markdown")

    # Planted: the baseline was made from other inputs for one case.
    stale = load_json(baseline)
    stale["cases"][0]["inputs_fingerprint"] = "0000000000000000"
    with open(os.path.join(tmp, "stale.json"), "w") as f:
        json.dump(stale, f)
    r = run("certify", "--cases", suite, *SMALL_VARIANTS, "--baseline", os.path.join(tmp, "stale.json"), "--out",
            os.path.join(tmp, "stale"))
    expect(r.returncode == 1 and "case-changed" in r.stdout, f"stale baseline: {r.returncode}")

    # A kernel's contract weaker than the baseline's: refused unless accepted, and the certificate says so.
    some = ["--cases", os.path.join(ROOT, "cases", "quick.toml"), "--case", "causal", "--case", "sliding"]
    k_base = os.path.join(tmp, "k-base")
    r = run("run", *some, "--kernel", NUMPY, "--accumulate", "fp32", "--out", k_base)
    expect(r.returncode == 0, f"kernel baseline under fp32: {r.returncode} {r.stdout[-300:]} {r.stderr}")
    as_clean_build(os.path.join(k_base, "report.json"))
    r = run("certify", *some, "--kernel", NUMPY, "--accumulate", "bf16", "--baseline", k_base, "--out",
            os.path.join(tmp, "k-bf16"))
    c = load_json(os.path.join(tmp, "k-bf16", "certificate.json"))
    expect(r.returncode == 1 and "NOT CERTIFIED" in r.stdout and c["certified"] is False and
           any("contract-weakened" in why and "dot fp32" in why and "dot bf16" in why for why in c["reasons"]),
           f"a bf16 contract against an fp32 baseline: {r.returncode} {c['reasons']} {r.stdout[-600:]}")
    r = run("certify", *some, "--kernel", NUMPY, "--accumulate", "bf16", "--baseline", k_base, "--out",
            os.path.join(tmp, "k-accepted"), "--accept-weaker-contract")
    c = load_json(os.path.join(tmp, "k-accepted", "certificate.json"))
    md = open(os.path.join(tmp, "k-accepted", "certificate.md")).read()
    expect(r.returncode == 0 and c["certified"] is True and len(c["accepted_weaker_contract"]) == 1 and
           "dot bf16" in c["accepted_weaker_contract"][0] and
           "accepted a weaker contract (--accept-weaker-contract)" in md and "--accept-weaker-contract" in r.stdout,
           f"accepted: {r.returncode} {c['accepted_weaker_contract']} {r.stdout[-600:]}")
    c = load_json(os.path.join(cert, "certificate.json"))
    expect(c["accepted_weaker_contract"] == [] and c["failures"] == [], "nothing accepted, nothing failing")

    # A kernel that breaks: each failure once among the reasons, its first finding on the terminal.
    r = run("certify", *some, "--kernel", NUMPY + " --bug inclusive-end", "--accumulate", "fp32", "--baseline", k_base,
            "--out", os.path.join(tmp, "k-broken"))
    c = load_json(os.path.join(tmp, "k-broken", "certificate.json"))
    for case in ("causal", "sliding"):
        expect(sum(f"case '{case}'" in why for why in c["reasons"]) == 1,
               f"{case}: one reason, not an expectation and its regression apart: {c['reasons']}")
    expect(r.returncode == 1 and any("regressed (model-fails)" in why for why in c["reasons"]),
           f"the regression said on the expectation's line: {c['reasons']}")
    first = [f for f in c["failures"] if f["case"] == "causal"]
    expect(len(first) == 1 and first[0]["first_finding"].startswith("mask-") and " - diagnosis: " in first[0]["first_finding"]
           and first[0]["first_finding"] in r.stdout, f"the first finding, detail and diagnosis shown: {first} {r.stdout[-800:]}")

    # A baseline whose mqacheck cannot be rebuilt (uncommitted changes, unknown commit): refused
    # before the run unless --accept-dirty-baseline, which the certificate records.
    for commit in ("351768e5f35a-dirty", "unknown"):
        dirty = load_json(baseline)
        dirty["mqacheck"]["commit"] = commit
        with open(os.path.join(tmp, f"{commit}.json"), "w") as f:
            json.dump(dirty, f)
        r = run("certify", "--cases", suite, *SMALL_VARIANTS, "--baseline", os.path.join(tmp, f"{commit}.json"), "--out",
                os.path.join(tmp, "never"))
        expect(r.returncode == 2 and f"'{commit}'" in r.stderr and "--accept-dirty-baseline" in r.stderr and
               len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(os.path.join(tmp, "never")),
               f"a baseline of commit {commit}: rc={r.returncode} {r.stderr!r}")
    r = run("certify", "--cases", suite, *SMALL_VARIANTS, "--baseline", os.path.join(tmp, "351768e5f35a-dirty.json"),
            "--out", os.path.join(tmp, "dirty-accepted"), "--accept-dirty-baseline")
    c = load_json(os.path.join(tmp, "dirty-accepted", "certificate.json"))
    md = open(os.path.join(tmp, "dirty-accepted", "certificate.md")).read()
    expect(r.returncode == 0 and c["certified"] is True and "351768e5f35a-dirty" in (c["accepted_dirty_baseline"] or "")
           and "(--accept-dirty-baseline)" in md and "(--accept-dirty-baseline)" in r.stdout,
           f"dirty baseline accepted: {r.returncode} {c.get('accepted_dirty_baseline')} {r.stdout[-600:]}")
    expect(load_json(os.path.join(cert, "certificate.json"))["accepted_dirty_baseline"] is None,
           "a clean baseline: nothing accepted")

    # Bad input: exit 2 before the run, one line, nothing written.
    other = load_json(baseline)
    other["suite"] = "quick"
    v1 = load_json(baseline)
    v1["schema_version"] = 1
    for name, report in (("other.json", other), ("v1.json", v1)):
        with open(os.path.join(tmp, name), "w") as f:
            json.dump(report, f)
    out = os.path.join(tmp, "never")
    for args, message in [
        (["--baseline", os.path.join(tmp, "other.json")], "a report of suite 'quick'"),
        (["--baseline", os.path.join(tmp, "v1.json")], "v1.json: report schema version 1; this mqacheck reads version 2"),
        (["--baseline", os.path.join(tmp, "none.json")], "none.json: cannot read"),
        (["--baseline", baseline, "--variant", "no-such"], "unknown variant 'no-such'"),
        (["--baseline", baseline, "--max-slowdown", "0"], "--max-slowdown 0: expected a factor of at least 1"),
    ]:
        r = run("certify", "--cases", suite, *args, "--out", out)
        expect(r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
               and not os.path.exists(out), f"certify {args}: rc={r.returncode} {r.stderr!r}")
    before = open(baseline).read()
    r = run("certify", "--cases", suite, *SMALL_VARIANTS, "--baseline", baseline, "--out", base)
    expect(r.returncode == 2 and "would replace" in r.stderr and open(baseline).read() == before,
           f"--out onto the baseline's folder: {r.returncode} {r.stderr!r}")

    # The baseline in the repository is current: the quick suite certifies against it.
    r = run("certify", "--cases", os.path.join(ROOT, "cases", "quick.toml"), "--baseline",
            os.path.join(ROOT, "reports", "baselines", "quick.json"), "--out", os.path.join(tmp, "quick"))
    expect(r.returncode == 0, f"quick against reports/baselines/quick.json: {r.returncode} {r.stdout[-1500:]} {r.stderr}")

finish("certify")
