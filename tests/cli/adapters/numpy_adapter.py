#!/usr/bin/env python3
"""A stand-alone adapter for `mqacheck run --kernel` (docs/protocol.md): the fp8 MQA-logits
operation as a NumPy float32 kernel, with the Python standard library and NumPy only. fp8 codes
are decoded from the format definitions here, not by mqacheck.

    mqacheck run --cases cases/quick.toml --kernel 'python3 numpy_adapter.py' --accumulate fp32

Paged decode bundles (layout kind "paged") are computed from the cache through the
block tables (`run --kernel ... --operation paged` or `both` sends them).

--bug plants one of the bugs mqacheck must catch; --fresh writes a new [M, N] array instead of
filling the poisoned [M, S] buffer in place. --unsupported-heads H answers a case with H heads
"unsupported" (on every launch, or with --unsupported-on launch-2 only on launch 2: a lie);
--hostile-reason makes that reason long and full of control bytes. --head-sum sequential|pairwise
sums the heads in that float32 order."""
import argparse
import json
import os
import sys
import time
import tomllib

import numpy as np

# (exponent bias, mantissa bits, NaN rule, has infinities): OCP FP8 (e4m3fn, e5m2) and the
# "fnuz" variants (no -0: the byte 0x80 is the only NaN, no infinities).
FORMATS = {
    "e4m3fn": (7, 3, "all-ones", False),
    "e4m3fnuz": (8, 3, "0x80", False),
    "e5m2": (15, 2, "ieee", True),
    "e5m2fnuz": (16, 2, "0x80", False),
    "e4m3b11fnuz": (11, 3, "0x80", False),
}


def decode(codes, fmt):
    """uint8 fp8 codes -> float32 values (every fp8 value is exact in float32)."""
    bias, man, nan_rule, has_inf = FORMATS[fmt]
    c = codes.astype(np.int64)
    exp_bits = 7 - man
    e = (c >> man) & ((1 << exp_bits) - 1)
    f = c & ((1 << man) - 1)
    sign = np.where(c & 0x80, -1.0, 1.0)
    value = sign * np.where(e == 0, f * 2.0 ** (1 - bias - man), (f + 2**man) * 2.0 ** (e - bias - man))
    top = e == (1 << exp_bits) - 1
    if nan_rule == "all-ones":
        value = np.where(top & (f == (1 << man) - 1), np.nan, value)
    elif nan_rule == "ieee":
        value = np.where(top & (f != 0), np.nan, np.where(top & (f == 0), sign * np.inf, value))
    else:
        value = np.where(c == 0x80, np.nan, value)
    return value.astype(np.float32)


def is_paged(spec):
    return spec.get("layout", {}).get("kind") == "paged"


def load_bundle(folder):
    case = tomllib.load(open(os.path.join(folder, "case.toml"), "rb"))
    (spec,) = case["case"]
    keys = ["kv_cache", "block_table", "context_lens"] if is_paged(spec) else ["k", "k_scale"]
    arrays = {name: np.load(os.path.join(folder, name + ".npy")) for name in ["q", "weights", "ks", "ke", *keys]}
    return spec, arrays


def paged_logits(spec, a, bug=None):
    """The decode operation: request b's key j in slot j % block_kv of page block_table[b, j // block_kv]
    (its codes at slot * D, its float32 scale at block_kv * D + 4 * slot); row b * next_n + t sees
    [0, context_lens[b, t]) (2-D) or [0, L - next_n + t + 1) (1-D)."""
    layout = spec["layout"]
    next_n, block_kv, page = layout["next_n"], layout["block_kv"], layout["page_bytes"]
    q = decode(a["q"], spec.get("q_format", "e4m3fn"))
    m, heads, d = q.shape
    n = spec["n"]
    cache = a["kv_cache"].reshape(-1)
    lens = a["context_lens"].reshape(m // next_n, -1)
    out = np.full((m, n), -np.inf, dtype=np.float32)
    for b in range(m // next_n):
        if layout["context_lens_2d"]:
            ends = [int(lens[b, t]) for t in range(next_n)]
        else:
            shift = (lambda t: 1 - t) if bug == "window-without-next-n" else (lambda t: t + 1 - next_n)
            ends = [min(max(int(lens[b, 0]) + shift(t), 0), n) for t in range(next_n)]
        keys = max(ends)
        if keys == 0:
            continue
        j = np.arange(keys)
        block = j // block_kv if bug == "logical-blocks" else a["block_table"][b, j // block_kv].astype(np.int64)
        slot = j % block_kv
        codes = cache[(block * page + slot * d)[:, None] + np.arange(d)[None, :]]
        scale = cache[(block * page + block_kv * d + 4 * slot)[:, None] + np.arange(4)[None, :]].copy().view("<f4")
        k = decode(codes, spec.get("k_format", "e4m3fn"))
        rows = slice(b * next_n, (b + 1) * next_n)
        with np.errstate(invalid="ignore", over="ignore"):
            dots = np.maximum(np.einsum("thd,jd->thj", q[rows], k, dtype=np.float32), np.float32(0))
            logits = np.einsum("th,thj->tj", a["weights"][rows], dots, dtype=np.float32) * scale.reshape(1, -1)
        for t in range(next_n):
            out[b * next_n + t, : ends[t]] = logits[t, : ends[t]]
    return out


def mqa_logits(spec, a, bug=None):
    """logits[i, j] = k_scale[j] * sum_h weights[i, h] * relu(q[i, h] . k[j]) in float32 for
    ks[i] <= j < ke[i] (windows past [0, n) clamp by themselves here), -inf elsewhere."""
    q = decode(a["q"], spec.get("q_format", "e4m3fn"))
    k = decode(a["k"], spec.get("k_format", "e4m3fn"))
    m, heads, d = q.shape
    n = k.shape[0]
    logits = np.empty((m, n), dtype=np.float32)
    rows = max(1, (1 << 26) // (heads * n))  # [rows, heads, n] float32 dots: at most 256 MiB at a time
    with np.errstate(invalid="ignore", over="ignore"):
        for r in range(0, m, rows):
            dots = (q[r:r + rows].reshape(-1, d) @ k.T).reshape(-1, heads, n)  # float32 accumulation
            np.maximum(dots, np.float32(0), out=dots)  # relu that keeps NaN, as torch.relu
            logits[r:r + rows] = np.einsum("mh,mhn->mn", a["weights"][r:r + rows], dots, dtype=np.float32)
        logits *= a["k_scale"][None, :]
    j = np.arange(n)[None, :]
    end = a["ke"][:, None] + (1 if bug == "inclusive-end" else 0)
    inside = (j >= a["ks"][:, None]) & (j < end)
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32)


def head_sum(terms, order):
    """sum over axis 1 of float32 terms [rows, heads, n], rounding to float32 after every addition:
    left to right ("sequential"), or adjacent pairs level by level ("pairwise", a balanced tree)."""
    if order == "sequential":
        total = terms[:, 0].copy()
        for h in range(1, terms.shape[1]):
            total += terms[:, h]
        return total
    while terms.shape[1] > 1:
        carry = terms[:, -1:] if terms.shape[1] % 2 else terms[:, :0]
        even = terms[:, : terms.shape[1] // 2 * 2]
        terms = np.concatenate([even[:, 0::2] + even[:, 1::2], carry], axis=1)
    return terms[:, 0]


def mqa_logits_ordered(spec, a, order):
    """mqa_logits with the head sum in a stated order (head_sum), each product w * relu(dot) rounded
    to float32 first: two honest float32 kernels that differ only in their summation order."""
    q = decode(a["q"], spec.get("q_format", "e4m3fn"))
    k = decode(a["k"], spec.get("k_format", "e4m3fn"))
    m, heads, d = q.shape
    n = k.shape[0]
    logits = np.empty((m, n), dtype=np.float32)
    rows = max(1, (1 << 24) // (heads * n))
    with np.errstate(invalid="ignore", over="ignore"):
        for r in range(0, m, rows):
            dots = (q[r:r + rows].reshape(-1, d) @ k.T).reshape(-1, heads, n)
            np.maximum(dots, np.float32(0), out=dots)
            terms = a["weights"][r:r + rows, :, None] * dots  # float32 products
            logits[r:r + rows] = head_sum(terms, order)
        logits *= a["k_scale"][None, :]
    j = np.arange(n)[None, :]
    inside = (j >= a["ks"][:, None]) & (j < a["ke"][:, None])
    return np.where(inside, logits, np.float32(-np.inf)).astype(np.float32)


def write_logits(out, logits, fresh, skip_columns=None):
    if fresh:
        np.save(out, logits)
        return
    buffer = np.lib.format.open_memmap(out, mode="r+")  # the poisoned [M, S] file, filled in place
    columns = np.ones(logits.shape[1], dtype=bool)
    if skip_columns is not None:
        columns[skip_columns] = False
    buffer[:, : logits.shape[1]][:, columns] = logits[:, columns]
    buffer.flush()
    del buffer


def run(request, args):
    spec, arrays = load_bundle(request["bundle"])
    start = time.perf_counter()
    if is_paged(spec):
        logits = paged_logits(spec, arrays, args.bug)
    elif args.head_sum:
        logits = mqa_logits_ordered(spec, arrays, args.head_sum)
    else:
        logits = mqa_logits(spec, arrays, args.bug)
    if args.bug == "nondeterministic" and request["launch"] == 2:
        inside = np.isfinite(logits)
        if inside.any():
            i, j = np.argwhere(inside)[len(np.argwhere(inside)) // 2]
            logits[i, j] = np.nextafter(logits[i, j], np.float32(np.inf))
    seconds = time.perf_counter() - start
    # A tile of 64 keys never stored: the poison must show through.
    skip = slice(64, 128) if args.bug == "unwritten-tile" else None
    write_logits(request["out"], logits, args.fresh, skip)
    return seconds


def serve(handle):
    """One request line in, one response line out, until stdin closes."""
    for line in sys.stdin:
        request = {}
        try:
            request = json.loads(line)
            answer = handle(request)
        except Exception as e:  # the case fails, the adapter goes on
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps({"id": request.get("id"), **answer}) + "\n")  # the request's id, echoed
        sys.stdout.flush()


def unsupported_reason(request, args):
    """Why the kernel does not take this request's case, or None."""
    if not args.unsupported_heads:
        return None
    spec, _ = load_bundle(request["bundle"])
    if spec["heads"] not in args.unsupported_heads:
        return None
    if args.unsupported_on == "launch-2" and request["launch"] != 2:
        return None
    why = f"{spec['heads']} heads: this kernel is built for other head counts"
    if args.hostile_reason:  # a terminal escape, a newline and far more text than a report line holds
        why = "\x1b[2J\x1b[31m" + why + "\n<junit attack=\"1\">&" + "x" * 5000
    return why


def answer(request, args):
    why = unsupported_reason(request, args)
    if why is not None:
        return {"ok": False, "unsupported": why}
    return {"ok": True, "seconds": run(request, args), "label": args.label}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bug", choices=["inclusive-end", "unwritten-tile", "nondeterministic",
                                          "window-without-next-n", "logical-blocks"])
    parser.add_argument("--fresh", action="store_true", help="write a new [M, N] array instead of filling the buffer")
    parser.add_argument("--label", default=f"numpy-fp32 {np.__version__}")
    parser.add_argument("--head-sum", choices=["sequential", "pairwise"],
                        help="sum the heads in this float32 order (prefill): two honest kernels of the fp32 contract")
    parser.add_argument("--unsupported-heads", type=int, action="append", help="answer cases with these heads unsupported")
    parser.add_argument("--unsupported-on", choices=["every-launch", "launch-2"], default="every-launch")
    parser.add_argument("--hostile-reason", action="store_true", help="a long reason with control bytes")
    args = parser.parse_args()
    print(f"numpy adapter ready (bug: {args.bug})", file=sys.stderr)
    serve(lambda request: answer(request, args))


if __name__ == "__main__":
    main()
