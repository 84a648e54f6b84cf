"""run_suite(fn, cases): `mqacheck run --kernel` with the kernel in this process, through the extension.

    report = mqacheck.run_suite(deep_gemm.fp8_mqa_logits, "cases/nightly.toml", convention="deepgemm",
                                device="cuda", out="reports/", accumulate="sm90-wgmma", relu="fmax")
    python3 -m mqacheck run --cases cases/nightly.toml --convention deepgemm \\
        --function deep_gemm:fp8_mqa_logits --accumulate sm90-wgmma --relu fmax --out reports/

The same run as the binary's (api/suite_run.hpp: each case generated and its reference computed by
the extension, launch 1 and 2 into freshly poisoned buffers and judged, then the timing launches)
and the same report.json, report.xml, summary.md and report.html, without the adapter's files and
second process: a bundle on a GPU gets buffers poisoned on its device, and a float32 output there
is judged on the device where the device comparator sees nothing a finding is made of.

The kernel shares the judge's process: it could read the reference in memory, and the report's
kernel notes say so. `mqacheck run --kernel` (a process of its own, the inputs only) is the way to
judge a kernel that must not see the answer.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from .bundle import Bundle, BundleError, bundle_in_memory
from .check import MqacheckInputError, _in_memory, threads_problem
from .contract import contract_flags
from .conventions import convention_named
from .core import CoreNotFound, load_core
from .launch import KernelFn, Launch, launch, poison, writes_in_place
from .protocol import POISON_BITS, Unsupported, fitted_label, label_problem
from .tensors import require_torch

# What a kernel's call may end in that is its case's error: any exception, and sys.exit() (which
# would otherwise end the run with no report and its status). An interrupt ends the run.
KERNEL_FAILURES = (Exception, SystemExit)

@dataclass
class SuiteResult:
    """What a run gives: report.json's document, `mqacheck run`'s exit status (0 every expectation
    holds, 1 findings or cases not judged, 2 no case could be) and where each case was judged."""

    report: dict[str, Any]
    status: int
    written: str             # "reports: DIR/report.json, ..." where ``out`` was given, else ""
    judged_on: dict[str, str]  # case -> "device", "host", "host: why", "not judged", "skipped"
    # Why the reports could not be written to ``out`` at the end (the folder changed during the
    # run), else "": the report is still here, and the status 2.
    write_error: str = ""


def run_suite(fn: KernelFn, cases: str | os.PathLike[str], *, convention: str = "bundle", device: Any = None,
              label: str | None = None, out: str | os.PathLike[str] | None = None,
              case_names: Sequence[str] = (), operation: str | None = None, timing_launches: int = 3,
              must_produce: Sequence[str] = (), in_place: bool | None = None, threads: int | None = None,
              diagnose: bool = True, command: str | None = None, binary: str | None = None,
              progress: Callable[[str, str], None] | None = None, flags: Sequence[str] = (),
              **contract: Any) -> SuiteResult:
    """Runs ``fn`` (in ``convention``'s call signature) on every case of the suite ``cases`` and
    judges it under ``contract`` (keywords of `mqacheck check`: accumulate="sm90-wgmma", ...).

    ``label``: how the reports name the kernel, 1 to 200 bytes of UTF-8 without control characters
    as an adapter's label is (default: "convention:function", fitted to that).
    ``device``: None gives the kernel NumPy bundles, "cuda" (or any torch device) torch tensors.
    ``operation``: what fn computes, "prefill", "paged" or "both" (default: the convention's;
    prefill for the bundle convention); cases of another are skipped. ``must_produce``: the kernel
    carries a planted bug that one of these finding classes must catch on some case. ``command``:
    how the report names the run (default: this call). ``progress(case, where judged)`` is called
    after each case. ``flags``: contract flags as the command line spells them, after the keywords'.
    The extension is required (CoreNotFound otherwise); bad input (a suite, a case
    name, a contract word, a label, an --out folder) raises MqacheckInputError before any case runs; an --out
    folder that can no longer be written at the end is ``write_error`` (status 2, the report kept).
    An interrupt (KeyboardInterrupt) leaves the reports written whole or not at all: its
    ``reports_written`` is "reports: ..." where they were, else "".
    """
    if threads is not None and (problem := threads_problem(threads)):
        raise MqacheckInputError(f"threads={threads}: {problem}")
    core = load_core(binary)
    if core is None or not hasattr(core, "SuiteRun"):
        raise CoreNotFound("the in-process runner needs mqacheck._core (built with the binary into "
                           "<build>/python/mqacheck/; or set MQACHECK_CORE to its path)")
    chosen = convention_named(convention)
    operation = operation or ("prefill" if chosen.operation == "both" else chosen.operation)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    if label is not None and (problem := label_problem(label)):
        raise MqacheckInputError(f"label {label!r}: {problem}")
    label = label if label is not None else fitted_label(f"{convention}:{name}")
    flags = contract_flags(**contract) + list(flags)
    torch_device = None if device is None else require_torch("run_suite(device=...)").device(device)
    run = None
    try:
        run = core.SuiteRun(os.fsencode(cases), [_utf8(c) for c in case_names], flags,
                            _utf8(command or f"mqacheck.run_suite({convention}:{name})"), list(must_produce), operation,
                            timing_launches, None if out is None else os.fsencode(out), threads or 0, diagnose)
        kernel = chosen.wrap(fn)
        if in_place is None:
            in_place = writes_in_place(kernel)
        on_gpu = bool(getattr(core, "gpu", False))
        judged_on: dict[str, str] = {}
        while (case := run.next()) is not None:
            where = _run_case(run, case, kernel, torch_device, in_place, timing_launches, on_gpu)
            judged_on[case["name"]] = where
            if progress is not None:
                progress(case["name"], where)
        text, status, written, write_error = run.finish(label)
        result = SuiteResult(json.loads(text), 2 if write_error else status, written, judged_on, write_error)
    except core.InputError as e:
        raise MqacheckInputError(str(e)) from None
    except KeyboardInterrupt as e:
        # The reports are written whole or not at all; one that came while they were (its handler
        # runs once the writing returns) says which.
        e.reports_written = run.written if run is not None else ""  # type: ignore[attr-defined]
        raise
    return result


def _run_case(run: Any, case: dict[str, Any], kernel: KernelFn, device: Any, in_place: bool, timing_launches: int,
              on_gpu: bool) -> str:
    """Launches the kernel on one case as the adapter's session does and hands the outputs to the
    judge; returns where launch 1 was judged, or "skipped"."""
    try:
        bundle = bundle_in_memory(f"<in process>/{case['name']}", case["toml"], case["inputs"], device)
    except (BundleError, RuntimeError) as e:  # an fp4 case this package does not load, a device refused
        return run.record(None, None, [], [], _utf8(f"the case's inputs: {e}"))
    results: list[Launch] = []
    launches: list[tuple[float, float, float]] = []
    timing: list[tuple[float, float, float]] = []
    error = ""
    for index in (1, 2):
        began = time.perf_counter()
        try:
            buffer = _poisoned(bundle, case["stride"]) if in_place else None
            poisoned = time.perf_counter() - began
            result = launch(kernel, bundle, out=buffer, in_place=in_place)
        except Unsupported as e:
            if index == 1:  # the kernel's own limit: skipped, as `run --kernel` skips it
                run.unsupported(_utf8(str(e)))
                return "skipped"
            error = (f"launch 2: the kernel ran launch 1 of this case, then raised Unsupported ({e}): a kernel takes "
                     "a case on every launch or on none")
            break
        except KERNEL_FAILURES as e:  # the kernel's failure is this case's error, not the run's end
            traceback.print_exc(file=sys.stderr)
            error = f"launch {index}: {type(e).__name__}: {e}"
            break
        results.append(result)
        launches.append((result.seconds, time.perf_counter() - began, poisoned))
    if len(results) == 2:
        # The kernel's time on more launches than the two judged: one buffer, poisoned once, never
        # judged; each must still succeed.
        for t in range(timing_launches):
            began = time.perf_counter()
            try:
                if t == 0:
                    buffer = _poisoned(bundle, case["stride"]) if in_place else None
                result = launch(kernel, bundle, out=buffer, in_place=in_place)
            except Unsupported as e:
                error = (f"timing launch {3 + t}: the kernel ran launches 1 and 2 of this case, then raised "
                         f"Unsupported ({e}): a kernel takes a case on every launch or on none")
                break
            except KERNEL_FAILURES as e:
                traceback.print_exc(file=sys.stderr)
                error = f"timing launch {3 + t} (not judged, but it must succeed): {type(e).__name__}: {e}"
                break
            timing.append((result.seconds, time.perf_counter() - began, 0.0))
    try:
        outputs = _judged_forms(results, on_gpu)
    except Exception as e:  # a device that fails the copy to the host: this case's error
        traceback.print_exc(file=sys.stderr)
        error = "; ".join(x for x in (error, f"the outputs: {type(e).__name__}: {e}") if x)
        outputs = []
    return run.record(outputs[0] if outputs else None, outputs[1] if len(outputs) > 1 else None, launches, timing,
                      _utf8(error))


def _utf8(text: str) -> bytes:
    """``text`` as the extension takes text: UTF-8 bytes, where a surrogate escape (a byte of a
    path or an argument that is not UTF-8) is the byte it stands for and any other lone surrogate
    is written out as its escape; the extension shows a bad byte as \\xNN, as it shows an adapter's."""
    return "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" and not "\udc80" <= c <= "\udcff" else c
                   for c in text).encode("utf-8", "surrogateescape")


def _poisoned(bundle: Bundle, stride: int) -> Any:
    """float32 [m, stride] of mqacheck's poison where the kernel writes: on the bundle's device
    (filled there, no copy), else a NumPy array."""
    if bundle.device is None:
        return poison(bundle.m, stride)
    torch = require_torch("a device bundle")
    return torch.full((bundle.m, stride), POISON_BITS, dtype=torch.int32, device=bundle.device).view(torch.float32)


def _judged_forms(results: list[Launch], on_gpu: bool) -> list[Any]:
    """The launches' outputs as the judge reads them: float32 tensors left on their GPU where the
    extension judges there and every output lies on the same one (check()'s rule), else on the host."""
    device = [r.on_device for r in results]
    same_gpu = on_gpu and all(d is not None for d in device) and len({str(d.device) for d in device}) <= 1
    return [_in_memory(r.on_device if same_gpu else r.logits, f"launch {i + 1}'s output", False, on_gpu=same_gpu)
            for i, r in enumerate(results)]
