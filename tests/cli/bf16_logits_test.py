#!/usr/bin/env python3
"""`mqacheck check --logits-dtype bf16`: bfloat16 outputs read from uint16 bits and from
ml_dtypes' bfloat16 as np.save writes it ('<V2'; '|V2' too), judged with the last rounding in the
bound and ULPs in bfloat16 units. The outputs are made here with NumPy from the bundle's float32
reference: rounding it to bfloat16 once passes, rounding it through a coarser grid first fails.
Usage: bf16_logits_test.py MQACHECK_BINARY."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, check_with_report, expect, finish, gen_bundle, run  # noqa: E402


def to_bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept as the quiet NaN)."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def save_with_descr(path, bits, descr):
    """An .npy whose header says `descr` (what ml_dtypes' np.save writes for bfloat16) over uint16 data."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(bits.shape)))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        f.write(np.ascontiguousarray(bits, dtype="<u2").tobytes())


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bundle = gen_bundle(os.path.join(ROOT, "cases", "bugs", "27-bf16-logits.toml"), "causal", os.path.join(tmp, "b"))
        reference = np.load(os.path.join(bundle, "reference.npy"))
        once = to_bf16_bits(reference)

        for descr in ("<u2", "<V2", "|V2"):
            path = os.path.join(tmp, f"once-{descr[0] == '|'}-{descr[1:]}.npy")
            save_with_descr(path, once, descr)
            r, report = check_with_report(bundle, path, "--logits-dtype", "bf16")
            expect(r.returncode == 0, f"bf16 rounded once, descr {descr}: exit {r.returncode} {r.stdout} {r.stderr}")
            if report:
                expect("logits bf16" in report["contract"], f"contract names bf16 logits: {report['contract']}")
                # ULPs count bfloat16 units: rounding the correctly rounded float32 once is at most 1 off.
                expect(report["metrics"]["ulp"]["max"] <= 1, f"bf16 ULPs of a single rounding: {report['metrics']['ulp']}")

        # Rounded twice: to 6 significant bits first (a coarser grid), then to bfloat16. Errors of up to
        # two bfloat16 ulps: beyond half an ulp of the value wherever A's cancellation leaves E small.
        bits = reference.astype(np.float32).view(np.uint32).astype(np.uint64)
        coarse = ((bits + 0x3FFFF + ((bits >> 18) & 1)) & 0xFFFC0000).astype(np.uint32).view(np.float32)
        twice = to_bf16_bits(np.where(np.isfinite(reference), coarse, reference))
        path = os.path.join(tmp, "twice.npy")
        np.save(path, twice)
        r, report = check_with_report(bundle, path, "--logits-dtype", "bf16")
        expect(r.returncode == 1, f"bf16 rounded twice must fail: exit {r.returncode} {r.stdout}")
        if report:
            expect(any(f["class"] == "error-bound" for f in report["findings"]), f"error-bound: {report['findings']}")

        # The bfloat16 poison (0x7FDE) left in the window is `unwritten`.
        poisoned = once.copy()
        i, j = np.argwhere(np.isfinite(reference))[0]
        poisoned[i, j] = 0x7FDE
        path = os.path.join(tmp, "poisoned.npy")
        np.save(path, poisoned)
        r, report = check_with_report(bundle, path, "--logits-dtype", "bf16")
        expect(r.returncode == 1 and report and any(f["class"] == "unwritten" for f in report["findings"]),
               f"bf16 poison: {r.stdout}")

        # Mismatched dtypes: one message naming the file and what is accepted, exit 2.
        r, _ = check_with_report(bundle, path)
        expect(r.returncode == 2 and "--logits-dtype bf16" in r.stderr, f"bf16 file without the flag: {r.stderr}")
        f32 = os.path.join(tmp, "f32.npy")
        np.save(f32, reference)
        r, _ = check_with_report(bundle, f32, "--logits-dtype", "bf16")
        expect(r.returncode == 2 and "bfloat16" in r.stderr and "f32.npy" in r.stderr, f"float32 under bf16: {r.stderr}")
        r, _ = check_with_report(bundle, f32, "--logits-dtype", "half")
        expect(r.returncode == 2 and "accepted: fp32, bf16" in r.stderr, f"unknown dtype: {r.stderr}")

    finish("bf16 logits")


if __name__ == "__main__":
    main()
