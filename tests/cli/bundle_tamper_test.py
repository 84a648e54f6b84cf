#!/usr/bin/env python3
"""Bundles changed on purpose: what `check` refuses, and what only --trust-digest lets through.

A bundle's digest.json is an unkeyed XXH3-128 of every file: it names an accident, but a forger
rewrites it with the files. So `check` proves the inputs against case.toml and recomputes the
reference by default, and takes a digest-proven reference.npy as gen's only when told the bundle
is the user's own (--trust-digest). Whatever the mode, a case.toml edit must leave the arrays what
the edited case generates; a case with an `origin` (no generator) may not be edited at all.
Usage: bundle_tamper_test.py MQACHECK_BINARY."""
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import expect, finish, gen_bundle, run, suite_toml  # noqa: E402

SHAPE = dict(m=16, n=64, heads=2, head_dim=32, layout=dict(kind="causal"))
SUITE = suite_toml("tamper", [
    dict(name="b11", q_format="e4m3b11fnuz", k_format="e4m3b11fnuz", seed=1, **SHAPE),
    dict(name="seed1", seed=1, **SHAPE),
    dict(name="seed2", seed=2, **SHAPE),
])


def one_line_refusal(r, *fragments):
    return r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and all(f in r.stderr for f in fragments)


def scaled_inside(reference, factor):
    """The reference with every in-window value off by `factor`: a 0.1% weight error, say."""
    inside = np.isfinite(reference)
    return np.where(inside, reference * np.float32(factor), reference).astype(np.float32)


def test_relabelled_formats(tmp, suite):
    """e4m3b11fnuz relabelled e4m3fnuz: every code reads 8x larger, the bound 64x looser, and an
    output 0.1% off would pass against the unchanged reference.npy."""
    bundle = gen_bundle(suite, "b11", tmp / "b11")
    logits = tmp / "b11-off.npy"
    np.save(logits, scaled_inside(np.load(bundle / "reference.npy"), 1.001))
    r = run("check", bundle, "--logits", logits, "--accumulate", "fp32")
    expect(r.returncode == 1, f"the 0.1% error is caught on the bundle as gen wrote it: {r.returncode} {r.stdout}")

    original = (bundle / "case.toml").read_text()
    relabelled = original.replace('"e4m3b11fnuz"', '"e4m3fnuz"')
    expect(relabelled != original, "the case names its formats")
    for name, text, fragments in [
        # An origin: no generator rebuilds the arrays, so nothing can prove the edit harmless.
        ("origin", relabelled.replace("[[case]]\n", "[[case]]\norigin = \"shrunk from case 'b11' of suite 'tamper'\"\n"),
         [str(bundle / "case.toml"), "case.toml changed after `mqacheck gen` wrote it", "origin"]),
        # Without one, the relabelled case generates the same codes at other scales.
        ("no origin", relabelled, [str(bundle / "case.toml"), "the arrays do not match the case", "weights.npy"]),
    ]:
        (bundle / "case.toml").write_text(text)
        for mode in ([], ["--trust-digest"], ["--recompute"]):
            r = run("check", bundle, "--logits", logits, "--accumulate", "fp32", *mode)
            if name == "origin" and mode == ["--recompute"]:
                # No digest read and no generator: the reference, computed under the new formats,
                # is not reference.npy.
                fragments_here = ["reference.npy", "modified or mixed up"]
            else:
                fragments_here = fragments
            expect(one_line_refusal(r, *fragments_here),
                   f"relabelled formats ({name}, {mode}): rc={r.returncode} {r.stderr!r} {r.stdout[-300:]!r}")
    (bundle / "case.toml").write_text(original)
    r = run("check", bundle, "--logits", logits, "--accumulate", "fp32")
    expect(r.returncode == 1, f"case.toml restored: judged again: {r.returncode} {r.stderr}")


def test_forged_reference(tmp, suite):
    """reference.npy and its digest taken from another bundle of the same shape and windows: a
    consistent forgery no unkeyed digest can see."""
    victim = gen_bundle(suite, "seed1", tmp / "seed1")
    other = gen_bundle(suite, "seed2", tmp / "seed2")
    forged = tmp / "forged"
    shutil.copytree(victim, forged)
    shutil.copy(other / "reference.npy", forged / "reference.npy")
    digests = json.loads((forged / "digest.json").read_text())
    digests["files"]["reference.npy"] = json.loads((other / "digest.json").read_text())["files"]["reference.npy"]
    (forged / "digest.json").write_text(json.dumps(digests, indent=2) + "\n")
    # The forger's output: right for the forged reference, wrong for the bundle's inputs.
    logits = tmp / "forged-logits.npy"
    np.save(logits, np.load(other / "reference.npy"))

    r = run("check", forged, "--logits", logits, "--accumulate", "fp32")
    expect(one_line_refusal(r, "reference.npy", "differs from the exact reference of the bundle's inputs"),
           f"a forged reference is caught by default: rc={r.returncode} {r.stderr!r}")
    r = run("check", forged, "--logits", logits, "--accumulate", "fp32", "--trust-digest")
    expect(r.returncode == 0, f"--trust-digest takes the digest's word, as its help says: rc={r.returncode} {r.stderr!r}")
    # The victim's own output passes either way.
    np.save(tmp / "victim-logits.npy", np.load(victim / "reference.npy"))
    for mode in ([], ["--trust-digest"], ["--recompute"]):
        r = run("check", victim, "--logits", tmp / "victim-logits.npy", "--accumulate", "fp32", *mode)
        expect(r.returncode == 0, f"an untouched bundle passes ({mode}): rc={r.returncode} {r.stderr!r}")
    r = run("check", victim, "--logits", tmp / "victim-logits.npy", "--trust-digest", "--recompute")
    expect(r.returncode == 2 and "excludes" in r.stderr, f"--trust-digest with --recompute: {r.stderr!r}")
    r = run("check", "--help")
    expect("--trust-digest" in r.stdout and "not a forger" in r.stdout, f"check --help: {r.stdout}")


with tempfile.TemporaryDirectory() as name:
    tmp = Path(name)
    suite = tmp / "tamper.toml"
    suite.write_text(SUITE)
    test_relabelled_formats(tmp, suite)
    test_forged_reference(tmp, suite)

finish("bundle tampering")
