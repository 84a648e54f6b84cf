"""What every command-line test script shares (tests/CMakeLists.txt runs each *_test.py with the
built mqacheck binary as its one argument): the binary, the repository root, running the binary,
collecting failed expectations so one run reports all of them, and the exit status CTest reads.

Suites are written with suite_toml (one dict a [[case]]), so that a script states only the keys
its cases need.

A script puts this folder on sys.path and imports what it uses:

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "support"))
    from cli_script import BIN, ROOT, expect, finish, run
"""
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

if len(sys.argv) < 2:
    sys.exit(f"usage: {os.path.basename(sys.argv[0])} MQACHECK_BINARY")
BIN = os.path.abspath(sys.argv[1])

failures = []


def run(*args, env=None, timeout=None, **kwargs):
    """mqacheck with these arguments (each passed through str()), its output captured as text."""
    return subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=timeout, **kwargs)


def expect(cond, what):
    """Records a failed expectation and goes on, so one run shows every failure."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def untimed(report):
    """The report without what measures time: seconds, timings, each result's kernel_seconds."""
    report = dict(report)
    report.pop("seconds")
    report.pop("timings")
    report["results"] = [{k: v for k, v in r.items() if k != "kernel_seconds"} for r in report["results"]]
    return report


def as_clean_build(report_json):
    """Marks a report made by the binary under test as a clean build's (its mqacheck.commit without
    "-dirty"; "unknown" becomes a commit): `certify` refuses a baseline of uncommitted changes, and
    a script that certifies against a baseline it made itself must not depend on the tree the
    binary was built from. certify_test.py tests the refusal itself."""
    if not os.path.exists(report_json):  # the run that should have made it failed, and said so
        return report_json
    report = load_json(report_json)
    report["mqacheck"]["commit"] = report["mqacheck"]["commit"].removesuffix("-dirty").replace("unknown", "0123456789ab")
    with open(report_json, "w") as f:
        json.dump(report, f)
    return report_json


def check_with_report(bundle, logits, *extra):
    """`mqacheck check BUNDLE --logits LOGITS --json LOGITS.json EXTRA...`: the process and its JSON
    report (None where none was written)."""
    out_json = str(logits) + ".json"
    if os.path.exists(out_json):
        os.remove(out_json)
    r = run("check", bundle, "--logits", logits, "--json", out_json, *extra)
    return r, (load_json(out_json) if os.path.exists(out_json) else None)


def gen_bundle(suite, case, out):
    """`mqacheck gen --cases SUITE --case CASE --out OUT`, expected to succeed: OUT."""
    r = run("gen", "--cases", suite, "--case", case, "--out", out)
    expect(r.returncode == 0, f"gen {case}: {r.stderr}")
    return out


def toml_value(value):
    """A value as TOML spells it: a dict is an inline table, a list an array."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    return repr(value)


def case_toml(**keys):
    """One [[case]] table, its keys in the order given."""
    return "[[case]]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in keys.items())


def suite_toml(name, cases, defaults=None):
    """A suite file (cases/README.md): [suite] named `name`, [defaults] where given, then one [[case]]
    table per dict of `cases`."""
    text = f"[suite]\nname = {toml_value(name)}\n"
    if defaults:
        text += "[defaults]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in defaults.items())
    return text + "".join(case_toml(**c) for c in cases)


def finish(what):
    """One summary line, then exit 1 if any expectation failed (CTest's verdict), else 0."""
    print(f"{'FAILED' if failures else 'passed'}: {what} ({len(failures)} failures)")
    sys.exit(1 if failures else 0)


# A suite small enough to run in a second with three variants: one correct, two mutants that its
# cases catch (certify, diff and the browser test share it).
SMALL_SUITE = suite_toml("cli-small", [dict(name="causal", m=16, n=128, layout=dict(kind="causal"))],
                         defaults=dict(heads=4, head_dim=32))
RAGGED_CASE = case_toml(name="ragged", m=16, n=150, layout=dict(kind="sliding", window=40))
SMALL_VARIANTS = ["--variant", "fp32-naive", "--variant", "mutant-inclusive-end", "--variant", "mutant-tail-tile"]
