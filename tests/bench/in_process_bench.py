#!/usr/bin/env python3
"""What a verdict costs from Python, as a ratio to the kernel's own time: mqacheck.check() judging
in process (mqacheck._core) cold (the bundle opened and proven, its reference computed) and warm
(the same bundle again: judged against the references the cold call kept), and through the `mqacheck check` binary (.npy files, a second process),
on one causal case per shape, each figure from this one run.

Usage (MQACHECK_CORE set where the extension is not beside MQACHECK):
    python3 tests/bench/in_process_bench.py MQACHECK [--shape 2048x16384] [--shape 8192x65536]
            [--heads 64] [--head-dim 128] [--kernel triton|deepgemm|numpy] [--in-process-only]
            [-- CONTRACT FLAGS...]...  (each group after a -- one contract, judged in turn)

--kernel triton (a GPU machine with torch and Triton): our Triton kernel (kernels/triton/served.py),
timed with triton.testing.do_bench on its own output buffer; defaults --accumulate sm90-wgmma
--relu fmax, its contract. --kernel deepgemm (where deep_gemm imports: ci/real_libraries.sh builds
it): DeepGEMM's fp8_mqa_logits through the deepgemm convention, timed the same way (each call
allocates its output, as DeepGEMM's own benchmark does), and its last output judged (a row stride
padded by DeepGEMM); the same contract. --kernel numpy (any machine): a float32 NumPy einsum written here, best
of --repeats; defaults --accumulate fp32. The judge's time is wall time around check(), best of
--repeats warm calls. A float32 tensor on the GPU is judged there where the extension has the GPU path
(api::judge_device_output: the device comparator against the references' device copy, kept beside
the host ones); "warm, on the host" times the same verdict with the tensor copied to the host inside
the timed call (.cpu()), the judge's path before the device comparator.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "kernels", "triton")]


def contract_keywords(flags):
    """["--accumulate", "sm90-wgmma", ...] -> {"accumulate": "sm90-wgmma", ...} for check()."""
    return {flags[i].removeprefix("--").replace("-", "_"): flags[i + 1] for i in range(0, len(flags), 2)}


def numpy_kernel(np, b):
    """float32 throughout: k_scale * sum_h w * relu(q . k), -inf outside each row's window."""
    dots = np.einsum("mhd,nd->mhn", b.q.decode().astype(np.float32), b.k.decode().astype(np.float32))
    heads = np.einsum("mh,mhn->mn", b.weights, np.maximum(dots, np.float32(0)))
    logits = (heads * np.asarray(b.k_scale, np.float32)[None, :]).astype(np.float32)
    j = np.arange(b.n)[None, :]
    return np.where((j >= b.ks[:, None]) & (j < b.ke[:, None]), logits, np.float32(-np.inf))


# Bundle.seconds's steps that follow one another (the references' own steps lie within "references").
WHOLE_STEPS = ("references", "device copy", "comparator", "launches", "witness", "document", "host")
REFERENCE_STEPS = ("reference.npy read", "proof", "exact reference", "centre", "gather")


def whole_steps(steps):
    return sum(steps.get(key, 0.0) for key in WHOLE_STEPS)


def split_rest(steps, wall):
    """What a verdict of `wall` seconds spent beside its steps: in the extension's call, and in Python."""
    steps["beside the steps"] = steps["call"] - whole_steps(steps)
    steps["Python"] = wall - steps["call"]


def timed(fn, repeats=1):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def bench_arguments(doc):
    """(args, [contract flags], [(m, n)]) of a bench's command line: MQACHECK [--shape MxN]... [--heads H]
    [--head-dim D] [--repeats R] [--kernel triton|deepgemm|numpy] [-- CONTRACT FLAGS...]...; each group
    after a `--` is one contract, judged in turn; none: the kernel's contract (our Triton kernel's and
    DeepGEMM's sm90-wgmma with fmax relu, the NumPy one's fp32)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mqacheck")
    parser.add_argument("--shape", action="append", help="MxN (causal); repeatable")
    parser.add_argument("--heads", type=int, default=64)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kernel", choices=("triton", "deepgemm", "numpy"), default="triton")
    parser.add_argument("--in-process-only", action="store_true",
                        help="leave out the verdicts on the host and through the binary (their columns show -)")
    groups = [[]]
    for word in sys.argv[1:]:
        if word == "--":
            groups.append([])
        else:
            groups[-1].append(word)
    args = parser.parse_args(groups[0])
    contracts = [g for g in groups[1:] if g]
    if not contracts:
        contracts = [["--accumulate", "fp32"] if args.kernel == "numpy" else ["--accumulate", "sm90-wgmma", "--relu", "fmax"]]
    return args, contracts, [tuple(int(x) for x in s.lower().split("x")) for s in (args.shape or ["2048x16384"])]


def main():
    args, contracts, shapes = bench_arguments(__doc__)

    import numpy as np
    import mqacheck

    core = mqacheck.load_core(args.mqacheck)
    if core is None:
        sys.exit("no mqacheck._core: build it with the binary (target mqa_python_core) or set MQACHECK_CORE")
    print(f"Kernel: {args.kernel}; contracts: {'; '.join(' '.join(flags) for flags in contracts)}")
    print(f"| contract | shape (M x N, H={args.heads}, D={args.head_dim}) | kernel ms | in process, cold | in process, warm "
          f"| judged on | warm, on the host | binary (files) | references kept (host; device) | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    breakdown = []
    with tempfile.TemporaryDirectory() as tmp:
        for m, n in shapes:
            suite = os.path.join(tmp, f"bench-{m}x{n}.toml")
            with open(suite, "w") as f:
                f.write(f'[suite]\nname = "in-process-bench"\n[[case]]\nname = "causal-{m}x{n}"\nm = {m}\nn = {n}\n'
                        f'heads = {args.heads}\nhead_dim = {args.head_dim}\nlayout = {{ kind = "causal" }}\n')
            folder = os.path.join(tmp, f"b-{m}x{n}")
            subprocess.run([args.mqacheck, "gen", "--cases", suite, "--case", f"causal-{m}x{n}", "--out", folder],
                           check=True, capture_output=True)
            if args.kernel == "triton":
                import torch
                import triton.testing
                from served import correct
                bundle = mqacheck.load_inputs(folder, device="cuda")
                out = torch.full((m, n), float("nan"), dtype=torch.float32, device="cuda")
                kernel_ms = triton.testing.do_bench(lambda: correct(bundle, out))
                torch.cuda.synchronize()
            elif args.kernel == "deepgemm":
                import deep_gemm
                import torch
                import triton.testing
                from mqacheck.conventions import CONVENTIONS
                bundle = mqacheck.load_inputs(folder, device="cuda")
                call = CONVENTIONS["deepgemm"].wrap(deep_gemm.fp8_mqa_logits)
                kernel_ms = triton.testing.do_bench(lambda: call(bundle))
                out = call(bundle)
                torch.cuda.synchronize()
            else:
                bundle = mqacheck.load_inputs(folder)
                seconds, out = timed(lambda: numpy_kernel(np, bundle), args.repeats)
                kernel_ms = seconds * 1e3
            for flags in contracts:
                breakdown += judge_under(args, core, folder, out, kernel_ms, m, n, flags)
            del bundle, out
            if args.kernel != "numpy":
                torch.cuda.empty_cache()
    print("\nA verdict in process, step by step (Bundle.seconds: the wall time of each step of the cold call, and of "
          "one more warm call; the references found, or computed: reference.npy's rows read, their proof against the "
          "keeps-NaN reference computed where no digest is trusted, the exact reference with its magnitudes, the "
          "modelled centre, their rows gathered into the whole references; of the comparator, \"comparator kernel\": its "
          "kernel from launch to end, \"comparator download\": its figures copied to the host, \"comparator summary\": "
          "the judgement made of them there; \"opened\": the cold call's bundle opened, its files "
          "read, their digests checked and its inputs regenerated to prove them; \"beside the steps\": what the extension's "
          "call spent beside them (its entry, the tensor taken by DLPack, the judge's own checks); \"Python\": what "
          "check() spent outside the extension):\n")
    comparator_steps = ("comparator kernel", "comparator download", "comparator summary")
    columns = ("opened",) + WHOLE_STEPS[:1] + REFERENCE_STEPS + WHOLE_STEPS[1:3] + comparator_steps + \
        WHOLE_STEPS[3:] + ("beside the steps", "Python")
    print("| contract | shape | kernel ms | verdict | " + " | ".join(columns) + " |")
    print("|---|---|---|---|" + "---|" * len(columns))
    for accumulate, m, n, kernel_ms, which, steps in breakdown:
        shown = lambda key: f"{steps[key] * 1e3:.1f} ms" if key in steps else "-"  # noqa: E731
        print(f"| {accumulate} | {m} x {n} | {kernel_ms:.2f} | {which} | " + " | ".join(shown(k) for k in columns) + " |")
    print("The binary's figure takes the digest's word for the reference (--trust-digest), as a warm in-process "
          "verdict does. A warm verdict is judged against the references the cold one kept (core.py: "
          "MQACHECK_REFERENCE_CACHE_BYTES); each contract's are dropped before the next is judged, so that each cold "
          "verdict computes its own and the memory shown is one contract's. \"judged on\" says where (device: the "
          "device comparator). The judge's device memory beyond the output is the references' device copy (the last "
          "column) and the comparator's scratch: 8 bytes a key for each of two rows in flight per multiprocessor (the "
          "rows' top-k bands; 0.07x the logits at 8192 x 65536 on an H200). Every verdict's findings and metrics are "
          "compared: JUDGEMENTS DIFFER marks any difference.")


def judge_under(args, core, folder, out, kernel_ms, m, n, flags):
    """One contract's row of the table, printed, and its two rows of steps (cold, warm) returned."""
    import mqacheck
    from mqacheck import core as core_module
    from mqacheck.contract import contract_flags

    contract = contract_keywords(flags)
    accumulate = contract.get("accumulate", "-")
    # Nothing kept from another contract or shape: this cold verdict computes its references.
    core_module._open.clear()
    capacity = core.reference_cache_bytes()
    core.set_reference_cache_bytes(0)
    core.set_reference_cache_bytes(capacity)
    # The cold verdict: the bundle opened (read, its digests checked, its inputs regenerated to prove
    # them), which check() then finds open, and the judgement.
    opening, _ = timed(lambda: core_module.opened_bundle(core, folder, contract_flags(**contract), "verify"))
    judging, j = timed(lambda: mqacheck.check(folder, out, in_process=True, **contract))
    cold = opening + judging
    opened = next(reversed(core_module._open.values()))
    cold_steps = dict(opened.seconds)
    cold_steps["opened"] = opening
    split_rest(cold_steps, judging)
    warm, j2 = timed(lambda: mqacheck.check(folder, out, in_process=True, **contract), args.repeats)
    judged_on = opened.judged_on
    # One more warm verdict, step by step: its steps and what check() spent beside them.
    once, _ = timed(lambda: mqacheck.check(folder, out, in_process=True, **contract))
    steps = dict(opened.seconds)
    split_rest(steps, once)
    host_copy = (lambda: out) if args.kernel == "numpy" else (lambda: out.cpu())
    if args.in_process_only:
        on_host, j4, binary, j3 = None, j2, None, j2
    else:
        on_host, j4 = timed(lambda: mqacheck.check(folder, host_copy(), in_process=True, **contract), args.repeats)
        binary, j3 = timed(lambda: mqacheck.check(folder, out, in_process=False, trust_digest=True,
                                                  binary=args.mqacheck, **contract))
    same = j.raw["findings"] == j3.raw["findings"] == j2.raw["findings"] == j4.raw["findings"]
    same = same and j.raw["metrics"] == j2.raw["metrics"] == j4.raw["metrics"] == j3.raw["metrics"]
    kept, _ = core.reference_cache_held()  # the judge's memory between verdicts (core.py)
    on_device = core.reference_device_bytes() if hasattr(core, "reference_device_bytes") else 0
    logits = m * n * 4
    kept_shown = (f"{kept / 2**30:.2f} GiB = {kept / logits:.2f}x; {on_device / 2**30:.2f} GiB = "
                  f"{on_device / logits:.2f}x the logits")
    ratio = lambda s: "-" if s is None else f"{s * 1e3:.1f} ms = {s * 1e3 / kernel_ms:.3g}x"  # noqa: E731
    print(f"| {accumulate} | {m} x {n} | {kernel_ms:.2f} | {ratio(cold)} | {ratio(warm)} | {judged_on} "
          f"| {ratio(on_host)} | {ratio(binary)} | {kept_shown} | {j.verdict}{'' if same else ' (JUDGEMENTS DIFFER)'} |",
          flush=True)
    return [(accumulate, m, n, kernel_ms, "cold", cold_steps), (accumulate, m, n, kernel_ms, "warm", steps)]


if __name__ == "__main__":
    main()
