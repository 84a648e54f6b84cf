"""The adapter command: serves a function named on the command line, in a library's convention.

    python3 -m mqacheck.adapter --function path/to/file.py:my_kernel               # fn(bundle) or fn(bundle, out)
    python3 -m mqacheck.adapter --convention deepgemm --function deep_gemm:fp8_mqa_logits
    python3 -m mqacheck.adapter --convention deepgemm --function deep_gemm:fp8_mqa_logits --topk-convention torch-topk
        an indexer: the logits, then torch.topk over them; judged with
        mqacheck run --kernel '...' --topk-indices --topk-columns relative --topk-sorted
    mqacheck run --cases cases/quick.toml --kernel 'python3 -m mqacheck.adapter --function k.py:f' --accumulate fp32

Exit status: 0 when stdin closes, 2 when the function or the options are wrong (before serving).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .conventions import CONVENTIONS, convention_named
from .conventions.topk import TOPK_CONVENTIONS, topk_convention_named
from .loading import FunctionSpecError, load_function
from .protocol import fitted_label, label_problem
from .serve import serve
from .tensors import require_torch


def add_function_arguments(parser: argparse.ArgumentParser) -> None:
    """--function, --convention, --device and --label: a kernel function named on a command line
    (this adapter's, and `python3 -m mqacheck run`'s)."""
    parser.add_argument("--function", required=True, metavar="SPEC",
                        help="module:function or path/to/file.py:function")
    parser.add_argument("--convention", default="bundle", choices=list(CONVENTIONS),
                        help="the function's call signature (default: bundle, i.e. fn(bundle) or fn(bundle, out))")
    parser.add_argument("--device", default=None,
                        help="where bundles are loaded: numpy, cpu, cuda, cuda:N (default: numpy for the bundle "
                             "convention, cuda for the library conventions)")
    parser.add_argument("--label", default=None, help="the kernel's name and version in mqacheck's reports")


def chosen_device(args: argparse.Namespace) -> str:
    """--device, or the convention's default: numpy for the bundle convention, cuda for a library's."""
    return args.device or ("numpy" if convention_named(args.convention).call is None else "cuda")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m mqacheck.adapter",
        description="Serve a kernel function to `mqacheck run --kernel` (JSON lines on stdin/stdout).")
    add_function_arguments(parser)
    parser.add_argument("--topk-convention", default=None, choices=list(TOPK_CONVENTIONS),
                        help="an indexer: a top-k function over the logits, in this convention (judged with "
                             "mqacheck run --kernel ... --topk-indices and the convention's --topk-columns and "
                             "--topk-sorted)")
    parser.add_argument("--topk-function", default=None, metavar="SPEC",
                        help="the top-k function (default: the convention's library function, e.g. torch:topk)")
    args = parser.parse_args(argv)

    convention = convention_named(args.convention)
    device_name = chosen_device(args)
    topk = None
    try:
        if args.topk_convention is not None:
            topk_convention = topk_convention_named(args.topk_convention)
            if convention.relative_columns:
                # The top-k conventions rank column j as key j; relative logits hold key ks + j there.
                raise FunctionSpecError(
                    f"--topk-convention {args.topk_convention} takes logits in absolute columns (key j at column j), "
                    f"but --convention {args.convention} writes them relative to ks; accepted with --topk-convention: "
                    + ", ".join(c.name for c in CONVENTIONS.values() if not c.relative_columns))
            topk_fn = load_function(args.topk_function or topk_convention.default_function)

            def topk(bundle, logits, k, call=topk_convention.call, fn=topk_fn):
                return call(fn, bundle, logits, k)
        elif args.topk_function is not None:
            raise FunctionSpecError("--topk-function needs --topk-convention (the function's call signature)")
        fn = load_function(args.function)
        device = None if device_name == "numpy" else require_torch("--device " + device_name).device(device_name)
    except (FunctionSpecError, RuntimeError) as e:
        print(f"mqacheck.adapter: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # importing the user's file ran its code: say what failed there
        print(f"mqacheck.adapter: importing {args.function}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.label is not None and (problem := label_problem(args.label)):
        print(f"mqacheck.adapter: --label {args.label!r}: {problem}", file=sys.stderr)
        return 2
    return serve(convention.wrap(fn), label=args.label or fitted_label(f"{args.convention}:{args.function}"),
                 device=device, topk=topk)


if __name__ == "__main__":
    sys.exit(main())
