#!/usr/bin/env python3
"""The production table on a GPU machine: each step of judging the nightly production case
(production-causal-64k: M=8192, N=65536, H=64, D=128, causal) timed in one script, each figure next
to the baseline it must beat, measured in the same run.

    production_table.py MQACHECK WORK_DIR REPORT.md [--gpu-full BUILD/tests/gpu/mqa_gpu_full]

Steps, each a fresh process whose wall time and peak RSS (os.wait4) are recorded:
  gen      mqacheck gen of the case: inputs, the exact reference (on the GPU where one is usable),
           the .npy files and digest.json. Target: < 10 s and < 2x the bundle's bytes.
  kernel   our Triton kernel (kernels/triton) on the bundle's inputs, timed by triton.testing.do_bench
           (the speed anchor); its output is saved as the external output `check` judges.
  check    mqacheck check of that output under the kernel's contract (sm90-wgmma, fmax), with
           --trust-digest (this script generated the bundle): the digest proves reference.npy, rows
           are judged in blocks. Target: < 5 s and < 3x the logits' bytes.
  full     mqa_gpu_full --variants hip-tiled: the exact reference's GPU kernels alone (CUDA events),
           as a ratio to the Triton kernel. Target: within 3x.
  run      mqacheck run of the case with the 8 GPU variants of the 2026-11-29 baseline: its stage
           timings. Target: half the baseline's 67.1 s.
Needs torch and Triton (the kernel step); the others run without them.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CASE = "production-causal-64k"
SUITE = os.path.join(ROOT, "cases", "nightly.toml")
BASELINE_VARIANTS = ["hip-naive", "hip-tiled", "hip-naive-end-inclusive", "hip-tiled-offset32", "hip-tiled-tail",
                     "hip-tiled-race", "hip-tiled-atomic-order", "hip-tiled-row-overrun"]
BASELINE_RUN_SECONDS = 67.1  # reports/baselines/nightly-h200-2026-11-29: the 8 variants on this case


def measured(args, log):
    """Runs args; returns (exit status, wall seconds, peak RSS bytes, stdout)."""
    start = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    log.write(f"$ {' '.join(args)}\n{out}\n-> exit {p.returncode}, {wall:.2f} s, peak RSS {usage.ru_maxrss / 1e6:.2f} GB\n\n")
    log.flush()
    return p.returncode, wall, usage.ru_maxrss * 1024, out


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def triton_kernel(bundle_dir, logits_path):
    """Our Triton kernel on the bundle: (median ms by do_bench, output bytes); saves the output."""
    import numpy as np
    import torch
    import triton.testing

    sys.path.insert(0, os.path.join(ROOT, "python"))
    sys.path.insert(0, os.path.join(ROOT, "kernels", "triton"))
    from mqa_logits import fp8_mqa_logits
    from mqacheck.bundle import load_bundle

    b = load_bundle(bundle_dir, device="cuda")
    out = torch.empty((b.m, b.n), dtype=torch.float32, device="cuda")

    def launch():
        fp8_mqa_logits(b.q, b.k, b.k_scale, b.weights, b.ks, b.ke, clean_logits=b.clean_logits, out=out)

    launch()
    torch.cuda.synchronize()
    ms = triton.testing.do_bench(launch, warmup=5, rep=50)
    np.save(logits_path, out.cpu().numpy())
    return ms, out.numel() * 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mqacheck")
    ap.add_argument("work")
    ap.add_argument("report")
    ap.add_argument("--gpu-full", help="mqa_gpu_full binary (the exact reference's kernel time)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    bundle, logits = os.path.join(a.work, "bundle"), os.path.join(a.work, "logits.npy")
    rows, ok = [], True
    with open(a.report + ".log", "w") as log:
        rc, gen_s, gen_rss, _ = measured([a.mqacheck, "gen", "--cases", SUITE, "--case", CASE, "--out", bundle,
                                          "--force"], log)
        ok &= rc == 0
        size = folder_bytes(bundle) if rc == 0 else 0
        rows.append(("`gen`", f"{gen_s:.1f} s", "< 10 s", f"{gen_rss / 1e9:.2f} GB = {gen_rss / max(size, 1):.2f}x "
                     f"the bundle ({size / 1e9:.2f} GB)", "< 2x"))
        kernel_ms = None
        try:
            kernel_ms, logits_bytes = triton_kernel(bundle, logits)
            rows.append(("our Triton kernel (do_bench)", f"{kernel_ms:.1f} ms", "the anchor", "-", "-"))
        except Exception as e:  # no torch/Triton: the table says so
            log.write(f"Triton kernel: {type(e).__name__}: {e}\n")
            rows.append(("our Triton kernel", f"not run: {type(e).__name__}: {e}", "", "", ""))
            ok = False
        if kernel_ms is not None:
            rc, check_s, check_rss, out = measured([a.mqacheck, "check", bundle, "--logits", logits, "--trust-digest",
                                                    "--accumulate", "sm90-wgmma", "--relu", "fmax"], log)
            ok &= rc == 0
            rows.append(("`check` of the kernel's output", f"{check_s:.1f} s (exit {rc})", "< 5 s",
                         f"{check_rss / 1e9:.2f} GB = {check_rss / logits_bytes:.2f}x the logits", "< 3x"))
        if a.gpu_full:
            rc, _, _, out = measured([a.gpu_full, "--variants", "hip-tiled"], log)
            found = re.search(r"kernels ([0-9.e+-]+) s \(([0-9.]+) TFLOP/s", out)
            engine = re.search(r"dots by ([^;]+);", out)
            if found:
                ref_s = float(found.group(1))
                ratio = f"{ref_s * 1e3 / kernel_ms:.1f}x the Triton kernel" if kernel_ms else ""
                rows.append(("exact reference, GPU kernels" + (f" ({engine.group(1)})" if engine else ""),
                             f"{ref_s * 1e3:.1f} ms ({found.group(2)} TFLOP/s)",
                             "within 3x of the kernel", ratio, ""))
                # The default engine against each other one (mqa_gpu_full compares every bit).
                for engines in re.findall(r"Dot engines on this problem, kernels alone: ([^\n]+)", out):
                    rows.append(("dot engines compared, kernels alone", engines, "", "", ""))
            else:
                rows.append(("exact reference, GPU kernels", f"not found in mqa_gpu_full's output (exit {rc})", "", "", ""))
                ok = False
        variants = [x for v in BASELINE_VARIANTS for x in ("--variant", v)]
        run_out = os.path.join(a.work, "run-report")
        # --timing prints the stage line read below; --diagnose-mutants keeps the work the baseline measured.
        rc, run_s, run_rss, out = measured([a.mqacheck, "run", "--cases", SUITE, "--case", CASE, *variants, "--timing",
                                            "--diagnose-mutants", "--out", run_out], log)
        # One case cannot show every mutant (hip-tiled-tail needs N % 256 != 0), so run may exit 1:
        # what must hold here is that every correct variant passes and no mutant passes unnoticed
        # by more than that one blind spot.
        try:
            with open(os.path.join(run_out, "report.json")) as f:
                report = json.load(f)
            failing_models = [r["variant"] for r in report["results"] if r["kind"] == "model" and r["verdict"] != "pass"]
            blind = [m["variant"] for m in report["mutants"] if not m["caught_by"]]
        except (OSError, ValueError, KeyError) as e:
            failing_models, blind = [f"no report.json ({e})"], []
        log.write(f"run: correct variants failing: {failing_models}; mutants caught by no case: {blind}\n")
        ok &= rc in (0, 1) and not failing_models and set(blind) <= {"hip-tiled-tail"}
        stages = re.search(rf"^{CASE}\s+([0-9.]+)s\s+([0-9.]+)s\s+([0-9.]+)s", out, re.M)
        detail = (f"inputs {stages.group(1)} s, reference {stages.group(2)} s, variants and judging "
                  f"{float(stages.group(3)) - float(stages.group(1)) - float(stages.group(2)):.1f} s") if stages else ""
        where = re.search(rf"^{CASE}: (output buffers .*)$", out, re.M)  # run's line of stage times
        if where:
            detail += f" ({where.group(1)})"
        rows.append(("`run`, 8 variants", f"{run_s:.1f} s = {run_s / BASELINE_RUN_SECONDS:.2f}x the baseline's "
                     f"{BASELINE_RUN_SECONDS} s", "< 0.5x", detail, f"peak RSS {run_rss / 1e9:.1f} GB"))
    with open(a.report, "w") as md:
        md.write(f"# Production-size judging on this machine: {CASE} (M=8192, N=65536, H=64, D=128, causal)\n\n")
        md.write("| step | measured | target | memory / ratio | target |\n|---|---|---|---|---|\n")
        for r in rows:
            md.write("| " + " | ".join(r) + " |\n")
        md.write(f"\nEvery command's output: {os.path.basename(a.report)}.log\n")
    print(open(a.report).read())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
