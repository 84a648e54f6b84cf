"""Fixtures of the package's tests: the mqacheck binary (MQACHECK, as CTest sets it), the
checkout's suites, and bundles made once per session with `mqacheck gen`.

Run: MQACHECK=build/mqacheck PYTHONPATH=python python3 -m pytest python/tests   (or ctest -R python)
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # the checkout
PACKAGE = ROOT / "python"
QUICK = ROOT / "cases" / "quick.toml"
sys.path[:0] = [str(HERE), str(PACKAGE)]  # numpy_kernels and host; the package from the checkout

from mqacheck import find_binary  # noqa: E402
from mqacheck.binary import BinaryNotFound  # noqa: E402
from mqacheck.tensors import torch_module  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """torch/cuda/triton tests run where those exist (the H200) and say why they are skipped elsewhere."""
    torch = torch_module()
    cuda = torch is not None and torch.cuda.is_available()
    try:
        import triton  # noqa: F401
        has_triton = True
    except ImportError:
        has_triton = False
    reasons = {
        "torch": None if torch is not None else "torch >= 2.1 (fp8 dtypes) is not installed here",
        "cuda": None if cuda else "no CUDA device is usable here",
        "triton": None if has_triton and cuda else "Triton with a CUDA device is not available here",
    }
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def binary() -> str:
    try:
        return find_binary()
    except BinaryNotFound as e:
        pytest.fail(f"{e} (CTest sets MQACHECK; by hand: MQACHECK=build/mqacheck)", pytrace=False)


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory, binary: str):
    """make(case, suite=quick.toml) -> bundle folder, generated once per session."""
    root = tmp_path_factory.mktemp("bundles")
    made: dict[tuple[str, str], Path] = {}

    def make(case: str, suite: Path = QUICK) -> Path:
        key = (str(suite), case)
        if key not in made:
            out = root / f"{suite.stem}-{case}"
            done = subprocess.run([binary, "gen", "--cases", str(suite), "--case", case, "--out", str(out)],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            made[key] = out
        return made[key]

    return make


def quick_cases(operation: str | None = None) -> list[str]:
    """The quick suite's cases; with ``operation`` ("prefill", "paged") those of that operation."""
    from mqacheck.suite import case_names
    return case_names(QUICK, operation)


def python_env() -> dict[str, str]:
    """The environment of a child Python that imports the package from the checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE), str(HERE)] + [p for p in [env.get("PYTHONPATH")] if p])
    return env


@pytest.fixture(params=["in-process", "binary"])
def both_judges(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once through mqacheck._core and once through the `mqacheck check` binary. CTest
    sets MQACHECK_CORE where the build made the extension; without it the in-process run is skipped
    with its reason."""
    if request.param == "binary":
        monkeypatch.setenv("MQACHECK_CORE", "off")
    elif not os.environ.get("MQACHECK_CORE"):
        pytest.skip("MQACHECK_CORE is not set: this build made no mqacheck._core (CTest sets it where it did)")
    return request.param
