"""The in-process suite runner (mqacheck.run_suite, `python3 -m mqacheck run`): the same report as
`mqacheck run --kernel` with the kernel behind the package's adapter, without the adapter.

What it must show: for the same kernel on the same suite, report.json has the binary's schema (every
key path, in every object) and the same verdict, findings and metrics on every case; a planted bug
is caught with its class; a kernel that raises, refuses a case or returns the wrong shape is that
case's error or skip, not the run's end; bad input is refused (exit status 2) before any case runs,
with nothing written; an interrupted run leaves no report folder behind.
"""
from __future__ import annotations

import copy
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import numpy_kernels
from conftest import QUICK, python_env
from same_report import differences
from mqacheck import MqacheckInputError, Unsupported, load_core, run_suite

pytestmark = pytest.mark.skipif(not os.environ.get("MQACHECK_CORE"),
                                reason="MQACHECK_CORE is not set: this build made no mqacheck._core")

def _through_adapter(binary: str, function: str, out: Path, *flags: str) -> dict[str, Any]:
    adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--function", f"numpy_kernels:{function}",
                          "--label", f"bundle:{function}"])
    done = subprocess.run([binary, "run", "--cases", str(QUICK), "--kernel", adapter, "--out", str(out), *flags],
                          capture_output=True, text=True, env=python_env(), timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return json.loads((out / "report.json").read_text())


@pytest.mark.parametrize("function, flags", [
    ("tiled_in_place", ["--accumulate", "fp32"]),
    ("more_exact_than_declared", ["--accumulate", "fp32"]),
    ("inclusive_end_kernel", ["--accumulate", "fp32"]),
    ("tail_dropped_in_place", ["--accumulate", "fp32", "--must-produce", "unwritten"]),
    ("fp32_kernel", ["--accumulate", "sm90-wgmma", "--relu", "fmax"]),
])
def test_the_report_is_the_binarys(binary, tmp_path, function, flags):
    by_adapter = _through_adapter(binary, function, tmp_path / "adapter", *flags)
    must = [flags[i + 1] for i, f in enumerate(flags) if f == "--must-produce"]
    contract = [f for i, f in enumerate(flags) if f != "--must-produce" and (i == 0 or flags[i - 1] != "--must-produce")]
    result = run_suite(getattr(numpy_kernels, function), QUICK, out=tmp_path / "in-process", must_produce=must,
                       flags=contract)
    in_process = result.report
    assert json.loads((tmp_path / "in-process" / "report.json").read_text()) == in_process
    for name in ("report.xml", "summary.md", "report.html"):
        assert (tmp_path / "in-process" / name).stat().st_size > 0, name
    assert differences(in_process, by_adapter) == []
    assert in_process["kernel"]["in_process"] is True and by_adapter["kernel"]["in_process"] is False
    assert any("could read the judge's memory" in n for n in in_process["kernel"]["notes"])
    assert set(result.judged_on.values()) <= {"host", "skipped"} and "host" in result.judged_on.values()
    if function == "more_exact_than_declared":  # the suspicion note, as the adapter's run gives it
        assert sum("suspicion" in r for r in in_process["results"]) >= 10


def test_a_changed_figure_or_key_is_a_difference():
    report = run_suite(numpy_kernels.fp32_kernel, QUICK, accumulate="fp32", case_names=["causal", "random"]).report
    assert differences(report, copy.deepcopy(report)) == []
    changed = copy.deepcopy(report)
    changed["results"][1]["metrics"]["max_abs_error"] = 1.0
    assert any("case random: metrics differs" in d for d in differences(report, changed))
    renamed = copy.deepcopy(report)
    renamed["kernel"]["in_process_only"] = renamed["kernel"].pop("in_process")
    assert any("schemas differ" in d for d in differences(report, renamed))


def test_a_planted_bug_is_caught_with_its_class(tmp_path):
    caught = run_suite(numpy_kernels.tail_dropped_in_place, QUICK, accumulate="fp32", must_produce=["unwritten"])
    assert caught.status == 0 and caught.report["mutants"][0]["caught_by"], caught.report["mutants"]
    failing = run_suite(numpy_kernels.inclusive_end_kernel, QUICK, accumulate="fp32")
    assert failing.status == 1
    classes = {f["class"] for r in failing.report["results"] for f in r["findings"]}
    assert "mask-shift" in classes, classes
    assert not failing.report["expectations_hold"]


def test_the_kernels_failures_are_its_cases_not_the_runs_end():
    calls = {"n": 0}

    def flaky(bundle):
        calls["n"] += 1
        if bundle.name == "causal":
            raise RuntimeError("launch failed on purpose")
        if bundle.name == "packed":
            raise Unsupported("not this layout")
        if bundle.name == "sliding" and calls["n"] % 2 == 0:
            return np.zeros((bundle.m, bundle.n - 1), np.float32)  # launch 2 of the wrong shape
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(flaky, QUICK, accumulate="fp32", case_names=["causal", "packed", "sliding", "random"],
                       timing_launches=0)
    rows = {r["case"]: r for r in result.report["results"]}
    assert "launch 1: RuntimeError: launch failed on purpose" in rows["causal"]["error"]
    assert rows["causal"]["outcome"] == "error" and result.judged_on["causal"] == "not judged"
    assert [s["reason"] for s in result.report["skipped"]] == ["the kernel does not take this case: not this layout"]
    assert rows["random"]["outcome"] == "pass"
    # Launch 2 of the wrong shape: the case's error, launch 1 still judged (the session's rule).
    assert rows["sliding"]["outcome"] == "error" and "launch 2: ValueError" in rows["sliding"]["error"]
    assert rows["sliding"]["verdict"] == "pass" and rows["sliding"]["metrics"] is not None
    assert result.judged_on["sliding"] == "host"
    assert result.status == 1 and not result.report["expectations_hold"]


def test_a_kernel_that_calls_sys_exit_fails_its_case_not_the_run():
    """sys.exit() in a kernel (SystemExit) is its case's error, on a judged launch or a timing one."""
    def exits(bundle):
        if bundle.name == "causal":
            sys.exit(0)
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(exits, QUICK, accumulate="fp32", case_names=["causal", "random"])
    rows = {r["case"]: r for r in result.report["results"]}
    assert rows["causal"]["outcome"] == "error" and "launch 1: SystemExit: 0" in rows["causal"]["error"]
    assert rows["random"]["outcome"] == "pass" and result.status == 1
    launches = {"n": 0}

    def exits_on_timing(bundle):
        launches["n"] += 1
        if launches["n"] == 3:
            sys.exit(3)
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(exits_on_timing, QUICK, accumulate="fp32", case_names=["causal"])
    assert "timing launch 3 (not judged, but it must succeed): SystemExit: 3" in result.report["results"][0]["error"]


def test_a_kernel_that_takes_no_case_judged_nothing():
    """Every case refused (Unsupported): not one case judged, exit status 2, never "every
    expectation holds"."""
    def refuses(bundle):
        raise Unsupported("no case of this suite")

    result = run_suite(refuses, QUICK, accumulate="fp32", case_names=["causal", "packed"])
    assert result.status == 2 and not result.report["expectations_hold"] and len(result.report["skipped"]) == 2
    assert result.report["broken_expectations"][0].startswith("not one case was judged: every pair (2) was skipped")


def test_a_case_unsupported_after_it_ran_is_an_error():
    seen: set[str] = set()

    def liar(bundle):
        if bundle.name in seen:
            raise Unsupported("changed its mind")
        seen.add(bundle.name)
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(liar, QUICK, accumulate="fp32", case_names=["causal"])
    row = result.report["results"][0]
    assert "a kernel takes a case on every launch or on none" in row["error"] and not result.report["skipped"]


@pytest.mark.parametrize("flags, words", [
    (["--accumulate", "fp33"], "fp33"),
    (["--accumulate", "fp32", "--no-such-flag"], "--no-such-flag"),
])
def test_bad_contract_is_refused_before_any_case(tmp_path, flags, words):
    with pytest.raises(MqacheckInputError, match=words):
        run_suite(numpy_kernels.fp32_kernel, QUICK, out=tmp_path / "out", flags=flags)
    assert not (tmp_path / "out").exists()


def test_what_runs_only_through_the_adapter_is_refused(tmp_path):
    with pytest.raises(MqacheckInputError, match="--logits-dtype bf16"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, out=tmp_path / "out", accumulate="fp32", logits_dtype="bf16")
    with pytest.raises(MqacheckInputError, match="--operation 'decode' is not known"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, operation="decode", accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="--timing-launches -1"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, timing_launches=-1, accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="threads=-1"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, threads=-1, accumulate="fp32")
    assert list(tmp_path.iterdir()) == []


def test_bad_suite_case_and_out_are_refused(tmp_path):
    with pytest.raises(MqacheckInputError, match="no-such-case"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, case_names=["no-such-case"], accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="must-produce 'not-a-class'"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, must_produce=["not-a-class"], accumulate="fp32")
    with pytest.raises(MqacheckInputError, match=str(tmp_path / "absent")):
        run_suite(numpy_kernels.fp32_kernel, QUICK, out=tmp_path / "absent" / "deeper", accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="missing.toml"):
        run_suite(numpy_kernels.fp32_kernel, tmp_path / "missing.toml", accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="--out: empty path"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, out="", accumulate="fp32")
    with pytest.raises(MqacheckInputError, match="threads=4294967296: expected 0 \\(every core\\) to 4294967295"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, threads=2**32, accumulate="fp32")
    # A report never replaces the suite the run reads.
    (tmp_path / "reports").mkdir()
    suite = tmp_path / "reports" / "summary.md"
    suite.write_text(QUICK.read_text())
    with pytest.raises(MqacheckInputError, match="is the same file as --cases"):
        run_suite(numpy_kernels.fp32_kernel, suite, out=tmp_path / "reports", case_names=["causal"], accumulate="fp32")
    assert suite.read_text() == QUICK.read_text()


def test_a_folder_gone_by_the_end_keeps_the_report_and_says_so(tmp_path):
    parent = tmp_path / "parent"
    parent.mkdir()

    def removes_the_folder(bundle):
        if parent.exists():
            parent.rmdir()
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(removes_the_folder, QUICK, case_names=["causal"], out=parent / "out", accumulate="fp32")
    assert result.status == 2 and str(parent) in result.write_error and not result.written
    assert result.report["results"][0]["outcome"] == "pass"


def test_an_interrupted_run_leaves_no_reports(tmp_path):
    def interrupted(bundle):
        if bundle.name == "sliding":
            raise KeyboardInterrupt
        return numpy_kernels.fp32_kernel(bundle)

    with pytest.raises(KeyboardInterrupt):
        run_suite(interrupted, QUICK, out=tmp_path / "out", accumulate="fp32")
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


def test_the_command_line(tmp_path):
    base = [sys.executable, "-m", "mqacheck", "run", "--cases", str(QUICK), "--case", "causal", "--case", "random",
            "--function", str(Path(numpy_kernels.__file__)) + ":tiled_in_place"]
    done = subprocess.run(base + ["--accumulate", "fp32", "--out", str(tmp_path / "out")], capture_output=True,
                          text=True, env=python_env(), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every expectation holds" in done.stdout and "reports: " in done.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["kernel"]["command"].startswith("python3 -m mqacheck run --cases")
    assert [r["case"] for r in report["results"]] == ["causal", "random"]
    refused = subprocess.run(base + ["--accumulate", "fp33"], capture_output=True, text=True, env=python_env(),
                             timeout=600)
    assert refused.returncode == 2 and refused.stderr.startswith("mqacheck: ") and "fp33" in refused.stderr
    for bad, words in ((["--threads", "-1"], "--threads -1"), (["--function", str(tmp_path / "broken.py") + ":f"],
                                                                 "importing")):
        (tmp_path / "broken.py").write_text("raise ImportError('a dependency is missing')\n")
        refused = subprocess.run(base + ["--accumulate", "fp32", *bad], capture_output=True, text=True,
                                 env=python_env(), timeout=600)
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
    # Importing the user's file called sys.exit(): one message, status 2.
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\n")
    refused = subprocess.run(base[:-1] + [str(tmp_path / "exits.py") + ":f", "--accumulate", "fp32"],
                             capture_output=True, text=True, env=python_env(), timeout=600)
    assert refused.returncode == 2 and "importing" in refused.stderr and "SystemExit: 0" in refused.stderr, refused.stderr
    failing = subprocess.run(base[:-1] + [str(Path(numpy_kernels.__file__)) + ":failing_kernel", "--accumulate", "fp32"],
                             capture_output=True, text=True, env=python_env(), timeout=600)
    assert failing.returncode == 2 and "0 judged, 2 not judged, 0 skipped" in failing.stdout, failing.stdout
    planted = subprocess.run(base[:-1] + [str(Path(numpy_kernels.__file__)) + ":inclusive_end_kernel",
                                          "--accumulate", "fp32"], capture_output=True, text=True, env=python_env(),
                             timeout=600)
    assert planted.returncode == 1 and "mask-shift" in planted.stdout, planted.stdout + planted.stderr


TERMINATING_KERNEL = """
import os, signal
import numpy_kernels

def terminated(bundle):
    if bundle.name == "random":
        os.kill(os.getpid(), signal.{signal})
    return numpy_kernels.fp32_kernel(bundle)
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_terminated_run_leaves_nothing_and_ends_by_its_signal(tmp_path, name):
    """SIGTERM or SIGHUP mid-run unwinds it as an interrupt does (no report, no staging folder
    left), says so, and the process then ends by that signal, as its caller expects."""
    (tmp_path / "kernel.py").write_text(TERMINATING_KERNEL.format(signal=name))
    out = tmp_path / "reports"
    done = subprocess.run([sys.executable, "-m", "mqacheck", "run", "--cases", str(QUICK), "--case", "causal", "--case",
                           "random", "--function", str(tmp_path / "kernel.py") + ":terminated", "--accumulate", "fp32",
                           "--out", str(out)], capture_output=True, text=True,
                          env={**python_env(), "PYTHONDONTWRITEBYTECODE": "1"}, timeout=600, cwd=tmp_path)
    assert done.returncode == -getattr(signal, name), done.stdout + done.stderr
    assert "mqacheck: interrupted: no report written" in done.stderr, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernel.py"]


def test_the_extension_is_required(monkeypatch):
    monkeypatch.setenv("MQACHECK_CORE", "off")
    from mqacheck import CoreNotFound
    with pytest.raises(CoreNotFound):
        run_suite(numpy_kernels.fp32_kernel, QUICK, accumulate="fp32")
    assert load_core() is None


@pytest.mark.triton
def test_a_gpu_kernel_is_judged_on_its_device(binary, tmp_path):
    """Our Triton kernel in process on the GPU: buffers poisoned there, outputs judged on the device
    where the device comparator sees no finding, and the report the adapter's run writes."""
    from conftest import ROOT
    from mqacheck.loading import load_function
    served = f"{ROOT / 'kernels' / 'triton' / 'served.py'}"
    flags = ["--accumulate", "sm90-wgmma", "--relu", "fmax"]
    cases = ["causal", "packed", "sliding", "random", "tall"]
    correct = run_suite(load_function(f"{served}:correct"), QUICK, device="cuda", case_names=cases, flags=flags,
                        out=tmp_path / "in-process")
    assert correct.status == 0, correct.report["broken_expectations"]
    assert set(correct.judged_on.values()) == {"device"}, correct.judged_on
    adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--device", "cuda", "--function", f"{served}:correct"])
    done = subprocess.run([binary, "run", "--cases", str(QUICK), *[a for c in cases for a in ("--case", c)], "--kernel",
                           adapter, "--out", str(tmp_path / "adapter"), *flags], capture_output=True, text=True,
                          env=python_env(), timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert differences(correct.report, json.loads((tmp_path / "adapter" / "report.json").read_text())) == []
    # A kernel more exact than it declares, judged on the device: the suspicion note the host gives.
    exact_flags = ["--accumulate", "fp32"]
    import torch_kernels
    exact = run_suite(torch_kernels.more_exact_than_declared, QUICK, device="cuda", case_names=cases, flags=exact_flags,
                      out=tmp_path / "exact-in-process")
    assert set(exact.judged_on.values()) == {"device"} and any("suspicion" in r for r in exact.report["results"])
    torch_adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--device", "cuda", "--function",
                                "torch_kernels:more_exact_than_declared"])
    done = subprocess.run([binary, "run", "--cases", str(QUICK), *[a for c in cases for a in ("--case", c)], "--kernel",
                           torch_adapter, "--out", str(tmp_path / "exact-adapter"), *exact_flags], capture_output=True,
                          text=True, env=python_env(), timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert differences(exact.report, json.loads((tmp_path / "exact-adapter" / "report.json").read_text())) == []
    dropped = run_suite(load_function(f"{served}:tail_tile_dropped"), QUICK, device="cuda", case_names=cases,
                        flags=flags, must_produce=["unwritten"])
    assert dropped.status == 0 and dropped.report["mutants"][0]["caught_by"], dropped.report["mutants"]
    assert any(w.startswith("host: ") for w in dropped.judged_on.values()), dropped.judged_on



def test_the_summary_shows_text_from_elsewhere_escaped(tmp_path):
    """A kernel's error reaches the terminal with its control characters written out, never obeyed."""
    kernels = tmp_path / "hostile.py"
    kernels.write_text("def k(bundle):\n    raise RuntimeError('\\x1b[2Jcleared \\u202egnp.exe')\n")
    done = subprocess.run([sys.executable, "-m", "mqacheck", "run", "--cases", str(QUICK), "--case", "causal",
                           "--function", f"{kernels}:k", "--accumulate", "fp32"], capture_output=True, text=True,
                          env=python_env(), timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr  # nothing judged
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    assert "\\u001b[2Jcleared \\u202egnp.exe" in done.stdout, done.stdout


def test_text_that_is_not_utf8_is_shown_byte_by_byte_as_the_binary_shows_it(tmp_path):
    """A kernel's error or refusal holding a byte that is not UTF-8 (surrogate escapes, as Python
    reads such bytes from a file or a path) is its case's, written \\xNN as an adapter's would be;
    the run and its reports go on."""
    bad = b"\xff".decode("utf-8", "surrogateescape")

    def kernel(bundle):
        if bundle.name == "causal":
            raise RuntimeError("bad byte: " + bad + " and a lone \ud800")
        if bundle.name == "packed":
            raise Unsupported("refused " + bad)
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(kernel, QUICK, accumulate="fp32", case_names=["causal", "packed", "random"], out=tmp_path / "r",
                       timing_launches=0, command="run " + bad)
    rows = {r["case"]: r for r in result.report["results"]}
    assert "launch 1: RuntimeError: bad byte: \\xFF and a lone \\ud800" in rows["causal"]["error"]
    assert [s["reason"] for s in result.report["skipped"]] == ["the kernel does not take this case: refused \\xFF"]
    assert result.report["kernel"]["command"] == "run \\xFF"
    assert (tmp_path / "r" / "report.xml").is_file() and rows["random"]["outcome"] == "pass"


def test_a_refusal_is_one_line_of_at_most_300_bytes_as_an_adapters_is():
    reasons = {"causal": "heads 8:\n\x1b[31m" + "z" * 1000, "packed": ""}

    def refuses(bundle):
        if bundle.name in reasons:
            raise Unsupported(reasons[bundle.name])
        return numpy_kernels.fp32_kernel(bundle)

    result = run_suite(refuses, QUICK, accumulate="fp32", case_names=["causal", "packed", "random"], timing_launches=0)
    why = {s["case"]: s["reason"] for s in result.report["skipped"]}
    prefix = "the kernel does not take this case: "
    assert why["causal"].startswith(prefix + "heads 8:\\x0A\\x1B[31mzzz"), why
    assert why["causal"].endswith("... (1014 bytes)") and len(why["causal"].encode()) < len(prefix) + 340, why
    assert why["packed"] == prefix + "(the kernel gave no reason)"


@pytest.mark.parametrize("label", ["", "two\nlines", "x" * 201, "bad " + b"\xff".decode("utf-8", "surrogateescape")])
def test_a_label_the_adapter_protocol_refuses_is_refused(tmp_path, label):
    with pytest.raises(MqacheckInputError, match="label"):
        run_suite(numpy_kernels.fp32_kernel, QUICK, accumulate="fp32", case_names=["causal"], label=label,
                  out=tmp_path / "r")
    assert not (tmp_path / "r").exists()
