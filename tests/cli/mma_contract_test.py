#!/usr/bin/env python3
"""`check` under the matrix-instruction contracts, from the command line: a modelled contract is
judged around the model's dots (an fp32 kernel's output fails `sm90-wgmma`, the exact output passes
`exact` but not the model), and every misuse is one message with exit status 2: an unknown
accumulator, formats the instruction does not take, a head_dim off its K, a promotion that does not
divide it, --promote-every without an instruction. Usage: mma_contract_test.py MQACHECK_BINARY."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import expect, failures, gen_bundle, run  # noqa: E402


SUITE = """[suite]
name = "mma-cli"
[defaults]
heads = 4
m = 6
n = 20
layout = {{ kind = "causal" }}
[[case]]
name = "e4m3"
head_dim = 64
[[case]]
name = "fnuz"
head_dim = 64
q_format = "e4m3fnuz"
k_format = "e4m3fnuz"
[[case]]
name = "d48"
head_dim = 48
"""

with tempfile.TemporaryDirectory() as tmp:
    suite = os.path.join(tmp, "suite.toml")
    open(suite, "w").write(SUITE.format())
    bundles = {case: gen_bundle(suite, case, os.path.join(tmp, case)) for case in ("e4m3", "fnuz", "d48")}
    exact = os.path.join(tmp, "exact.npy")
    np.save(exact, np.load(os.path.join(bundles["e4m3"], "reference.npy")))

    r = run("check", bundles["e4m3"], "--logits", exact, "--accumulate", "exact")
    expect(r.returncode == 0, f"the reference passes exact: {r.stdout}")
    # Judged around the model's dots: the command runs (pass or findings) and names the contract.
    r = run("check", bundles["e4m3"], "--logits", exact, "--accumulate", "sm90-wgmma")
    expect(r.returncode in (0, 1) and "dot sm90-wgmma" in r.stdout, f"sm90-wgmma judged: {r.stdout}{r.stderr}")
    r = run("check", bundles["e4m3"], "--logits", exact, "--accumulate", "sm90-wgmma", "--promote-every", "32")
    expect(r.returncode in (0, 1) and "promoted every 32" in r.stdout, f"promotion declared: {r.stdout}{r.stderr}")

    # `check BUNDLE --logits exact.npy OPTIONS...`: the bundle, the options, the refusal's words.
    bad = [
        ("e4m3", ["--accumulate", "fp8-mma"],
         "--accumulate 'fp8-mma' is not known (accepted: exact, fp32, fp22-truncated, bf16, sm90-wgmma, gfx942-mfma)"),
        ("fnuz", ["--accumulate", "sm90-wgmma"],
         "sm90-wgmma takes e4m3fn, e5m2 operands; q is e4m3fnuz (accepted: e4m3fn, e5m2)"),
        ("e4m3", ["--accumulate", "gfx942-mfma"], "gfx942-mfma takes e4m3fnuz, e5m2fnuz operands; q is e4m3fn"),
        ("d48", ["--accumulate", "sm90-wgmma"], "head_dim 48 is not a multiple of 32"),
        ("e4m3", ["--accumulate", "sm90-wgmma", "--promote-every", "48"],
         "--promote-every 48 must be a multiple of 32 that divides head_dim 64"),
        ("e4m3", ["--promote-every", "32"], "--promote-every 32 needs a matrix-instruction accumulator"),
        ("e4m3", ["--scale", "before-head-sum"],
         "--scale 'before-head-sum' is not known (accepted: after-head-sum, before-relu, into-weights, into-keys-bf16)"),
        ("e4m3", ["--weights", "fp8"], "--weights 'fp8' is not known (accepted: fp32, bf16, fp16)"),
    ]
    for case, options, message in bad:
        args = ["check", bundles[case], "--logits", exact, *options]
        r = run(*args)
        expect(r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1,
               f"{' '.join(args[2:])}: rc={r.returncode} {r.stderr!r}")
    # Every refusal came before any judging: nothing was written next to the inputs.
    expect(sorted(os.listdir(tmp)) == sorted(["suite.toml", "exact.npy", "e4m3", "fnuz", "d48"]),
           f"nothing left behind: {os.listdir(tmp)}")

print("passed: matrix-unit contracts on the command line" if not failures else f"FAILED ({len(failures)})")
sys.exit(1 if failures else 0)
