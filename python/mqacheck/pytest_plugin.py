"""pytest plugin: a test parametrized over a suite's cases that fails with mqacheck's findings.

    def test_my_kernel(mqa_case):
        mqa_case.judge(my_kernel, accumulate="fp32")          # my_kernel(bundle) or my_kernel(bundle, out)

    pytest --mqa-suite cases/quick.toml [--mqa-case random] [--mqa-binary build/mqacheck]

The suite: ``--mqa-suite``, else the ``mqa_suite`` ini setting, else ``cases/quick.toml`` of the
checkout pytest runs in (found from the root directory upwards); one test may choose its own with
``@pytest.mark.mqa_suite("cases/bugs/11-inclusive-end.toml")``. Bundles are made once per session
with `mqacheck gen` under pytest's temporary directory. Registered through the ``pytest11`` entry
point when the package is installed; with PYTHONPATH alone: ``pytest -p mqacheck.pytest_plugin``.

A usage error (no suite, an unknown case) ends the run with one line naming what to pass. A failing
judged test prints, after mqacheck's findings, the `mqacheck check` command that reproduces the
judgement from the kernel's saved output (under pytest's temporary directory).
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from .binary import BinaryNotFound, find_binary
from .bundle import Bundle, load_inputs
from .check import MqacheckInputError, check
from .contract import contract_flags
from .conventions import convention_named
from .judgement import Judgement
from .launch import Launch, launch
from .protocol import Unsupported
from .suite import SuiteError, case_names, generate_bundle
from .tensors import logits_for_file

# Usage errors found while parametrizing (pytest_generate_tests), raised once collection is done:
# a UsageError raised there would be shown as a collection error with pytest's internal traceback.
_USAGE_ERRORS = pytest.StashKey[list]()
# Each suite a test was parametrized over, and its cases: a --mqa-case name is unknown only where
# none of them has it (a test keeps the cases its suite has, maybe none).
_SUITES_SEEN = pytest.StashKey[dict]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mqacheck", "mqacheck: judge fp8 MQA-logits kernels")
    group.addoption("--mqa-suite", metavar="FILE", default=None,
                    help="suite whose cases parametrize mqa_case (default: cases/quick.toml of this checkout)")
    group.addoption("--mqa-case", metavar="NAME", action="append", default=[],
                    help="run only this case of the suite (repeatable)")
    group.addoption("--mqa-binary", metavar="PATH", default=None,
                    help="the mqacheck binary (default: $MQACHECK, else mqacheck on PATH)")
    parser.addini("mqa_suite", "default suite file for mqa_case, relative to the ini file", default=None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mqa_suite(path): the suite whose cases parametrize this test's mqa_case")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "mqa_case" not in metafunc.fixturenames:
        return
    try:
        selected = _selected_cases(metafunc)
    except pytest.UsageError as e:
        errors = metafunc.config.stash.setdefault(_USAGE_ERRORS, [])
        if str(e) not in errors:
            errors.append(str(e))
        return
    metafunc.parametrize("mqa_case", selected, indirect=True, ids=[name for _, name in selected])


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config) -> None:
    errors = list(config.stash.get(_USAGE_ERRORS, []))
    seen = config.stash.get(_SUITES_SEEN, {})
    unknown = [w for w in config.getoption("mqa_case") if not any(w in names for names in seen.values())]
    if seen and unknown:
        errors.append(f"mqacheck: --mqa-case {', '.join(unknown)}: not in "
                      + " nor in ".join(f"{suite} (its cases: {', '.join(names)})" for suite, names in seen.items()))
    if errors:  # pytest prints each as one "ERROR: ..." line and exits with status 4
        raise pytest.UsageError(*errors)


def _selected_cases(metafunc: pytest.Metafunc) -> list[tuple[Path, str]]:
    """(suite, case) for each case the test runs on; pytest.UsageError for a wrong suite or marker.
    A --mqa-case name none of the collected tests' suites has is refused once collection is done."""
    marker = metafunc.definition.get_closest_marker("mqa_suite")
    if marker is not None and (len(marker.args) != 1 or not isinstance(marker.args[0], (str, Path))):
        raise pytest.UsageError("mqacheck: @pytest.mark.mqa_suite takes one suite file's path, as in "
                                "@pytest.mark.mqa_suite(\"cases/bugs/11-inclusive-end.toml\")")
    suite = _suite(metafunc.config, str(marker.args[0]) if marker else None)
    try:
        names = case_names(suite)
    except SuiteError as e:
        raise pytest.UsageError(f"mqacheck: {e}") from None
    metafunc.config.stash.setdefault(_SUITES_SEEN, {})[suite] = names
    wanted = metafunc.config.getoption("mqa_case")
    return [(suite, n) for n in names if not wanted or n in wanted]


class MqaCase:
    """One case of the suite: its bundle (made on first use) and :meth:`judge`."""

    def __init__(self, suite: Path, name: str, bundles: "_Bundles") -> None:
        self.suite, self.name, self._bundles = suite, name, bundles
        self._loaded: dict[str, Bundle] = {}

    @property
    def path(self) -> Path:
        """The bundle folder (mqacheck gen's output)."""
        return self._bundles.folder(self.suite, self.name)

    def bundle(self, device: Any = None) -> Bundle:
        """The case's inputs as NumPy arrays (device None) or torch tensors on ``device``: what
        :meth:`judge` gives the kernel, without the reference (``load_bundle(mqa_case.path)`` has it)."""
        key = str(device)
        if key not in self._loaded:
            self._loaded[key] = load_inputs(self.path, device)
        return self._loaded[key]

    def judge(self, fn: Callable[..., Any], *, device: Any = None, convention: str = "bundle", launches: int = 2,
              in_place: bool | None = None, operation: str | None = None, **contract: Any) -> Judgement:
        """Runs ``fn`` on the bundle (twice by default, judged for determinism too) and judges it
        under ``contract`` (keywords of `mqacheck check`: accumulate="fp32", relu="fmax", ...).
        Fails the test with mqacheck's findings; returns the judgement when it passes.

        ``operation`` is what ``fn`` computes: "prefill", "paged" (decode) or "both";
        default: its convention's, "prefill" for the bundle convention. A case of another
        operation skips the test. Under logits_dtype="bf16" ``fn`` returns its bfloat16 logits,
        judged as those bits."""
        if launches < 1:
            raise ValueError(f"launches={launches}: expected 1 (no determinism check) or more (the first two judged)")
        bundle = self.bundle(device)
        chosen = convention_named(convention)
        computes = operation or ("prefill" if chosen.operation == "both" else chosen.operation)
        if computes not in ("both", bundle.operation):
            pytest.skip(f"case '{self.name}' is {bundle.operation}; the kernel computes {computes} "
                        "(judge(..., operation=...))")
        kernel = chosen.wrap(fn)
        bf16 = str(contract.get("logits_dtype", "")) == "bf16"
        try:
            runs = [launch(kernel, bundle, in_place=in_place, bf16=bf16)]
        except Unsupported as e:  # the kernel's own limit: not a failure (as `run --kernel` skips it)
            refused = f"case '{self.name}': the kernel does not take it: {e}"
        else:
            refused = None
        if refused:  # outside the handler: no chained exception in the report
            pytest.skip(refused)
        # Unsupported after launch 1 ran is a lie, the test's failure (docs/protocol.md).
        runs += [launch(kernel, bundle, in_place=in_place, bf16=bf16) for _ in range(max(1, launches) - 1)]
        # The bundle is the plugin's own, made by `mqacheck gen` this session: its digest is trusted.
        try:
            judgement = check(bundle, runs[0].output, repeat=runs[1].output if len(runs) > 1 else None,
                              binary=self._bundles.binary, trust_digest=True, **contract)
        except (BinaryNotFound, MqacheckInputError) as e:  # a wrong binary or contract word: one line
            unusable = f"mqacheck: {e}"
        else:
            unusable = None
        if unusable:
            pytest.fail(unusable, pytrace=False)
        if not judgement.passed:
            pytest.fail(f"{judgement.message()}\n{self._reproduction(runs, contract)}", pytrace=False)
        return judgement

    def _reproduction(self, runs: list[Launch], contract: dict[str, Any]) -> str:
        """The kernel's outputs saved where pytest keeps temporary files, and the `mqacheck check`
        command that judges them again, outside pytest."""
        folder = self._bundles.failure_folder(self.name)
        args = ["check", str(self.path)]
        for flag, run, name in zip(("--logits", "--repeat"), runs, ("logits.npy", "repeat.npy")):
            np.save(folder / name, logits_for_file(run.output, name, str(contract.get("logits_dtype", "")) == "bf16"),
                    allow_pickle=False)
            args += [flag, str(folder / name)]
        try:
            binary = find_binary(self._bundles.binary)
        except BinaryNotFound:
            binary = "mqacheck"
        return "reproduce: " + shlex.join([binary, *args, *contract_flags(**contract)])

    def __repr__(self) -> str:
        return f"MqaCase({self.name!r} of {str(self.suite)!r})"


class _Bundles:
    """Bundles made once per session, under pytest's temporary directory."""

    def __init__(self, factory: pytest.TempPathFactory, binary: str | None) -> None:
        self.factory, self.root, self.binary = factory, factory.mktemp("mqa-bundles"), binary
        self.made: dict[tuple[Path, str], Path] = {}

    def failure_folder(self, case: str) -> Path:
        """A new folder for a failing judgement's outputs (pytest keeps the last runs' folders)."""
        return self.factory.mktemp("mqa-failed-" + re.sub(r"[^A-Za-z0-9_.-]", "_", case))

    def folder(self, suite: Path, name: str) -> Path:
        key = (suite, name)
        if key not in self.made:
            out = self.root / f"{len(self.made):03d}-{suite.stem}-{name}"
            try:
                self.made[key] = generate_bundle(suite, name, out, self.binary)
            except SuiteError as e:
                failed = f"mqacheck: {e}"
            else:
                failed = None
            if failed:  # outside the handler: no chained exception in the report
                pytest.fail(failed, pytrace=False)
        return self.made[key]


@pytest.fixture(scope="session")
def mqa_bundles(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> _Bundles:
    return _Bundles(tmp_path_factory, pytestconfig.getoption("mqa_binary"))


@pytest.fixture
def mqa_case(request: pytest.FixtureRequest, mqa_bundles: _Bundles) -> MqaCase:
    if not hasattr(request, "param"):
        pytest.fail("mqacheck: mqa_case is parametrized by the mqacheck plugin; is it loaded (-p mqacheck.pytest_plugin)?",
                    pytrace=False)
    suite, name = request.param
    return MqaCase(suite, name, mqa_bundles)


def _suite(config: pytest.Config, marked: str | None) -> Path:
    root = Path(config.rootpath)
    if marked:
        return _find(root, marked)
    if config.getoption("mqa_suite"):
        return Path(config.getoption("mqa_suite")).resolve()
    ini = config.getini("mqa_suite")
    if ini:
        base = Path(config.inipath).parent if config.inipath else root
        return _resolve(base, ini)
    found = _find(root, "cases/quick.toml")
    if not found.is_file():
        raise pytest.UsageError("mqacheck: no suite for mqa_case: give --mqa-suite FILE (or the mqa_suite ini setting)")
    return found


def _resolve(base: Path, path: str) -> Path:
    p = Path(path)
    return (p if p.is_absolute() else base / p).resolve()


def _find(root: Path, path: str) -> Path:
    """``path`` under the root directory or the nearest folder above it that has it (a suite of
    the checkout pytest runs in); the root's own when none has it."""
    for folder in (root, *root.parents):
        if (folder / path).exists():
            return _resolve(folder, path)
    return _resolve(root, path)
