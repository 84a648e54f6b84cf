#!/usr/bin/env python3
"""Paged decode from outside: `mqacheck gen` writes the cache, its block table and the
context lengths; `mqacheck check` judges logits computed here by NumPy code that shares nothing
with the C++ (the cache read through the tables from DeepGEMM's layout); a planted bug is caught
and diagnosed; bad input (a table entry outside the cache, a context longer than the table covers,
a page stride not a multiple of 4 or smaller than the payload) is one message naming the request
and block, exit 2, nothing left behind. Usage: paged_test.py MQACHECK_BINARY."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, expect, finish, run  # noqa: E402
QUICK = os.path.join(ROOT, "cases", "quick.toml")


def decode_e4m3fn(codes):
    c = codes.astype(np.int64)
    e, f = (c >> 3) & 0xF, c & 7
    value = np.where(e == 0, f * 2.0 ** -9, (f + 8) * 2.0 ** (e - 10)) * np.where(c & 0x80, -1.0, 1.0)
    return np.where((c & 0x7F) == 0x7F, np.nan, value)


def paged_kernel(folder, ignore_table=False):
    """float32 logits [batch * next_n, n] of a paged bundle, the 1-D rule: row t of request b sees
    k <= L - next_n + t. Keys read from the pages: codes at slot * D, scales at block_kv * D + 4 * slot."""
    case = open(os.path.join(folder, "case.toml")).read()
    num = lambda key: int(case.split(f"\n{key} = ")[1].split("\n")[0])  # noqa: E731
    next_n, block_kv, page, n = num("next_n"), num("block_kv"), num("page_bytes"), num("n")
    a = {name: np.load(os.path.join(folder, f"{name}.npy")) for name in ("q", "weights", "kv_cache", "block_table", "context_lens")}
    q = decode_e4m3fn(a["q"]).astype(np.float32)
    m, heads, d = q.shape
    cache = a["kv_cache"].reshape(-1)
    out = np.full((m, n), -np.inf, dtype=np.float32)
    for b in range(m // next_n):
        length = int(a["context_lens"][b])
        if length == 0:
            continue
        j = np.arange(length)
        block = j // block_kv if ignore_table else a["block_table"][b, j // block_kv].astype(np.int64)
        slot = j % block_kv
        k = decode_e4m3fn(cache[(block * page + slot * d)[:, None] + np.arange(d)]).astype(np.float32)
        scale = cache[(block * page + block_kv * d + 4 * slot)[:, None] + np.arange(4)].copy().view("<f4").reshape(-1)
        rows = slice(b * next_n, (b + 1) * next_n)
        dots = np.maximum(np.einsum("thd,jd->thj", q[rows], k).astype(np.float32), np.float32(0))
        logits = (np.einsum("th,thj->tj", a["weights"][rows], dots).astype(np.float32) * scale).astype(np.float32)
        for t in range(next_n):
            end = max(length - next_n + t + 1, 0)
            out[b * next_n + t, :end] = logits[t, :end]
    return out


def check(folder, logits, path, *extra):
    np.save(path, logits)
    r = run("check", folder, "--logits", path, "--json", path + ".json", *extra)
    return r, (json.load(open(path + ".json")) if os.path.exists(path + ".json") else None)


with tempfile.TemporaryDirectory() as tmp:
    # gen: the paged files with the shapes cases/README.md gives them, and no k.npy / k_scale.npy.
    bundle = os.path.join(tmp, "paged")
    r = run("gen", "--cases", QUICK, "--case", "paged", "--out", bundle)
    expect(r.returncode == 0 and "inputs fingerprint" in r.stdout, f"gen paged: {r.returncode} {r.stderr}")
    files = sorted(os.listdir(bundle))
    expect(files == ["block_table.npy", "case.toml", "context_lens.npy", "digest.json", "ke.npy", "ks.npy", "kv_cache.npy",
                     "q.npy", "reference.npy", "weights.npy"], f"paged bundle files: {files}")
    digests = json.load(open(os.path.join(bundle, "digest.json")))["files"]
    expect(sorted(digests) == [f for f in files if f != "digest.json"], f"digest.json covers every paged file: {digests}")
    shapes = {f: np.load(os.path.join(bundle, f)).shape for f in files if f.endswith(".npy")}
    expect(shapes["kv_cache.npy"] == (40, 64 * 68) and shapes["block_table.npy"] == (4, 7) and
           shapes["context_lens.npy"] == (4,) and shapes["q.npy"] == (8, 8, 64) and shapes["reference.npy"] == (8, 400),
           f"paged shapes: {shapes}")

    # check: this file's NumPy kernel passes under fp32, in [M, N] and with a padded stride; the
    # reference is -inf past every window; the block table ignored is an error-bound finding.
    logits = paged_kernel(bundle)
    reference = np.load(os.path.join(bundle, "reference.npy"))
    expect(np.array_equal(np.isneginf(reference), np.isneginf(logits)), "the windows of this file and of mqacheck agree")
    r, j = check(bundle, logits, os.path.join(tmp, "logits.npy"), "--accumulate", "fp32")
    expect(r.returncode == 0 and j and j["verdict"] == "pass", f"check paged: {r.returncode} {r.stdout}{r.stderr}")
    padded = np.full((8, 464), 7.0, dtype=np.float32)
    padded[:, :400] = logits
    r, _ = check(bundle, padded, os.path.join(tmp, "padded.npy"), "--accumulate", "fp32")
    expect(r.returncode == 0, f"check paged, padded stride: {r.returncode} {r.stdout}")
    r, j = check(bundle, paged_kernel(bundle, ignore_table=True), os.path.join(tmp, "logical.npy"), "--accumulate", "fp32")
    expect(r.returncode == 1 and j and "error-bound" in {f["class"] for f in j["findings"]},
           f"block table ignored: {r.returncode} {r.stdout}")
    # ... and diagnosed as such: NumPy's sums are not the model's, so within the declared bound.
    causes = {f["class"]: f["diagnosis"] for f in j["findings"]} if j else {}
    cause = causes.get("error-bound") or {}
    expect(cause.get("cause") == "paged-logical-blocks" and not cause.get("bit_for_bit") and
           "within the declared bound" in cause.get("sentence", "") and "diagnosis: matches the block table ignored" in r.stdout,
           f"block table ignored, diagnosed: {causes}")
    r, j = check(bundle, paged_kernel(bundle, ignore_table=True), os.path.join(tmp, "logical.npy"), "--accumulate", "fp32",
                 "--no-diagnosis")
    expect(r.returncode == 1 and j and all(f["diagnosis"] is None for f in j["findings"]), f"--no-diagnosis, paged: {j}")
    r, j = check(bundle, reference, os.path.join(tmp, "exact.npy"), "--accumulate", "exact")
    expect(r.returncode == 0, f"the reference itself under exact: {r.stdout}")
    # Judged in row blocks every way: --trust-digest takes reference.npy on its digest's word, the
    # default and --recompute prove it by computing it again; the same verdicts.
    for extra in ([], ["--trust-digest"], ["--recompute"], ["--relu", "fmax"], ["--trust-digest", "--relu", "fmax"],
                  ["--recompute", "--relu", "fmax"]):
        r, j = check(bundle, logits, os.path.join(tmp, "again.npy"), "--accumulate", "fp32", *extra)
        expect(r.returncode == 0 and j and j["verdict"] == "pass", f"check paged {extra}: {r.returncode} {r.stdout}")
        r, j = check(bundle, paged_kernel(bundle, ignore_table=True), os.path.join(tmp, "again.npy"), "--accumulate",
                     "fp32", *extra)
        expect(r.returncode == 1 and j and "error-bound" in {f["class"] for f in j["findings"]} and
               all(f["diagnosis"]["cause"] == "paged-logical-blocks" for f in j["findings"] if f["class"] == "error-bound"),
               f"block table ignored {extra}: {r.returncode} {r.stdout}")

    # Bad bundles: each message names the file, the request and the block.
    def edited(name, change, *extra):
        folder = os.path.join(tmp, name)
        subprocess.run(["cp", "-r", bundle, folder], check=True)
        change(folder)
        return run("check", folder, "--logits", os.path.join(tmp, "logits.npy"), "--accumulate", "fp32", *extra)

    def set_entry(folder, file, index, value):
        a = np.load(os.path.join(folder, file))
        a[index] = value
        np.save(os.path.join(folder, file), a)

    r = edited("table", lambda f: set_entry(f, "block_table.npy", (3, 2), 40))
    expect(r.returncode == 2 and "block_table.npy: request 3, logical block 2 is mapped to block 40, outside "
           "kv_cache.npy's 40 blocks" in r.stderr, f"table entry outside the cache: {r.returncode} {r.stderr}")
    # An unused entry passes the table checks; digest.json catches the edit, and without it
    # (--recompute) the regenerated inputs do.
    r = edited("unused", lambda f: set_entry(f, "block_table.npy", (1, 2), -7))
    expect(r.returncode == 2 and "block_table.npy: differs from the file `mqacheck gen` wrote" in r.stderr,
           f"an unused entry edited: not the file gen wrote: {r.stderr}")
    r = edited("unused-recompute", lambda f: set_entry(f, "block_table.npy", (1, 2), -7), "--recompute")
    expect(r.returncode == 2 and "do not match the case" in r.stderr and "block_table.npy (from its layout" in r.stderr,
           f"an unused entry edited: the bytes are not the case's: {r.stderr}")
    def tamper_reference(folder):
        ref = np.load(os.path.join(folder, "reference.npy"))
        i, j = np.argwhere(np.isfinite(ref))[-1]
        ref[i, j] = ref[i, j] * np.float32(1.5) + np.float32(1)
        np.save(os.path.join(folder, "reference.npy"), ref)
    r = edited("tampered", tamper_reference)
    expect(r.returncode == 2 and "reference.npy: differs from the file `mqacheck gen` wrote" in r.stderr,
           f"tampered paged reference: {r.stderr}")
    r = edited("tampered-recompute", tamper_reference, "--recompute")
    expect(r.returncode == 2 and "differs from the exact reference of the bundle's inputs" in r.stderr,
           f"tampered paged reference, --recompute: {r.stderr}")
    r = edited("context", lambda f: set_entry(f, "context_lens.npy", 1, 401))
    expect(r.returncode == 2 and "context_lens.npy: request 1 has a context of 401 keys (accepted: 0 to the case's "
           "n = 400)" in r.stderr, f"context past n: {r.stderr}")

    # Bad cases: one line with file:line:column, the request or the stride, exit 2, no bundle.
    def bad_case(layout, expected):
        suite = os.path.join(tmp, "bad.toml")
        open(suite, "w").write("[suite]\nname = \"bad\"\n[[case]]\nname = \"c\"\nm = 4\nn = 256\nheads = 2\n"
                               f"head_dim = 16\nlayout = {layout}\n")
        out = os.path.join(tmp, "never")
        r = run("gen", "--cases", suite, "--case", "c", "--out", out)
        expect(r.returncode == 2 and expected in r.stderr and r.stderr.count("\n") == 1 and not os.path.exists(out)
               and not [e for e in os.listdir(tmp) if e.startswith(".never")],
               f"bad case {layout}: rc={r.returncode} {r.stderr}")

    bad_case('{ kind = "paged", block_kv = 32, max_blocks = 2, context_lengths = [64, 65, 0, 1] }',
             "bad.toml:9:82: case 'c': key 'layout.context_lengths[1]': request 1's context of 65 keys needs 3 blocks of "
             "32, but the block table covers 2 blocks (64 keys): a context longer than the table covers")
    bad_case('{ kind = "paged", block_kv = 32, page_bytes = 642 }',
             "key 'layout.page_bytes': a page stride of 642 bytes is not a multiple of 4")
    bad_case('{ kind = "paged", block_kv = 32, page_bytes = 636 }',
             "a page stride of 636 bytes is smaller than a page's payload of block_kv x (head_dim + 4) = 32 x 20 = 640 bytes")
    bad_case('{ kind = "paged", next_n = 2, block_kv = 64, num_blocks = 4, context_lengths = [64, 100], '
             'block_table = [[0, 1, 2, 3], [3, 4, 0, 0]] }',
             "key 'layout.block_table[1][1]': request 1's logical block 1 maps to block 4, outside the cache's num_blocks = 4")

    # run: the paged bug suites through the built-in variants.
    for suite in sorted(os.listdir(os.path.join(ROOT, "cases", "bugs"))):
        if "paged" in suite:
            r = run("run", "--cases", os.path.join(ROOT, "cases", "bugs", suite), "--threads", "1")
            expect(r.returncode == 0 and "mutants caught 1/1" in r.stdout, f"{suite}: {r.stdout[-500:]}")

finish("paged decode")
