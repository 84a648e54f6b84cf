#!/usr/bin/env python3
"""Triton's fp8 tl.dot against the sm90-wgmma model (reference/mma), run on a Hopper GPU.

Writes, for e4m3fn x e4m3fn and e5m2 x e5m2, the operands A [M, 128] and B [N, 128] as fp8 codes,
each row's input style, and tl.dot's float32 results D = A B^T, so that
`mqa_mma_probe --verify-triton DIR` (tests/gpu/mma_probe.cpp) can count the dots the model
reproduces bit for bit. Also records whether the compiled kernel issues wgmma. Usage:

    python3 kernels/triton/probe.py OUT_DIR [--rows 2048 --cols 512]
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import triton
import triton.language as tl

STYLES = 6  # the same six input styles as mqa_mma_probe: see fill_row there


@triton.jit
def _dot_kernel(a_ptr, b_ptr, d_ptr, n_cols, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                B_AS_COLUMNS: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    depth = tl.arange(0, K)
    a = tl.load(a_ptr + rows[:, None] * K + depth[None, :])
    if B_AS_COLUMNS:  # loaded [K, BLOCK_N] through strided pointers, as kernels/triton/mqa_logits.py does
        b = tl.load(b_ptr + cols[None, :] * K + depth[:, None])
        d = tl.dot(a, b)
    else:
        b = tl.load(b_ptr + cols[:, None] * K + depth[None, :])
        d = tl.dot(a, tl.trans(b))  # float32 accumulator, as the indexer kernels use it
    tl.store(d_ptr + rows[:, None] * n_cols + cols[None, :], d)


# (name, BLOCK_M, BLOCK_N, K, B loaded as columns): the probe's tile, then the MQA kernel's shapes.
CONFIGS = (("m64n64k128", 64, 64, 128, False), ("m128n128k64", 128, 128, 64, True),
           ("m128n128k128", 128, 128, 128, True), ("m64n256k128", 64, 256, 128, False))


def finite_codes(codes, dtype):
    values = torch.from_numpy(codes).view(dtype).float()
    bad = ~torch.isfinite(values)
    codes = codes.copy()
    codes[bad.numpy()] &= 0xF0
    return codes


def rows_of_style(style, count, depth, dtype, rng):
    """`count` rows of fp8 codes in one of the probe's input styles."""
    if style == 0:  # uniform codes
        codes = rng.integers(0, 256, size=(count, depth), dtype=np.uint8)
    elif style == 1:  # per-token scaled normal, as producers quantize
        x = rng.standard_normal((count, depth)).astype(np.float32)
        fmax = torch.finfo(dtype).max
        x = x / np.abs(x).max(axis=1, keepdims=True) * fmax
        codes = torch.from_numpy(x).to(dtype).view(torch.uint8).numpy()
    elif style == 2:  # the second half cancels the first
        half = rng.integers(0, 256, size=(count, depth // 2), dtype=np.uint8)
        half = finite_codes(half, dtype)
        neg = half ^ 0x80
        bump = rng.integers(0, 4, size=neg.shape) == 0
        neg = np.where(bump, (neg + 1).astype(np.uint8), neg)
        codes = np.concatenate([half, neg], axis=1)
    elif style == 3:  # top or bottom binades
        r = rng.integers(0, 256, size=(count, depth), dtype=np.uint8)
        codes = np.where(r % 2 == 1, r | 0x60, r & 0x9F).astype(np.uint8)
    elif style == 4:  # zeros and subnormals
        mask = 0x87 if dtype == torch.float8_e4m3fn else 0x83
        codes = (rng.integers(0, 256, size=(count, depth), dtype=np.uint8) & mask).astype(np.uint8)
    else:  # the largest codes
        codes = (rng.integers(0, 256, size=(count, depth), dtype=np.uint8) | 0x70).astype(np.uint8)
    return finite_codes(codes, dtype)


def operands(count, depth, dtype, rng):
    style = (np.arange(count) % STYLES).astype(np.int32)
    codes = np.empty((count, depth), np.uint8)
    for s in range(STYLES):
        idx = np.nonzero(style == s)[0]
        codes[idx] = rows_of_style(s, len(idx), depth, dtype, rng)
    return codes, style


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--cols", type=int, default=512)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    summary = {"triton": triton.__version__, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    for config, block_m, block_n, depth, columns in CONFIGS:
        for name, dtype in (("e4m3fn", torch.float8_e4m3fn), ("e5m2", torch.float8_e5m2)):
            rng = np.random.default_rng(20261130 + len(name) + depth)
            a, style = operands(args.rows, depth, dtype, rng)
            b, _ = operands(args.cols, depth, dtype, rng)
            da = torch.from_numpy(a).cuda().view(dtype)
            db = torch.from_numpy(b).cuda().view(dtype)
            d = torch.empty((args.rows, args.cols), dtype=torch.float32, device="cuda")
            compiled = _dot_kernel[(args.rows // block_m, args.cols // block_n)](
                da, db, d, args.cols, K=depth, BLOCK_M=block_m, BLOCK_N=block_n, B_AS_COLUMNS=columns)
            torch.cuda.synchronize()
            ptx = compiled.asm.get("ptx", "")
            shapes = sorted({line.split()[0] for line in ptx.splitlines() if "wgmma.mma_async" in line})
            summary[f"{config}.{name}"] = {"wgmma_in_ptx": "wgmma" in ptx, "mma_sync_in_ptx": "mma.sync" in ptx,
                                           "instructions": shapes, "dots": args.rows * args.cols}
            stem = os.path.join(args.out, f"triton.{config}.{name}.{name}")
            np.save(stem + ".a.npy", a)
            np.save(stem + ".b.npy", b)
            np.save(stem + ".d.npy", d.cpu().numpy())
            np.save(stem + ".style.npy", style)
    with open(os.path.join(args.out, "triton-probe.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
