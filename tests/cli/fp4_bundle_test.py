#!/usr/bin/env python3
"""fp4 bundles: e2m1fn q and k two codes per byte (the even element in the low nibble),
their ue8m0 block scales in q_sf.npy and k_sf.npy (one byte per 32 elements; `.view(np.int32)` packs
four, DeepGEMM's layout). A NumPy kernel written here from the OCP MX table decodes them and
computes the operation in float32: `check` passes it, and fails the same kernel with every token
scaled by its first block's scale. Usage: fp4_bundle_test.py MQACHECK_BINARY."""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from cli_script import ROOT, expect, finish, run  # noqa: E402
E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])  # OCP MX v1.0, 5.3.3


def unpack(packed):
    codes = np.empty(packed.shape[:-1] + (packed.shape[-1] * 2,), dtype=np.uint8)
    codes[..., 0::2] = packed & 0x0F
    codes[..., 1::2] = packed >> 4
    return codes


def dequantize(packed, sf, per_token=False):
    codes = unpack(packed)
    values = np.where(codes & 0x8, -1.0, 1.0) * E2M1[codes & 0x7]
    exponents = sf.astype(np.int64) - 127
    if per_token:
        exponents = np.repeat(exponents[..., :1], exponents.shape[-1], axis=-1)
    return values * np.exp2(np.repeat(exponents, 32, axis=-1))


def kernel(b, per_token=False):
    q = dequantize(b["q"], b["q_sf"], per_token).astype(np.float32)
    k = dequantize(b["k"], b["k_sf"], per_token).astype(np.float32)
    dots = np.einsum("mhd,nd->mhn", q, k).astype(np.float32)
    logits = np.einsum("mh,mhn->mn", b["weights"], np.maximum(dots, np.float32(0))).astype(np.float32)
    logits = (logits * b["k_scale"][None, :]).astype(np.float32)
    j = np.arange(logits.shape[1])[None, :]
    inside = (j >= b["ks"][:, None]) & (j < b["ke"][:, None])
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32)


def paged_kernel(b, block_kv, per_token=False):
    """The paged fp4 cache decoded from its bytes: per page, block_kv x D/2 code bytes, then block_kv x
    D/32 ue8m0 bytes; key j of request r in slot j % block_kv of page block_table[r, j // block_kv]."""
    q = dequantize(b["q"], b["q_sf"], per_token).astype(np.float32)
    m, heads, d = q.shape
    cache = b["kv_cache"]
    codes = cache[:, : block_kv * d // 2].reshape(cache.shape[0], block_kv, d // 2)
    sf = cache[:, block_kv * d // 2: block_kv * d // 2 + block_kv * d // 32].reshape(cache.shape[0], block_kv, d // 32)
    n = b["reference"].shape[1]
    next_n = m // b["block_table"].shape[0]
    out = np.full((m, n), -np.inf, dtype=np.float32)
    for i in range(m):
        r = i // next_n
        keys = np.arange(b["ke"][i])
        pages, slots = b["block_table"][r, keys // block_kv], keys % block_kv
        k = dequantize(codes[pages, slots], sf[pages, slots], per_token).astype(np.float32)
        dots = np.einsum("hd,nd->hn", q[i], k).astype(np.float32)
        out[i, keys] = np.einsum("h,hn->n", b["weights"][i], np.maximum(dots, np.float32(0))).astype(np.float32)
    return out


def main():
    with tempfile.TemporaryDirectory() as tmp:
        bundle = os.path.join(tmp, "b")
        r = run("gen", "--cases", os.path.join(ROOT, "cases", "bugs", "29-fp4-block-scales.toml"), "--case",
                "causal-outliers", "--out", bundle)
        expect(r.returncode == 0, f"gen: {r.stderr}")
        b = {name: np.load(os.path.join(bundle, name + ".npy"))
             for name in ("q", "k", "q_sf", "k_sf", "k_scale", "weights", "ks", "ke")}
        m, heads, half = b["q"].shape
        n = b["k"].shape[0]
        d = half * 2
        expect(b["q"].dtype == np.uint8 and b["q_sf"].shape == (m, heads, d // 32), f"q: {b['q'].shape} {b['q_sf'].shape}")
        expect(b["k"].shape == (n, d // 2) and b["k_sf"].shape == (n, d // 32), f"k: {b['k'].shape} {b['k_sf'].shape}")
        expect(b["q_sf"].view(np.int32).shape == (m, heads, d // 128), "q_sf views as DeepGEMM's packed int32")
        for name in ("q_sf", "k_sf"):
            expect(b[name].min() >= 107 and b[name].max() <= 147, f"{name} within 2^-20 .. 2^20")
            expect(len(np.unique(b[name])) > 1, f"{name}: blocks with different scales")
        expect(np.all(b["k_scale"] == 1.0), "k's scale lives in its block scales: k_scale is 1")

        good = os.path.join(tmp, "good.npy")
        np.save(good, kernel(b))
        r = run("check", bundle, "--logits", good, "--accumulate", "fp32")
        expect(r.returncode == 0, f"a float32 kernel over the block-scaled values passes: {r.stdout} {r.stderr}")

        bad = os.path.join(tmp, "bad.npy")
        np.save(bad, kernel(b, per_token=True))
        out_json = bad + ".json"
        r = run("check", bundle, "--logits", bad, "--accumulate", "fp32", "--json", out_json)
        classes = {f["class"] for f in json.load(open(out_json))["findings"]} if os.path.exists(out_json) else set()
        expect(r.returncode == 1 and classes & {"error-bound", "scale-factor"}, f"per-token scales: {r.stdout}")

        # shrink cuts head_dim, which would split the blocks the scales cover: refused, nothing written.
        cut = os.path.join(tmp, "cut")
        r = run("shrink", bundle, "--logits", bad, "--accumulate", "fp32", "--out", cut)
        expect(r.returncode == 2 and "fp4 bundle" in r.stderr and not os.path.exists(cut), f"shrink: {r.stderr}")

        # An edited scale byte is refused before anything is judged: the arrays no longer match the case.
        sf = b["k_sf"].copy()
        sf[0, 0] ^= 1
        np.save(os.path.join(bundle, "k_sf.npy"), sf)
        r = run("check", bundle, "--logits", good)
        expect(r.returncode == 2 and "k_sf.npy" in r.stderr, f"edited k_sf: {r.stderr}")

        # The paged fp4 cache (fp8_fp4_paged_mqa_logits): q packed with q_sf.npy, keys and their
        # block scales in the pages, no k.npy, k_sf.npy or k_scale.npy.
        paged = os.path.join(tmp, "paged")
        r = run("gen", "--cases", os.path.join(ROOT, "cases", "bugs", "29-fp4-block-scales.toml"), "--case",
                "paged-fp4", "--out", paged)
        expect(r.returncode == 0, f"gen paged: {r.stderr}")
        files = set(os.listdir(paged))
        expect({"q.npy", "q_sf.npy", "kv_cache.npy", "block_table.npy"} <= files and not files & {"k.npy", "k_sf.npy",
                                                                                                  "k_scale.npy"},
               f"paged fp4 files: {sorted(files)}")
        pb = {name: np.load(os.path.join(paged, name + ".npy"))
              for name in ("q", "q_sf", "kv_cache", "block_table", "weights", "ks", "ke", "reference")}
        expect(pb["kv_cache"].shape[1] == 16 * (64 + 4), f"page bytes: {pb['kv_cache'].shape}")
        good_paged = os.path.join(tmp, "good-paged.npy")
        np.save(good_paged, paged_kernel(pb, 16))
        r = run("check", paged, "--logits", good_paged, "--accumulate", "fp32")
        expect(r.returncode == 0, f"a float32 kernel over the paged fp4 cache passes: {r.stdout} {r.stderr}")
        bad_paged = os.path.join(tmp, "bad-paged.npy")
        np.save(bad_paged, paged_kernel(pb, 16, per_token=True))
        r = run("check", paged, "--logits", bad_paged, "--accumulate", "fp32")
        expect(r.returncode == 1 and "error-bound" in r.stdout, f"per-token scales on the paged cache: {r.stdout}")

        # Case validation: e2m1fn needs ue8m0 scales and a head_dim multiple of 32.
        bad_case = os.path.join(tmp, "bad.toml")
        with open(bad_case, "w") as f:
            f.write('[suite]\nname = "x"\n[[case]]\nname = "c"\nm = 4\nn = 8\nheads = 1\nhead_dim = 48\n'
                    'q_format = "e2m1fn"\nq_scale = "ue8m0"\n')
        r = run("cases", bad_case)
        expect(r.returncode == 2 and "head_dim" in r.stderr and "multiple of 32" in r.stderr, f"head_dim 48: {r.stderr}")
        with open(bad_case, "w") as f:
            f.write('[suite]\nname = "x"\n[[case]]\nname = "c"\nm = 4\nn = 8\nheads = 1\nhead_dim = 64\n'
                    'k_format = "e2m1fn"\n')
        r = run("cases", bad_case)
        expect(r.returncode == 2 and 'k_scale = "ue8m0"' in r.stderr, f"fp32 scales for e2m1fn: {r.stderr}")

        # Block scales past 2^20 (a bound far below the values) are refused by gen, naming the case.
        with open(bad_case, "w") as f:
            f.write('[suite]\nname = "x"\n[[case]]\nname = "c"\nm = 4\nn = 8\nheads = 1\nhead_dim = 64\n'
                    'k_format = "e2m1fn"\nk_scale = "ue8m0"\nbound = 1e-10\n')
        out = os.path.join(tmp, "huge")
        r = run("gen", "--cases", bad_case, "--case", "c", "--out", out)
        expect(r.returncode == 2 and "case 'c'" in r.stderr and "2^-20 .. 2^20" in r.stderr and not os.path.exists(out),
               f"block scales past 2^20: {r.stderr}")

    finish("fp4 bundles")


if __name__ == "__main__":
    main()
