#!/usr/bin/env python3
"""The anchors' own checks next to mqacheck's verdict, on a real kernel and its planted bugs: what
the checks the libraries' tests use conclude about each output, and what mqacheck concludes.

Usage (a CUDA machine with torch and DeepGEMM importable; PYTHONPATH=python:tests/gpu/real_libraries
and DeepGEMM's folder; ci/real_libraries.sh runs it):
    python3 tests/bench/anchors.py MQACHECK [--m 2048] [--n 16384] [--heads 64] [--head-dim 128]

Each kernel is DeepGEMM's fp8_mqa_logits or one of tests/gpu/real_libraries/planted.py's bugs on
one causal case. The checks, each written here from the test it imitates (semantics only):
- DeepGEMM tests/test_attention.py: calc_diff (1 - 2 sum(xy) / sum(x^2 + y^2) over the windows)
  against the reference of the dequantized fp8 inputs below 5e-6, and the -inf positions equal;
- AITER op_tests/triton_tests/attention/test_fp8_mqa_logits.py: calc_diff below 1e-3 against its
  float32 reference, and the -inf positions equal;
- vLLM's gfx942 test: per-row cosine similarity with its bf16 reference, mean >= 0.99 and min >= 0.95,
  and the top-64 keys of each row overlapping >= 0.85 on average;
- torch.testing.assert_close against a float32 einsum, its default float32 tolerances;
- mqacheck: check() under sm90-wgmma --relu fmax (DeepGEMM's honest contract), with its findings.
Prints a Markdown table.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "..", "python"), os.path.join(HERE, "..", "gpu", "real_libraries")]


def calc_diff(torch, x, y):
    x, y = x.double(), y.double()
    denominator = (x * x + y * y).sum()
    return float(1 - 2 * (x * y).sum() / denominator) if denominator > 0 else 0.0


def within_windows(torch, logits, inside):
    return torch.where(inside, logits, torch.zeros_like(logits))


def deepgemm_check(torch, logits, simulated, inside):
    same_mask = bool(torch.equal(torch.isneginf(logits), ~inside))
    diff = calc_diff(torch, within_windows(torch, logits, inside), within_windows(torch, simulated, inside))
    return diff < 5e-6 and same_mask, f"{diff:.2e}"


def aiter_check(torch, logits, reference, inside):
    same_mask = bool(torch.equal(torch.isneginf(logits), ~inside))
    diff = calc_diff(torch, within_windows(torch, logits, inside), within_windows(torch, reference, inside))
    return diff < 1e-3 and same_mask, f"{diff:.2e}"


def vllm_check(torch, logits, reference, inside, k=64):
    a, b = within_windows(torch, logits, inside), within_windows(torch, reference, inside)
    rows = inside.any(dim=1)
    cosine = torch.nn.functional.cosine_similarity(a[rows], b[rows], dim=1)
    top = min(k, int(inside.sum(dim=1).min().clamp(min=1)))
    got = logits[rows].topk(top, dim=1).indices
    want = reference[rows].topk(top, dim=1).indices
    overlap = torch.tensor([len(set(g.tolist()) & set(w.tolist())) / top for g, w in zip(got, want)])
    ok = bool(cosine.mean() >= 0.99 and cosine.min() >= 0.95 and overlap.mean() >= 0.85)
    return ok, f"cos {float(cosine.min()):.5f}, top-{top} {float(overlap.mean()):.3f}"


def assert_close_check(torch, logits, reference):
    try:
        torch.testing.assert_close(logits, reference)
        return True, "close"
    except AssertionError as e:
        # torch's message: "Tensor-likes are not close!", a blank line, "Mismatched elements: a / b (p%)", ...
        mismatched = [line.strip() for line in str(e).splitlines() if line.startswith("Mismatched elements")]
        return False, mismatched[0].replace("Mismatched elements: ", "") + " mismatched" if mismatched else "not close"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mqacheck")
    parser.add_argument("--m", type=int, default=2048)
    parser.add_argument("--n", type=int, default=16384)
    parser.add_argument("--heads", type=int, default=64)
    parser.add_argument("--head-dim", type=int, default=128)
    args = parser.parse_args()

    import torch
    import mqacheck
    import planted
    from mqacheck.references import torch_styles

    kernels = {"DeepGEMM": planted._library, "dropped_head": planted.dropped_head, "weights_off": planted.weights_off,
               "k_scale_bf16": planted.k_scale_bf16, "inclusive_end": planted.inclusive_end}
    with tempfile.TemporaryDirectory() as tmp:
        suite = os.path.join(tmp, "anchors.toml")
        with open(suite, "w") as f:
            f.write(f'[suite]\nname = "anchors"\n[[case]]\nname = "causal"\nm = {args.m}\nn = {args.n}\n'
                    f'heads = {args.heads}\nhead_dim = {args.head_dim}\nlayout = {{ kind = "causal" }}\n')
        folder = os.path.join(tmp, "b")
        subprocess.run([args.mqacheck, "gen", "--cases", suite, "--case", "causal", "--out", folder], check=True,
                       capture_output=True)
        b = mqacheck.load_inputs(folder, device="cuda")
        j = torch.arange(b.n, device="cuda")[None, :]
        inside = (j >= b.ks[:, None]) & (j < b.ke[:, None])
        simulated, fp32 = torch_styles.deepgemm_test(b), torch_styles.fp32_einsum(b)
        bf16 = torch_styles.vllm_bf16(b)
        print(f"causal M={args.m}, N={args.n}, H={args.heads}, D={args.head_dim}\n")
        print("| kernel | DeepGEMM's test (calc_diff < 5e-6, mask) | AITER's test (calc_diff < 1e-3, mask) "
              "| vLLM's gfx942 test (cosine, top-64) | torch assert_close | mqacheck (sm90-wgmma) |")
        print("|---|---|---|---|---|---|")
        for name, fn in kernels.items():
            logits = fn(b.q, (b.k, b.k_scale), b.weights, b.ks, b.ke, clean_logits=True)[:, :b.n].contiguous()
            torch.cuda.synchronize()
            cells = [deepgemm_check(torch, logits, simulated, inside), aiter_check(torch, logits, fp32, inside),
                     vllm_check(torch, logits, bf16, inside), assert_close_check(torch, logits, fp32)]
            verdict = mqacheck.check(folder, logits, binary=args.mqacheck, trust_digest=True, accumulate="sm90-wgmma",
                                     relu="fmax")
            found = ", ".join(f"{f.class_}" + (f" ({f.cause})" if f.cause else "") for f in verdict.findings)
            shown = [f"{'pass' if ok else '**fail**'} ({why})" for ok, why in cells]
            print(f"| {name} | " + " | ".join(shown) + f" | {'pass' if verdict.passed else '**fail**: ' + found} |",
                  flush=True)


if __name__ == "__main__":
    main()
