"""`mqacheck run --kernel` end to end with a NumPy kernel served through the package.

What it must show: a NumPy kernel served through the package passes cases/quick.toml
with `run --kernel`, and the same kernel with a planted bug is caught with its class.
"""
import json
import shlex
import subprocess
import sys

import pytest

from conftest import QUICK, python_env


@pytest.fixture(scope="module")
def run_kernel(binary):
    help_text = subprocess.run([binary, "run", "--help"], capture_output=True, text=True).stdout
    assert "--kernel" in help_text, "mqacheck run has no --kernel"

    def run(function, tmp_path, *extra):
        adapter = shlex.join([sys.executable, "-m", "mqacheck.adapter", "--function", f"numpy_kernels:{function}"])
        done = subprocess.run([binary, "run", "--cases", str(QUICK), "--kernel", adapter, "--accumulate", "fp32",
                               "--out", str(tmp_path), *extra], capture_output=True, text=True, env=python_env(),
                              timeout=600)
        report = json.loads((tmp_path / "report.json").read_text()) if (tmp_path / "report.json").exists() else None
        return done, report

    return run


def test_numpy_kernel_passes_quick(run_kernel, tmp_path):
    done, report = run_kernel("tiled_in_place", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    results = report["results"]
    assert len(results) >= 15 and all(r["outcome"] == "pass" for r in results), results


@pytest.mark.parametrize("function, finding", [("inclusive_end_kernel", "mask-shift"),
                                               ("tail_dropped_in_place", "unwritten")])
def test_planted_bug_is_caught_with_its_class(run_kernel, tmp_path, function, finding):
    done, report = run_kernel(function, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    classes = {f["class"] for r in report["results"] for f in r.get("findings", [])}
    assert finding in classes, classes
