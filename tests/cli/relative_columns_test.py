#!/usr/bin/env python3
"""`mqacheck check --columns relative`: DeepGEMM with max_seqlen_k > 0 writes row i's key
ks[i] + c at column c of an [M, max_seqlen_k] output. Outputs are laid out here with NumPy from the
bundle's reference: the relative layout passes, the same values left at absolute columns fail, and
misuse is one message with exit 2. Usage: relative_columns_test.py MQACHECK_BINARY."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, check_with_report, expect, finish, gen_bundle, run  # noqa: E402
POISON = np.uint32(0x7FC0DEAD).view(np.float32)


def verdict(bundle, path, array, *extra):
    np.save(path, array)
    return check_with_report(bundle, path, *extra)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bundle = gen_bundle(os.path.join(ROOT, "cases", "bugs", "28-relative-columns.toml"), "sliding",
                            os.path.join(tmp, "b"))
        ref = np.load(os.path.join(bundle, "reference.npy"))
        ks, ke = np.load(os.path.join(bundle, "ks.npy")), np.load(os.path.join(bundle, "ke.npy"))
        m, n = ref.shape
        begin, end = np.clip(ks, 0, n), np.clip(ke, 0, n)
        width = int(max(e - s for s, b, e in zip(ks, begin, end) if e > b))
        expect(0 < width < n, f"a sliding window narrower than n: {width}")

        relative = np.full((m, width + 3), POISON, dtype=np.float32)
        for i in range(m):
            for j in range(begin[i], end[i]):
                relative[i, j - ks[i]] = ref[i, j]
        r, report = verdict(bundle, os.path.join(tmp, "rel.npy"), relative, "--columns", "relative")
        expect(r.returncode == 0, f"relative layout: exit {r.returncode} {r.stdout} {r.stderr}")
        if report:
            expect("columns relative" in report["contract"] and "dont-care" in report["contract"],
                   f"contract: {report['contract']}")

        # The same values at their absolute columns (the width truncates them): shifted keys.
        absolute = np.full((m, width + 3), POISON, dtype=np.float32)
        absolute[:, :] = np.where(np.isfinite(ref[:, : width + 3]), ref[:, : width + 3], POISON)
        r, report = verdict(bundle, os.path.join(tmp, "abs.npy"), absolute, "--columns", "relative")
        classes = {f["class"] for f in report["findings"]} if report else set()
        expect(r.returncode == 1 and classes & {"unwritten", "error-bound"}, f"absolute layout: {r.stdout}")

        # The full absolute output judged as absolute still passes: the flag is what changes.
        r, _ = verdict(bundle, os.path.join(tmp, "full.npy"), ref, "--mask", "dont-care")
        expect(r.returncode == 0, f"absolute output, absolute columns: {r.stdout} {r.stderr}")

        # Misuse: too narrow an output, --mask clean with relative columns, an unknown layout.
        r, _ = verdict(bundle, os.path.join(tmp, "narrow.npy"), relative[:, : width - 1], "--columns", "relative")
        expect(r.returncode == 2 and f"S >= {width}" in r.stderr and "longest window" in r.stderr, f"narrow: {r.stderr}")
        r, _ = verdict(bundle, os.path.join(tmp, "rel2.npy"), relative, "--columns", "relative", "--mask", "clean")
        expect(r.returncode == 2 and "--mask clean" in r.stderr, f"relative with clean: {r.stderr}")
        r, _ = verdict(bundle, os.path.join(tmp, "rel3.npy"), relative, "--columns", "sideways")
        expect(r.returncode == 2 and "accepted: absolute, relative" in r.stderr, f"unknown columns: {r.stderr}")

        # Prefill-only options: a paged bundle and --operation paged refuse them.
        paged = os.path.join(tmp, "paged")
        r = run("gen", "--cases", os.path.join(ROOT, "cases", "bugs", "25-paged-logical-blocks.toml"), "--out", paged,
                "--case", "shuffled")
        if r.returncode == 0:
            pref = np.load(os.path.join(paged, "reference.npy"))
            for flags in (["--columns", "relative"], ["--logits-dtype", "bf16"]):
                r, _ = verdict(paged, os.path.join(tmp, "paged.npy"), pref, *flags)
                expect(r.returncode == 2 and "paged bundle" in r.stderr, f"paged bundle with {flags}: {r.stderr}")
        else:
            expect(False, f"gen paged: {r.stderr}")
        r = run("run", "--cases", os.path.join(ROOT, "cases", "bugs", "28-relative-columns.toml"), "--kernel",
                "true", "--operation", "paged", "--columns", "relative", "--out", os.path.join(tmp, "k"))
        expect(r.returncode == 2 and "--operation paged" in r.stderr and not os.path.exists(os.path.join(tmp, "k")),
               f"run --kernel --operation paged --columns relative: {r.stderr}")

    finish("relative columns")


if __name__ == "__main__":
    main()
