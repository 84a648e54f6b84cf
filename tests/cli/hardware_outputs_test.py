#!/usr/bin/env python3
"""`mqacheck check` on outputs our Triton kernel (kernels/triton) wrote on an NVIDIA H200
(tests/data/golden/triton-h200, README there): the real kernel passes the modelled contract
`sm90-wgmma`, fails `fp32` (its accumulator truncates), and a change of 1e-3 in every logit (weights
or k_scale off by 1e-3) is caught under `sm90-wgmma` while `fp22-truncated` lets it through: the
power the matrix-unit model buys, on hardware data. Usage: hardware_outputs_test.py MQACHECK_BINARY."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import BIN, ROOT, expect, failures  # noqa: E402
DUMPS = os.path.join(ROOT, "tests", "data", "golden", "triton-h200")


def check(bundle, logits_path, accumulate):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "j.json")
        r = subprocess.run([BIN, "check", bundle, "--logits", logits_path, "--accumulate", accumulate, "--relu", "fmax",
                            "--json", report], capture_output=True, text=True)
        return r.returncode, (json.load(open(report)) if os.path.exists(report) else None), r.stdout + r.stderr


cases = sorted(os.listdir(DUMPS))
expect(len([c for c in cases if os.path.isdir(os.path.join(DUMPS, c))]) >= 3, f"three H200 dumps in {DUMPS}")
with tempfile.TemporaryDirectory() as tmp:
    for case in cases:
        bundle = os.path.join(DUMPS, case)
        if not os.path.isdir(bundle):
            continue
        logits = os.path.join(bundle, "logits.npy")
        rc, rep, text = check(bundle, logits, "sm90-wgmma")
        worst = rep["metrics"]["max_error_over_bound"] if rep else None
        expect(rc == 0 and worst is not None and worst < 1, f"{case}: the H200 output passes sm90-wgmma ({text[:300]})")
        rc, rep, text = check(bundle, logits, "fp32")
        expect(rc == 1 and rep and {f["class"] for f in rep["findings"]} == {"error-bound"},
               f"{case}: the truncating accumulator fails fp32 ({text[:300]})")
        # ... and the diagnosis names the accumulator: mqacheck's wgmma model reproduces the output.
        cause = rep["findings"][0]["diagnosis"] if rep and rep["findings"] else None
        expect(cause and cause["cause"] == "sm90-wgmma-dot" and "would pass under --accumulate sm90-wgmma" in cause["sentence"],
               f"{case}: the fp32 failure diagnosed as wgmma accumulation ({cause})")
        rc, rep, _ = check(bundle, logits, "fp22-truncated")
        expect(rc == 0, f"{case}: fp22-truncated covers it")
        off = np.load(logits)
        inside = np.isfinite(off)
        off[inside] = (off[inside] * np.float32(1.001)).astype(np.float32)
        planted = os.path.join(tmp, case + ".off.npy")
        np.save(planted, off)
        rc, rep, text = check(bundle, planted, "sm90-wgmma")
        expect(rc == 1 and rep and "error-bound" in {f["class"] for f in rep["findings"]},
               f"{case}: every logit 1e-3 off is caught under sm90-wgmma ({text[:300]})")
        cause = rep["findings"][0]["diagnosis"] if rep and rep["findings"] else None
        expect(cause and cause["cause"] == "weights-factor" and "multiplied by 1.001" in cause["sentence"],
               f"{case}: ... and diagnosed as a factor of 1.001 ({cause})")
        rc, _, _ = check(bundle, planted, "fp22-truncated")
        expect(rc == 0, f"{case}: ... and hides under fp22-truncated (the gap the model closes)")

print("passed" if not failures else f"FAILED ({len(failures)} failures)", ": H200 outputs")
sys.exit(1 if failures else 0)
