#!/usr/bin/python3
"""The adapter's overhead per case in `mqacheck run --kernel`, as a ratio to the kernel's own time.

Usage: /usr/bin/python3 tests/bench/adapter_bench.py MQACHECK [--adapter 'COMMAND'] [--m 2048]
       [--n 16384] [--heads 64] [--head-dim 128] [--cases 4] [-- CONTRACT FLAGS...]

Writes a suite of --cases causal cases of one shape (seeds differ), runs it through the adapter,
and reads report.json. Per case and launch, mqacheck times the exchange (poisoned output written,
request, the adapter's work, response, output read back) and the adapter reports its kernel's own
time ("seconds"); the overhead of a case is the two exchanges less the two kernel times. The first
case carries the adapter's start-up and any JIT compilation: the medians leave it out.

Defaults: the nightly shape (M=2048, N=16384, H=64, D=128) and the NumPy fp32 test adapter
(tests/cli/adapters/numpy_adapter.py). On a GPU machine pass a torch kernel's adapter:
    --adapter 'python3 -m my_package.adapter' -- --accumulate fp22-truncated
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NUMPY_ADAPTER = os.path.join(HERE, "..", "cli", "adapters", "numpy_adapter.py")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mqacheck")
    parser.add_argument("--adapter", default=f"{sys.executable} {os.path.normpath(NUMPY_ADAPTER)}")
    parser.add_argument("--m", type=int, default=2048)
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--heads", type=int, default=64)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--cases", type=int, default=4, help="cases of that shape; the first is warm-up")
    parser.add_argument("--timeout", default="600")
    # Contract flags follow a lone "--" and go to mqacheck unparsed (argparse would take them as its own).
    argv = sys.argv[1:]
    contract = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.contract = contract
    if args.n < args.m:
        parser.error("causal cases need n >= m")

    with tempfile.TemporaryDirectory() as tmp:
        suite = os.path.join(tmp, "bench.toml")
        with open(suite, "w") as f:
            f.write(f'[suite]\nname = "adapter-bench"\n[defaults]\nm = {args.m}\nn = {args.n}\n'
                    f'heads = {args.heads}\nhead_dim = {args.head_dim}\nlayout = {{ kind = "causal" }}\n')
            for i in range(args.cases):
                f.write(f'[[case]]\nname = "case-{i}"\nseed = {i + 1}\n')
        out = os.path.join(tmp, "reports")
        run = subprocess.run([args.mqacheck, "run", "--cases", suite, "--kernel", args.adapter, "--timeout", args.timeout,
                              "--out", out, *args.contract], capture_output=True, text=True)
        if not os.path.exists(os.path.join(out, "report.json")):
            sys.exit(f"mqacheck run failed (exit {run.returncode}):\n{run.stderr}{run.stdout[-2000:]}")
        report = json.load(open(os.path.join(out, "report.json")))

    print(f"adapter: {args.adapter}\nlabel: {report['kernel']['label']}\nshape: M={args.m} N={args.n} "
          f"H={args.heads} D={args.head_dim}, {args.cases} cases; mqacheck exit {run.returncode}\n")
    print("per case, both launches summed: kernel = the adapter's \"seconds\"; adapter side = its turn (request to\n"
          "response) less the kernel; mqacheck side = poisoned output written and output read back\n")
    print(f"{'case':<8} {'outcome':<8} {'kernel':>10} {'adapter side':>13} {'mqacheck side':>14} {'overhead':>10} {'ratio':>8}")
    overheads, kernels, ratios, adapter_sides, host_sides = [], [], [], [], []
    for i, r in enumerate(report["results"]):
        a = r["adapter"]
        if len(a["launch_seconds"]) != 2 or None in a["launch_seconds"]:
            print(f"{r['case']:<8} {r['outcome']:<8} (no timing: {r.get('error', 'the adapter gave no seconds')[:80]})")
            continue
        kernel = sum(a["launch_seconds"])
        adapter_side = sum(a["response_seconds"]) - kernel
        host_side = sum(a["exchange_seconds"]) - sum(a["response_seconds"])
        overhead = a["overhead_seconds"]
        ratio = overhead / kernel if kernel > 0 else float("inf")
        print(f"{r['case']:<8} {r['outcome']:<8} {kernel * 1e3:>8.2f}ms {adapter_side * 1e3:>11.2f}ms "
              f"{host_side * 1e3:>12.2f}ms {overhead * 1e3:>8.2f}ms {ratio * 100:>7.1f}%")
        if i > 0:
            overheads.append(overhead)
            kernels.append(kernel)
            ratios.append(ratio)
            adapter_sides.append(adapter_side)
            host_sides.append(host_side)
    if ratios:
        median = statistics.median
        print(f"\nmedians over cases 1..{args.cases - 1}: kernel {median(kernels) * 1e3:.2f} ms per case (two launches), "
              f"overhead {median(overheads) * 1e3:.2f} ms per case (adapter side {median(adapter_sides) * 1e3:.2f} ms, "
              f"mqacheck side {median(host_sides) * 1e3:.2f} ms), ratio {median(ratios) * 100:.1f}%")


if __name__ == "__main__":
    main()
