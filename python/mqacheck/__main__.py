"""python3 -m mqacheck run: a suite against a kernel function in this process (mqacheck.suite_run).

    python3 -m mqacheck run --cases cases/nightly.toml --convention deepgemm \\
        --function deep_gemm:fp8_mqa_logits --accumulate sm90-wgmma --relu fmax --out reports/

Every option `mqacheck run --kernel` has for the kernel and its contract (--accumulate, --relu,
--mask, --must-produce, --operation, --timing-launches, ...) means the same here; the contract
flags are read by mqacheck's own options. The reports are the binary's. Exit status: 0 every
expectation holds, 1 findings or cases not judged, 2 bad input or no case judged; interrupted
(SIGINT) 130, and SIGTERM or SIGHUP end the process with that signal, once the run has unwound:
the reports are written whole or not at all, and the message says which.
"""
from __future__ import annotations

import argparse
import gc
import os
import shlex
import signal
import sys
import threading
from typing import Any, Sequence

from .adapter import add_function_arguments, chosen_device
from .check import MqacheckInputError, threads_problem
from .core import CoreNotFound, CoreSettingError
from .loading import FunctionSpecError, load_function
from .protocol import fitted_label
from .suite import SuiteError
from .suite_run import SuiteResult, run_suite
from .tensors import require_torch


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m mqacheck",
                                     description="mqacheck in this Python process (the binary is `mqacheck`).")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run", help="every case of a suite against a kernel function in this process, with the binary's reports",
        description="Every case of a suite against a kernel function run in this process, judged through "
                    "mqacheck._core, with `mqacheck run --kernel`'s reports. Contract flags (--accumulate, --relu, "
                    "--mask, --logits-dtype, ...) are `mqacheck check`'s.")
    run.add_argument("--cases", required=True, metavar="FILE", help="suite file (TOML)")
    run.add_argument("--case", action="append", default=[], metavar="NAME",
                     help="run only this case of the suite (repeatable)")
    add_function_arguments(run)
    run.add_argument("--out", default=None, metavar="DIR",
                     help="folder for report.json, report.xml, summary.md and report.html")
    run.add_argument("--operation", default=None, choices=("prefill", "paged", "both"),
                     help="what the function computes (default: the convention's; prefill for bundle)")
    run.add_argument("--timing-launches", type=int, default=3, metavar="N",
                     help="launches after the two judged, timed and not judged (default 3)")
    run.add_argument("--must-produce", action="append", default=[], metavar="CLASS",
                     help="the kernel carries a planted bug that this finding class must catch on some case "
                          "(repeatable)")
    run.add_argument("--threads", type=int, default=0, help="the judge's threads (default: every core)")
    run.add_argument("--no-diagnosis", action="store_true", help="findings without the diagnosis")
    run.add_argument("--binary", default=None, help="the mqacheck binary whose extension to load")
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Python next runs (never inside the judge's C++ code, so
    never while the reports are being written), to unwind the run like an interrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, frame: Any) -> None:
    # A second one ends the process at once: a run stuck where Python does not run (a hung device
    # call) still stops.
    signal.signal(signum, signal.SIG_DFL)
    raise Terminated(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args, contract = _parser().parse_known_args(argv)
    # The run is unwound on SIGTERM and SIGHUP as on SIGINT (a signal the caller set to be ignored,
    # nohup's, stays ignored); the handlers are this command's, put back when it returns. Only the
    # main thread may set them: called from another, the signals keep their own handling.
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) == signal.SIG_DFL:
                previous[signum] = signal.signal(signum, _raise_terminated)
    ended_by: int | None = None
    try:
        status, ended_by = _main(args, contract, argv)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if ended_by is not None:  # ended as the signal would have ended it, once nothing is left behind
        gc.collect()
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(ended_by, signal.SIG_DFL)
        os.kill(os.getpid(), ended_by)
    return status


def _main(args: argparse.Namespace, contract: list[str], argv: Sequence[str] | None) -> tuple[int, int | None]:
    command = "python3 -m mqacheck " + shlex.join(sys.argv[1:] if argv is None else list(argv))
    device_name = chosen_device(args)
    try:
        if not 0 <= args.timing_launches <= 100:
            raise FunctionSpecError(f"--timing-launches {args.timing_launches}: expected 0 to 100")
        if problem := threads_problem(args.threads):
            raise FunctionSpecError(f"--threads {args.threads}: {problem}")
        try:
            fn = load_function(args.function)
        except FunctionSpecError:
            raise
        except (Exception, SystemExit) as e:  # importing the user's file ran its code: say what failed there
            raise FunctionSpecError(f"importing {args.function}: {type(e).__name__}: {e}") from None
        device = None if device_name == "numpy" else require_torch("--device " + device_name).device(device_name)
        label = args.label if args.label is not None else fitted_label(f"{args.convention}:{args.function}")
        result = run_suite(fn, args.cases, convention=args.convention, device=device, label=label, out=args.out,
                           case_names=args.case, operation=args.operation, timing_launches=args.timing_launches,
                           must_produce=args.must_produce, threads=args.threads, diagnose=not args.no_diagnosis,
                           command=command, binary=args.binary, progress=_progress, flags=contract)
    except (FunctionSpecError, MqacheckInputError, CoreNotFound, CoreSettingError, SuiteError, RuntimeError) as e:
        print(f"mqacheck: {e}", file=sys.stderr)
        return 2, None
    except KeyboardInterrupt as e:
        return _interrupted(e, getattr(e, "reports_written", ""))
    try:
        _print_summary(result)
    except KeyboardInterrupt as e:  # the run is done; its reports, where asked for, are written
        return _interrupted(e, result.written)
    if result.write_error:
        print(f"mqacheck: the reports were not written: {result.write_error}", file=sys.stderr)
    return result.status, None


def _interrupted(e: KeyboardInterrupt, written: str) -> tuple[int, int | None]:
    """What an interrupt (or Terminated) ends the command with, and the message that says whether
    the reports were written."""
    print("mqacheck: interrupted" + (f" after the reports were written ({written})" if written
                                     else ": no report written"), file=sys.stderr)
    return 130, e.signum if isinstance(e, Terminated) else None


def _progress(case: str, where: str) -> None:
    print(f"  {case}: judged on {where}" if where not in ("skipped", "not judged") else f"  {case}: {where}",
          file=sys.stderr, flush=True)


def _print_summary(result: SuiteResult) -> None:
    r = result.report
    for row in r["results"]:
        findings = sorted({f["class"] for f in row["findings"]})
        detail = row["error"].splitlines()[0] if row.get("error") else ", ".join(findings)
        print(f"{_shown(row['case']):<32} {row['kernel_seconds'] * 1e3:9.3f} ms  {row['outcome']:<7} {_shown(detail)}")
    for row in r["results"]:
        if "suspicion" in row:
            print(f"  case '{_shown(row['case'])}': {row['suspicion']['note']}")
    for s in r["skipped"]:
        print(f"{_shown(s['case']):<32} skipped: {_shown(s['reason'])}")
    unjudged = sum(1 for row in r["results"] if row["outcome"] == "error")
    print(f"suite '{_shown(r['suite'])}': {len(r['results']) - unjudged} judged, {unjudged} not judged, "
          f"{len(r['skipped'])} skipped; " + ("every expectation holds" if r["expectations_hold"] else "EXPECTATIONS BROKEN:"))
    for b in r["broken_expectations"]:
        print(f"  - {_shown(b)}")
    if result.written:
        print(_shown(result.written))


def _shown(text: str) -> str:
    """Text from elsewhere (a kernel's error, a case name) as the terminal shows it: control and
    bidirectional characters written as escapes, never obeyed (as reports/escape.hpp does)."""
    return "".join(c if c.isprintable() and not 0x202A <= ord(c) <= 0x202E and not 0x2066 <= ord(c) <= 0x2069
                   else f"\\u{ord(c):04x}" for c in text)


if __name__ == "__main__":
    sys.exit(main())
