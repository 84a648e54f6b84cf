#!/usr/bin/env python3
"""What a suite run costs per case, as a ratio to the kernel's own time: the in-process runner
(mqacheck.run_suite, `python3 -m mqacheck run`) against `mqacheck run --kernel` through the package's
adapter (files, a second process), one causal case per shape, every figure from this one run.

Usage (MQACHECK_CORE set where the extension is not beside MQACHECK):
    python3 tests/bench/suite_run_bench.py MQACHECK [--shape 2048x16384] [--shape 8192x65536]
            [--heads 64] [--head-dim 128] [--kernel triton|numpy] [-- CONTRACT FLAGS...]

--kernel triton (a GPU machine with torch and Triton): our Triton kernel (kernels/triton/served.py),
bundles on the GPU; defaults --accumulate sm90-wgmma --relu fmax, its contract. --kernel numpy (any
machine): the NumPy kernel of in_process_bench.py; defaults --accumulate fp32.

Columns, each run's own report (report.json) and the wall clock around it:
- kernel: the best of launch 2 and the 3 timing launches (the report's kernel_seconds);
- exchange overhead: both judged launches' turns less their kernel time (the report's
  overhead_seconds: `run --kernel`'s "adapter overhead"), and its ratio to two launches of the
  kernel's time (launch 1's own time may include a JIT compilation: not the denominator);
- case: the case's whole time (timings.total_seconds: inputs generated, the exact reference and its
  magnitudes, the launches, the judgement) and, apart, the reference's share (reference_seconds);
- judged: everything but the inputs, the reference and the launches (the bundle put on the device,
  buffers poisoned, the comparator; through the adapter also the timing launches' output files,
  which its report does not time apart), as a ratio to the kernel's time.
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "kernels", "triton"), HERE]


def figures(report):
    """(kernel s, exchange overhead s, case s, reference s, judged s, outcome, findings, metrics)."""
    r, t = report["results"][0], report["timings"][0]
    a = r["adapter"]
    turns = sum(a["exchange_seconds"]) + sum(a["timing_launch_seconds"])
    judged = t["total_seconds"] - t["inputs_seconds"] - t["reference_seconds"] - turns
    return (r["kernel_seconds"], a["overhead_seconds"], t["total_seconds"], t["reference_seconds"], judged,
            r["outcome"], r["findings"], r["metrics"])


def main():
    from in_process_bench import bench_arguments
    args, contracts, shapes = bench_arguments(__doc__)
    if len(contracts) > 1:
        sys.exit("suite_run_bench.py: one contract (one group of flags after --)")
    flags = contracts[0]

    import mqacheck

    if mqacheck.load_core(args.mqacheck) is None:
        sys.exit("no mqacheck._core: build it with the binary (target mqa_python_core) or set MQACHECK_CORE")
    if args.kernel == "deepgemm":
        sys.exit("suite_run_bench.py: --kernel triton or numpy (DeepGEMM's suite runs are ci/real_libraries.sh's)")
    if args.kernel == "triton":
        from served import correct as kernel
        device, spec = "cuda", os.path.join(ROOT, "kernels", "triton", "served.py") + ":correct"
    else:
        import numpy as np
        from in_process_bench import numpy_kernel

        def kernel(bundle):
            return numpy_kernel(np, bundle)
        device, spec = None, None
    print(f"Contract: {' '.join(flags)}")
    print(f"| shape (M x N, H={args.heads}, D={args.head_dim}) | runner | kernel ms | exchange overhead | case "
          f"| of which the reference | judged | judged on | run wall | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        # Triton compiles at the first launch: one small case first, so that no shape's warm-up
        # includes it (the figures use launch 2 onwards anyway).
        warm = os.path.join(tmp, "warm.toml")
        with open(warm, "w") as f:
            f.write(f'[suite]\nname = "warm"\n[[case]]\nname = "warm"\nm = 256\nn = 1024\nheads = {args.heads}\n'
                    f'head_dim = {args.head_dim}\nlayout = {{ kind = "causal" }}\n')
        mqacheck.run_suite(kernel, warm, device=device, timing_launches=0, binary=args.mqacheck, flags=flags)
        for m, n in shapes:
            suite = os.path.join(tmp, f"bench-{m}x{n}.toml")
            with open(suite, "w") as f:
                f.write(f'[suite]\nname = "suite-run-bench"\n[[case]]\nname = "causal-{m}x{n}"\nm = {m}\nn = {n}\n'
                        f'heads = {args.heads}\nhead_dim = {args.head_dim}\nlayout = {{ kind = "causal" }}\n')
            start = time.perf_counter()
            result = mqacheck.run_suite(kernel, suite, device=device, binary=args.mqacheck, flags=flags)
            in_process_wall = time.perf_counter() - start
            rows = [("in process", figures(result.report), result.judged_on[f"causal-{m}x{n}"], in_process_wall)]
            adapter = [sys.executable, "-m", "mqacheck.adapter", "--function",
                       spec or os.path.join(HERE, "suite_run_bench.py") + ":_numpy_served"]
            if device:
                adapter += ["--device", device]
            with tempfile.TemporaryDirectory(dir=tmp) as out:
                start = time.perf_counter()
                done = subprocess.run([args.mqacheck, "run", "--cases", suite, "--kernel", shlex.join(adapter),
                                       "--out", out, *flags], capture_output=True, text=True,
                                      env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path[:3])))
                wall = time.perf_counter() - start
                if done.returncode not in (0, 1):
                    sys.exit(f"mqacheck run --kernel failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
                with open(os.path.join(out, "report.json")) as f:
                    rows.append(("run --kernel (adapter)", figures(json.load(f)), "host", wall))
            same = all(r[1][5:] == rows[0][1][5:] for r in rows)
            for runner, (k, overhead, case, reference, judged, outcome, _, _), where, wall in rows:
                ratio = lambda s, base: "unknown" if s is None else f"{s * 1e3:.1f} ms = {s / base:.3g}x"  # noqa: E731
                print(f"| {m} x {n} | {runner} | {k * 1e3:.2f} | {ratio(overhead, 2 * k)} | {case * 1e3:.0f} ms "
                      f"| {reference * 1e3:.0f} ms | {ratio(judged, k)} | {where} | {wall:.2f} s "
                      f"| {outcome}{'' if same else ' (JUDGEMENTS DIFFER)'} |", flush=True)
    print("exchange overhead: the two judged launches' turns less their kernel time, as a ratio to twice the kernel's time "
          "(`run --kernel`'s adapter overhead: writing and reading the .npy outputs, the second process); judged: the "
          "case's time less its inputs, reference and launches, as a ratio to one launch. Findings and metrics of the "
          "two runners are compared: JUDGEMENTS DIFFER marks any difference.")


def _numpy_served(bundle):
    """The NumPy kernel for the adapter (--kernel numpy)."""
    import numpy as np
    from in_process_bench import numpy_kernel
    return numpy_kernel(np, bundle)


if __name__ == "__main__":
    main()
