#!/usr/bin/env python3
"""The adapter's overhead per case (issue 10, "Performance"): the host's poison write, the request,
the kernel function's two launches, the output files and the responses, as a ratio to the kernel's
own time (the "seconds" the adapter reports). A benchmark, not a test.

    tests/bench/serve_overhead.py build/mqacheck --device cuda --function kernels/triton/served.py:correct
    tests/bench/serve_overhead.py build/mqacheck --function python/tests/numpy_kernels.py:tiled_in_place --m 256 --n 2048

Prints one line per repetition and the medians. PYTHONPATH must reach python/ (the package).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

POISON_BITS = 0x7FC0DEAD


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mqacheck")
    p.add_argument("--function", required=True)
    p.add_argument("--device", default="numpy")
    p.add_argument("--m", type=int, default=2048)
    p.add_argument("--n", type=int, default=16384)
    p.add_argument("--heads", type=int, default=64)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tmp", default=None, help="folder for the bundle and outputs (default: a temporary one)")
    a = p.parse_args()

    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        suite = Path(tmp) / "bench.toml"
        suite.write_text(f'[suite]\nname = "bench"\n\n[[case]]\nname = "causal"\nm = {a.m}\nn = {a.n}\n'
                         f'heads = {a.heads}\nhead_dim = {a.head_dim}\nlayout = {{ kind = "causal" }}\n')
        bundle = Path(tmp) / "bundle"
        start = time.perf_counter()
        subprocess.run([a.mqacheck, "gen", "--cases", str(suite), "--case", "causal", "--out", str(bundle)], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"bundle m={a.m} n={a.n} heads={a.heads} head_dim={a.head_dim}: {time.perf_counter() - start:.1f} s to generate")
        out = Path(tmp) / "out.npy"
        adapter = subprocess.Popen([sys.executable, "-m", "mqacheck.adapter", "--device", a.device, "--function",
                                    a.function], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        rows = []
        for r in range(a.repeats + 1):  # the first case pays for imports, compilation and the bundle's loading
            kernel, start = 0.0, time.perf_counter()
            for launch in (1, 2):
                np.save(out, np.full((a.m, a.n), POISON_BITS, dtype=np.uint32).view(np.float32))
                adapter.stdin.write(json.dumps({"bundle": str(bundle), "out": str(out), "launch": launch}) + "\n")
                adapter.stdin.flush()
                response = json.loads(adapter.stdout.readline())
                if not response.get("ok"):
                    print(f"adapter error: {response}", file=sys.stderr)
                    return 1
                kernel += response["seconds"]
            case = time.perf_counter() - start
            if r > 0:
                rows.append((case, kernel))
            print(f"{'warm-up' if r == 0 else f'case {r}'}: {case * 1e3:9.2f} ms for the case, kernel {kernel * 1e3:8.3f} ms "
                  f"(two launches), overhead {case - kernel:.4f} s = {(case - kernel) / kernel:.1f} x the kernel's time")
        adapter.stdin.close()
        adapter.wait()
        case, kernel = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
        print(f"median: case {case * 1e3:.2f} ms, kernel {kernel * 1e3:.3f} ms, overhead ratio {(case - kernel) / kernel:.2f} "
              f"(output {a.m * a.n * 4 / 2**20:.0f} MiB per launch, written twice: poison and logits)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
