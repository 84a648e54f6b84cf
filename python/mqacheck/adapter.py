"""The adapter command: serves a function named on the command line, in a library's convention.

    python3 -m mqacheck.adapter --function path/to/file.py:my_kernel               # fn(bundle) or fn(bundle, out)
    python3 -m mqacheck.adapter --convention deepgemm --function deep_gemm:fp8_mqa_logits
    mqacheck run --cases cases/quick.toml --kernel 'python3 -m mqacheck.adapter --function k.py:f' --accumulate fp32

Exit status: 0 when stdin closes, 2 when the function or the options are wrong (before serving).
"""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .conventions import CONVENTIONS, convention_named
from .loading import FunctionSpecError, load_function
from .serve import serve
from .tensors import require_torch


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m mqacheck.adapter",
        description="Serve a kernel function to `mqacheck run --kernel` (JSON lines on stdin/stdout).")
    parser.add_argument("--function", required=True, metavar="SPEC",
                        help="module:function or path/to/file.py:function")
    parser.add_argument("--convention", default="bundle", choices=list(CONVENTIONS),
                        help="the function's call signature (default: bundle, i.e. fn(bundle) or fn(bundle, out))")
    parser.add_argument("--device", default=None,
                        help="where bundles are loaded: numpy, cpu, cuda, cuda:N (default: numpy for the bundle "
                             "convention, cuda for the library conventions)")
    parser.add_argument("--label", default=None, help="the kernel's name and version in mqacheck's reports")
    args = parser.parse_args(argv)

    convention = convention_named(args.convention)
    device_name = args.device or ("numpy" if convention.call is None else "cuda")
    try:
        fn = load_function(args.function)
        device = None if device_name == "numpy" else require_torch("--device " + device_name).device(device_name)
    except (FunctionSpecError, RuntimeError) as e:
        print(f"mqacheck.adapter: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # importing the user's file ran its code: say what failed there
        print(f"mqacheck.adapter: importing {args.function}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return serve(convention.wrap(fn), label=args.label or f"{args.convention}:{args.function}", device=device)


if __name__ == "__main__":
    sys.exit(main())
