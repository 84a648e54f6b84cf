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
        off = np.load(logits)
        inside = np.isfinite(off)
        off[inside] = (off[inside] * np.float32(1.001)).astype(np.float32)
        planted = os.path.join(tmp, case + ".off.npy")
        np.save(planted, off)
        # What a contract catches, the diagnosis names, and fp22-truncated lets through (the gap the
        # model closes): (output, contract, its finding classes as wanted, cause, words of its sentence,
        # what it shows). The truncating accumulator fails fp32, and mqacheck's wgmma model reproduces
        # the output; every logit 1e-3 off (weights or k_scale) is caught under sm90-wgmma.
        caught = [
            (logits, "fp32", lambda found: found == {"error-bound"}, "sm90-wgmma-dot",
             "would pass under --accumulate sm90-wgmma", "the truncating accumulator fails fp32"),
            (planted, "sm90-wgmma", lambda found: "error-bound" in found, "weights-factor", "multiplied by 1.001",
             "every logit 1e-3 off is caught under sm90-wgmma"),
        ]
        for output, contract, classes_wanted, cause_name, words, what in caught:
            rc, rep, text = check(bundle, output, contract)
            expect(rc == 1 and rep and classes_wanted({f["class"] for f in rep["findings"]}),
                   f"{case}: {what} ({text[:300]})")
            cause = rep["findings"][0]["diagnosis"] if rep and rep["findings"] else None
            expect(cause and cause["cause"] == cause_name and words in cause["sentence"],
                   f"{case}: {what}, diagnosed as {cause_name} ({cause})")
            rc, _, _ = check(bundle, output, "fp22-truncated")
            expect(rc == 0, f"{case}: {what}; fp22-truncated lets it through")

print("passed" if not failures else f"FAILED ({len(failures)} failures)", ": H200 outputs")
sys.exit(1 if failures else 0)
