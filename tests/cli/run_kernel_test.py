#!/usr/bin/env python3
"""`mqacheck run --kernel`: a NumPy kernel behind the JSON-lines protocol (adapters/numpy_adapter.py,
stdlib and NumPy only, sharing no code with mqacheck) judged over the quick suite, its planted
bugs caught with their classes, the contract flags and bad arguments. Usage: run_kernel_test.py MQACHECK."""
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, expect, finish  # noqa: E402
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
QUICK = os.path.join(ROOT, "cases", "quick.toml")
ADAPTER = f"{sys.executable} {os.path.join(HERE, 'adapters', 'numpy_adapter.py')}"


def run(*args, env=None):
    return subprocess.run([BIN, "run", *args], capture_output=True, text=True, env=env)


def report(folder):
    return json.load(open(os.path.join(folder, "report.json")))


def classes_by_case(rep):
    return {r["case"]: {f["class"] for f in r["findings"]} for r in rep["results"]}


with tempfile.TemporaryDirectory() as tmp:
    # Several runs at once on a small CI machine: one thread each, and no OpenBLAS threads spinning.
    env = dict(os.environ, TMPDIR=os.path.join(tmp, "scratch"), OPENBLAS_NUM_THREADS="1")
    os.makedirs(env["TMPDIR"])
    # The complete adapter of docs/protocol.md, run as printed there.
    doc = open(os.path.join(ROOT, "docs", "protocol.md")).read()
    example = doc.split("<!-- example: minimal adapter")[1].split("```python\n")[1].split("```")[0]
    open(os.path.join(tmp, "numpy_mqa_adapter.py"), "w").write(example)
    BUGS = [("inclusive-end", "mask-shift", "causal"), ("unwritten-tile", "unwritten", "causal"),
            ("nondeterministic", "nondeterministic", "packed")]
    # The runs are independent (each has its own adapter and scratch folder): run them together.
    jobs = {
        "quick": ["--kernel", ADAPTER, "--accumulate", "fp32"],
        "docs": ["--kernel", f"{sys.executable} {os.path.join(tmp, 'numpy_mqa_adapter.py')}", "--accumulate", "fp32"],
        "fresh": ["--kernel", ADAPTER + " --fresh"],
        "exact": ["--kernel", ADAPTER, "--accumulate", "exact"],
        "fmax": ["--kernel", ADAPTER, "--relu", "fmax"],
        "dont-care": ["--kernel", ADAPTER + " --bug inclusive-end", "--mask", "dont-care"],
        "mutant": ["--kernel", f"{ADAPTER} --bug inclusive-end", "--must-produce", "mask-shift"],
        "blind": ["--kernel", f"{ADAPTER} --bug inclusive-end", "--must-produce", "nan"],
        **{bug: ["--kernel", f"{ADAPTER} --bug {bug}"] for bug, _, _ in BUGS},
        # Paged decode: the cases of the other operation are skipped, each with its reason.
        "paged": ["--kernel", ADAPTER, "--operation", "paged", "--accumulate", "fp32"],
        "both": ["--kernel", ADAPTER, "--operation", "both", "--accumulate", "fp32"],
        "paged-bug": ["--kernel", f"{ADAPTER} --bug logical-blocks", "--operation", "paged", "--must-produce", "error-bound"],
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {name: pool.submit(run, "--cases", QUICK, *args, "--threads", "1", "--out", os.path.join(tmp, name), env=env)
                   for name, args in jobs.items()}
        done = {name: f.result() for name, f in futures.items()}

    # Paged decode: the kernel's operation decides which cases it gets; a planted bug of the decode
    # path (the block table ignored) is caught with its class.
    for name, count, skipped in (("paged", 3, 16), ("both", 19, 0)):
        r = done[name]
        expect(r.returncode == 0 and "every expectation holds" in r.stdout, f"--operation {name}: rc={r.returncode}\n{r.stdout[-1500:]}")
        rep = report(os.path.join(tmp, name))
        expect(len(rep["results"]) == count and all(x["outcome"] == "pass" for x in rep["results"]),
               f"--operation {name}: {[(x['case'], x['outcome']) for x in rep['results']]}")
        expect(len(rep["skipped"]) == skipped and all("(--operation)" in s["reason"] for s in rep["skipped"]),
               f"--operation {name} skipped: {rep['skipped'][:3]}")
    r = done["paged-bug"]
    expect(r.returncode == 0 and "mutants caught 1/1" in r.stdout, f"paged bug: rc={r.returncode}\n{r.stdout[-1500:]}")
    # ... and diagnosed behind the adapter as the block table ignored (NumPy's sums: within the bound).
    found = [f for x in report(os.path.join(tmp, "paged-bug"))["results"] for f in x["findings"]]
    expect(any(f["class"] == "error-bound" for f in found) and
           all(f["diagnosis"] and f["diagnosis"]["cause"] == "paged-logical-blocks" for f in found if f["class"] == "error-bound"),
           f"paged bug diagnosed: {[f['diagnosis'] for f in found]}")
    expect(done["quick"].returncode == 0 and "3 pairs skipped: --verbose lists them" in done["quick"].stdout,
           f"the prefill run skips the paged cases: {done['quick'].stdout[-600:]}")

    # The correct kernel passes every case of the quick suite: every layout, out-of-range
    # windows, empty rows, NaN codes, e4m3fnuz and e5m2; reports carry the kernel's rows.
    out = os.path.join(tmp, "quick")
    r = done["quick"]
    expect(r.returncode == 0 and "every expectation holds" in r.stdout, f"numpy kernel on quick: rc={r.returncode}\n{r.stdout[-1500:]}{r.stderr}")
    rep = report(out)
    label = rep["kernel"]["label"]
    expect(label.startswith("numpy-fp32 ") and rep["kernel"]["command"] == ADAPTER and rep["kernel"]["adapter_starts"] == 1,
           f"kernel block: {rep['kernel']}")
    expect(rep["kernel"]["contract"].startswith("dot fp32, heads fp32"), f"contract: {rep['kernel']['contract']}")
    expect(len(rep["results"]) == 16 and all(x["variant"] == label and x["outcome"] == "pass" and x["verdict"] == "pass"
                                             and x["kind"] == "model" for x in rep["results"]), "every case passes")
    adapter = rep["results"][0]["adapter"]
    expect(len(adapter["launch_seconds"]) == 2 and all(s > 0 for s in adapter["launch_seconds"]) and
           len(adapter["exchange_seconds"]) == 2 and adapter["overhead_seconds"] is not None and
           len(adapter["timing_launch_seconds"]) == 3 and rep["results"][0]["kernel_launches"] == 4 and
           rep["results"][0]["kernel_seconds"] == min(adapter["launch_seconds"][1:] + adapter["timing_launch_seconds"]),
           f"adapter timings: {adapter}")
    expect(any(x["metrics"]["ulp"]["max"] > 0 for x in rep["results"]), "fp32 arithmetic is not exact somewhere")
    xml = open(os.path.join(out, "report.xml")).read()
    expect('failures="0" errors="0"' in xml and f'classname="quick.{label}" name="nan-codes"' in xml, "JUnit rows")
    md = open(os.path.join(out, "summary.md")).read()
    expect(f"- kernel {label}:" in md and f"| fnuz | {label} | pass |" in md, "Markdown rows")
    expect("adapter overhead" in r.stdout and f"kernel '{label}'" in r.stdout, "summary after the table")

    r = done["docs"]
    rep = report(os.path.join(tmp, "docs"))
    expect(r.returncode == 0 and len(rep["results"]) == 16 and rep["kernel"]["label"].startswith("numpy-einsum"),
           f"the adapter of docs/protocol.md on quick: rc={r.returncode} {r.stdout[-800:]}")

    # A kernel that allocates its own [M, N] output passes too (the padded stride is mqacheck's offer).
    r = done["fresh"]
    expect(r.returncode == 0, f"fresh [M, N] output: rc={r.returncode} {r.stdout[-800:]}")

    # The contract flags reach the comparator: the same kernel is not exact.
    found = classes_by_case(report(os.path.join(tmp, "exact")))
    expect(done["exact"].returncode == 1 and "error-bound" in found["causal"], f"fp32 kernel under an exact contract: {found}")
    # ... and judge against the reference of the declared relu: NaN kept where fmax gives 0.
    found = classes_by_case(report(os.path.join(tmp, "fmax")))
    expect(done["fmax"].returncode == 1 and found["nan-codes"] == {"nan"} and
           all(not f for case, f in found.items() if case != "nan-codes"), f"keeps-NaN kernel under relu fmax: {found}")
    # --mask dont-care forgives what is outside the windows, the inclusive end included.
    r = done["dont-care"]
    expect(r.returncode == 0, f"dont-care forgives the inclusive end: {r.stdout[-800:]}")

    # Planted bugs are caught with their class.
    for bug, finding, where in BUGS:
        r = done[bug]
        rep = report(os.path.join(tmp, bug))
        found = classes_by_case(rep)
        expect(r.returncode == 1 and finding in found[where] and "EXPECTATIONS BROKEN" in r.stdout,
               f"{bug}: rc={r.returncode} {found[where]}")
        if bug == "unwritten-tile":
            first = [f for x in rep["results"] if x["case"] == "causal" for f in x["findings"] if f["class"] == "unwritten"][0]
            expect(first["first"] == [0, 64] and first["actual_bits"] == "0x7FC0DEAD", f"the unwritten tile: {first}")
    # Declared as a planted bug, a caught kernel is an expectation that holds (exit 0) ...
    r = done["mutant"]
    rep = report(os.path.join(tmp, "mutant"))
    expect(r.returncode == 0 and rep["mutants"][0]["caught_by"][:2] == ["causal", "packed"] and
           all(x["kind"] == "mutant" for x in rep["results"]), f"--must-produce mask-shift: rc={r.returncode} {rep['mutants']}")
    # ... and one caught by no case is a check gone blind (exit 1).
    r = done["blind"]
    expect(r.returncode == 1 and "went blind" in r.stdout, f"--must-produce nan: rc={r.returncode}")
    expect(os.listdir(env["TMPDIR"]) == [], f"scratch left behind: {os.listdir(env['TMPDIR'])}")

    # Bad arguments: exit 2 with one line, before the adapter starts.
    marker = os.path.join(tmp, "adapter-started")
    starts = f"touch {marker}; {ADAPTER}"
    for args, words in [
        (["--kernel", starts, "--variant", "fp32-naive"], "excludes"),
        (["--accumulate", "fp32"], "requires --kernel"),
        (["--timeout", "5"], "requires --kernel"),
        (["--kernel", starts, "--accumulate", "fp16"], "--accumulate 'fp16' is not known (accepted: exact, fp32, fp22-truncated, bf16, sm90-wgmma, gfx942-mfma)"),
        (["--kernel", starts, "--relu", "max"], "accepted: keeps-nan, fmax"),
        (["--kernel", starts, "--mask", "clear"], "accepted: clean, dont-care"),
        (["--kernel", starts, "--must-produce", "mask-shfit"], "not a finding class (accepted: mask-leak, mask-hole, mask-shift"),
        (["--kernel", starts, "--timeout", "0"], "--timeout"),
        (["--kernel", starts, "--timeout", "nan"], "--timeout: expected a number of seconds above 0 and at most 1e6, found 'nan'"),
        (["--kernel", starts, "--timeout", "inf"], "found 'inf'"),
        (["--kernel", starts, "--timeout", "1e10"], "found '1e10'"),
        (["--kernel", "  "], "the command is empty"),
    ]:
        r = run("--cases", QUICK, *args, env=env)
        expect(r.returncode == 2 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1,
               f"bad arguments {args[-2:]}: rc={r.returncode} {r.stderr!r}")
    expect(not os.path.exists(marker), "an adapter was started despite bad arguments")

finish("run --kernel")
