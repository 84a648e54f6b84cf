#!/usr/bin/env python3
"""`mqacheck check --topk-indices`: a top-k kernel's indices judged against the bundle's exact values.
The indices are made here with NumPy from the bundle's reference.npy (each window sorted by value,
NaN first): they pass as absolute or relative columns, sorted or not; each planted mistake gets its
class; a bad indices file is one message naming it, exit 2, no JSON written.
Usage: topk_indices_test.py MQACHECK_BINARY."""
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, check_with_report, expect, finish, gen_bundle  # noqa: E402

SUITE = os.path.join(ROOT, "cases", "bugs", "32-topk-indices.toml")


def exact_topk(ref, ks, ke, k):
    """int64 [m, k]: each window's keys by exact value, largest first (NaN above all), -1 padded."""
    out = np.full((ref.shape[0], k), -1, dtype=np.int64)
    for i in range(ref.shape[0]):
        keys = np.arange(max(ks[i], 0), min(ke[i], ref.shape[1]))
        values = ref[i, keys].astype(np.float64)
        order = sorted(range(len(keys)), key=lambda t: (not np.isnan(values[t]), -np.nan_to_num(values[t]), t))
        chosen = keys[order][:k]
        out[i, :len(chosen)] = chosen
    return out


def classes_of(report):
    return {f["class"] for f in report["findings"]} if report else set()


def judged(bundle, tmp, name, indices, *extra):
    path = os.path.join(tmp, name + ".npy")
    np.save(path, indices)
    ref_path = os.path.join(bundle, "reference.npy")
    return check_with_report(bundle, ref_path if not os.path.exists(os.path.join(tmp, "logits.npy"))
                             else os.path.join(tmp, "logits.npy"), "--topk-indices", path, *extra)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for case, k in (("random-long", 64), ("sliding-short", 32)):
            bundle = gen_bundle(SUITE, case, os.path.join(tmp, case))
            ref = np.load(os.path.join(bundle, "reference.npy"))
            np.save(os.path.join(tmp, "logits.npy"), ref)  # the exact logits: the logits stage passes
            ks, ke = np.load(os.path.join(bundle, "ks.npy")), np.load(os.path.join(bundle, "ke.npy"))
            good = exact_topk(ref, ks, ke, k)
            rows_with_keys = [i for i in range(len(ks)) if (good[i] >= 0).sum() >= 2]
            expect(rows_with_keys, f"{case}: rows with two keys or more")

            r, report = judged(bundle, tmp, "good", good, "--topk-sorted")
            expect(r.returncode == 0 and report and not report["findings"], f"{case} exact top-k: {r.stdout}{r.stderr}")
            d = report["metrics"]["topk_decidedness"] if report else None
            expect(d and d["rows"] > 0 and d["must_keep"] > 0, f"{case}: decidedness {d}")
            relative = np.where(good >= 0, good - ks[:, None], -1)
            r, report = judged(bundle, tmp, "rel", relative.astype(np.int32), "--topk-columns", "relative")
            expect(r.returncode == 0, f"{case} relative int32: {r.stdout}{r.stderr}")
            unordered = good[:, ::-1].copy()
            r, report = judged(bundle, tmp, "unordered", unordered)
            expect(r.returncode == 0, f"{case} unordered, no order promised: {r.stdout}{r.stderr}")

            width = np.clip(ke, 0, ref.shape[1]) - np.clip(ks, 0, ref.shape[1])
            i = rows_with_keys[0]
            long_rows = [r for r in range(len(ks)) if width[r] > k]
            planted = {
                "topk-duplicate": lambda x: x.__setitem__((i, 1), x[i, 0]),
                "topk-outside-window": lambda x: x.__setitem__((i, 0), ke[i]),
                "topk-unsorted": lambda x: x.__setitem__(i, np.concatenate([x[i, :2][::-1], x[i, 2:]])),
            }
            if case == "sliding-short":  # windows of 24 keys, k = 32: the tail is padding
                planted["topk-padding"] = lambda x: x.__setitem__((i, k - 1), x[i, 0])
            else:  # a long row's best key swapped for its worst: certainly inadmissible
                expect(long_rows, f"{case}: a window longer than k = {k}")
                worst_of = exact_topk(-np.nan_to_num(ref, nan=-np.inf), ks, ke, 1)[:, 0]
                planted["topk-inadmissible"] = lambda x: x.__setitem__((long_rows[0], 0), worst_of[long_rows[0]])
            for finding, plant in planted.items():
                bad = good.copy()
                plant(bad)
                r, report = judged(bundle, tmp, finding, bad, "--topk-sorted")
                found = classes_of(report)
                expect(r.returncode == 1 and finding in found, f"{case} {finding}: {found} {r.stdout}{r.stderr}")
                first = [f for f in report["findings"] if f["class"] == finding] if report else []
                row = long_rows[0] if finding == "topk-inadmissible" else i
                expect(first and first[0]["first"][0] == row, f"{case} {finding}: first row {first}")

            # Bad input: wrong dtype, wrong rows, one dimension, an unknown convention.
            for name, array in (("float", good.astype(np.float32)), ("rows", good[:-1]), ("flat", good[0])):
                r, report = judged(bundle, tmp, name, array)
                path = os.path.join(tmp, name + ".npy")
                expect(r.returncode == 2 and path in r.stderr and "int32 or int64" in r.stderr and report is None,
                       f"{case} bad indices {name}: exit {r.returncode} {r.stderr}")
            r, report = judged(bundle, tmp, "good2", good, "--topk-columns", "sideways")
            expect(r.returncode == 2 and "accepted: absolute, relative" in r.stderr and report is None,
                   f"unknown --topk-columns: {r.stderr}")
            r, report = check_with_report(bundle, os.path.join(tmp, "logits.npy"), "--topk-sorted")
            expect(r.returncode == 2 and "--topk-indices" in r.stderr and report is None,
                   f"--topk-sorted without indices: {r.stderr}")
            os.remove(os.path.join(tmp, "logits.npy"))
    return finish("topk indices")


if __name__ == "__main__":
    sys.exit(main())
