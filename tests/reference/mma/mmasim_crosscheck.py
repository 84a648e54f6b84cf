#!/usr/bin/env python3
"""Our gfx942-mfma model against microsoft/MMA-Sim's CDNA3 fp8 MFMA model, bit for bit.

MMA-Sim (https://github.com/microsoft/MMA-Sim) models AMD's matrix instructions in Python; its
authors report it bitwise equal to the hardware (arXiv 2511.10909). Our model (reference/mma,
`gfx942-mfma`) was written from MMA-Sim's description and never ran on AMD hardware, so MMA-Sim's
own code is the nearest thing to the hardware this project can run. Nothing of MMA-Sim is kept in
this repository: fetch it into the git-ignored .external/ folder, at the commit measured in
reference/mma/README.md (2026-12-03):

    git clone https://github.com/microsoft/MMA-Sim .external/MMA-Sim
    git -C .external/MMA-Sim checkout c78513835c8b2ae61b35062afce4c4255bc6901c

MMA-Sim needs torch only to hold values; numpy_torch.py stands in for it, so numpy is enough.

    mmasim_crosscheck.py MMA_SIM_DIR MODEL_DOTS [--dots N] [--seed S] [--jobs J]

MODEL_DOTS is tests/reference/mma/model_dots.cpp built (mqa_mma_model_dots). For every shape
and every pair of CDNA3's fp8 formats (fp8 = e4m3fnuz, bf8 = e5m2fnuz; CDNA3 takes no OCP
formats) it draws N random dots (seeded; operands in styles that reach zeros, subnormals, the
largest codes, the NaN code and cancellation, accumulators in styles that reach both zeros,
float32 subnormals, infinities, NaNs and the largest floats), runs MMA-Sim's `mfma` instruction
and our model on them, and compares every float32 result bit for bit. Two differences, conventions
of MMA-Sim's code (both_nan and zero_step_below_c below say which), are counted apart. Exit
status: 0 when no other difference is found, 1 otherwise (the first ones are printed), 77 when
MMA_SIM_DIR holds no MMA-Sim (CTest reports the test skipped).
"""

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

SKIPPED = 77

# CDNA3's fp8 operand formats as MMA-Sim names them: (our name, exponent bits, mantissa bits, bias).
# Both are "fnuz": no infinities, no negative zero, and 0x80 is the one NaN.
FORMATS = {"fp8": ("e4m3fnuz", 4, 3, 8), "bf8": ("e5m2fnuz", 5, 2, 16)}
NAN_CODE = 0x80
# torch decodes the fnuz NaN code to the float32 0x7F800001 (c10's fp8_fnuz_to_fp32_value), which
# MMA-Sim widens to double; MMA-Sim then returns the host's NaN, so its NaN bits come from here.
with np.errstate(invalid="ignore"):  # widening a signalling NaN quiets it
    TORCH_FNUZ_NAN = float(np.array([0x7F800001], np.uint32).view(np.float32).astype(np.float64)[0])


@dataclass(frozen=True)
class Shape:
    name: str
    qualifier: str   # MMA-Sim's mfma qualifier: f32_<qualifier>_<a>_<b>
    m: int
    n: int
    k: int           # the instruction's k
    chain: int       # instructions per dot, D fed back as C
    from_c: bool     # the first C is drawn (else 0: a dot from zero, as mqacheck's --accumulate runs it)


# Every k-step shape of the model: the 16-product step alone (32x32x16), the instruction whose
# name the model carries (16x16x32: two steps), both from an arbitrary float32 accumulator, and a
# production dot (head_dim 128 = four 16x16x32 instructions from zero) through mma::dot.
SHAPES = [
    Shape("32x32x16, one step from C", "32x32x16", 32, 32, 16, 1, True),
    Shape("16x16x32, two steps from C", "16x16x32", 16, 16, 32, 1, True),
    Shape("16x16x32 x4, D=128 from 0", "16x16x32", 16, 16, 32, 4, False),
]


def fnuz_values(codes, fmt):
    """The exact value of each fnuz code (0x80: NaN), as float64."""
    _, exp_bits, man_bits, bias = FORMATS[fmt]
    codes = codes.astype(np.int64)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exponent = (codes >> man_bits) & ((1 << exp_bits) - 1)
    mantissa = codes & ((1 << man_bits) - 1)
    normal = np.ldexp(1.0 + mantissa / (1 << man_bits), exponent - bias)
    subnormal = np.ldexp(mantissa.astype(np.float64), 1 - bias - man_bits)
    values = sign * np.where(exponent == 0, subnormal, normal)
    return np.where(codes == NAN_CODE, TORCH_FNUZ_NAN, values)


# Operand styles (codes). Each batch draws A in one style and B in another, cycling through every
# pair, so each special reaches every shape and format pair.
def codes_of(rng, fmt, sign, exponent, mantissa):
    _, exp_bits, man_bits, _ = FORMATS[fmt]
    code = (sign << 7) | (np.clip(exponent, 0, (1 << exp_bits) - 1) << man_bits) | mantissa
    return np.where(code == NAN_CODE, 0, code).astype(np.uint8)  # a drawn "-0" is the NaN code: make it 0


def style_uniform(rng, fmt, shape):
    return np.where((c := rng.integers(0, 256, shape)) == NAN_CODE, 0, c).astype(np.uint8)


def style_narrow(rng, fmt, shape):
    """Data as a layer's activations look: random signs, exponents within a few binades."""
    _, exp_bits, man_bits, _ = FORMATS[fmt]
    centre = rng.integers(2, (1 << exp_bits) - 2)
    return codes_of(rng, fmt, rng.integers(0, 2, shape), centre + rng.integers(-2, 3, shape),
                    rng.integers(0, 1 << man_bits, shape))


def style_cancelling(rng, fmt, shape):
    """Narrow data, paired by cancel_pairs() with the other operand so that neighbouring
    products (one in the even lane, one in the odd) cancel."""
    return style_narrow(rng, fmt, shape)


def cancel_pairs(rng, fa, a, b):
    """Each odd product the negated even one, apart from a few redrawn elements of A: the sum is
    decided by how each lane and their combination round."""
    a, b = a.copy(), b.copy()
    a[:, 1::2] = np.where(a[:, 0::2] == 0, 0, a[:, 0::2] ^ 0x80)
    b[1::2, :] = b[0::2, :]
    redraw = rng.random(a.shape) < 0.08
    return np.where(redraw, style_uniform(rng, fa, a.shape), a).astype(np.uint8), b


def style_specials(rng, fmt, shape):
    """Half the elements special: zero, subnormals, smallest normals, the largest codes, NaN."""
    _, _, man_bits, _ = FORMATS[fmt]
    subnormal = list(range(1, 1 << man_bits))
    smallest_normal = [1 << man_bits, (1 << man_bits) + 1]
    specials = np.array([0, 0x7F, 0x7E] + subnormal + smallest_normal, dtype=np.int64)
    special = specials[rng.integers(0, len(specials), shape)] | (rng.integers(0, 2, shape) << 7)
    special = np.where(special == NAN_CODE, 0, special)
    special = np.where(rng.random(shape) < 0.005, NAN_CODE, special)
    return np.where(rng.random(shape) < 0.5, special, style_uniform(rng, fmt, shape)).astype(np.uint8)


def style_sparse(rng, fmt, shape):
    """Mostly zeros: many dots whose products are all zero, where only the accumulator is left."""
    return np.where(rng.random(shape) < 0.8, 0, style_uniform(rng, fmt, shape)).astype(np.uint8)


def style_tiny(rng, fmt, shape):
    """Subnormals, zeros and the smallest normals: products far below 1, near each other."""
    _, _, man_bits, _ = FORMATS[fmt]
    return codes_of(rng, fmt, rng.integers(0, 2, shape), rng.integers(0, 2, shape),
                    rng.integers(0, 1 << man_bits, shape))


def style_largest(rng, fmt, shape):
    """The largest magnitudes with random signs: big products that cancel."""
    _, exp_bits, man_bits, _ = FORMATS[fmt]
    top = (1 << exp_bits) - 1
    return codes_of(rng, fmt, rng.integers(0, 2, shape), top - rng.integers(0, 2, shape),
                    (1 << man_bits) - 1 - rng.integers(0, 2, shape))


def style_nan(rng, fmt, shape):
    """Uniform codes with the NaN code now and then."""
    return np.where(rng.random(shape) < 0.01, NAN_CODE, style_uniform(rng, fmt, shape)).astype(np.uint8)


STYLES = [style_uniform, style_narrow, style_cancelling, style_specials, style_sparse, style_tiny,
          style_largest, style_nan]


def accumulators(rng, shape, a_values, b_values):
    """float32 bits of C: each element drawn from a mix of styles."""
    with np.errstate(all="ignore"):
        exact = np.nan_to_num(a_values @ b_values)   # near the products' sum: cancels it
    count = int(np.prod(shape))
    f32 = lambda x: np.asarray(x, dtype=np.float32).reshape(-1).view(np.uint32)
    candidates = [
        np.zeros(count, np.uint32),                                   # +0
        np.full(count, 0x80000000, np.uint32),                        # -0
        f32(rng.standard_normal(count) * np.exp2(rng.integers(-40, 36, count))),   # the products' range
        rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32),        # any bits
        rng.integers(1, 1 << 23, count).astype(np.uint32)                      # subnormal
        | (rng.integers(0, 2, count).astype(np.uint32) << 31),
        f32(np.ldexp(1.0 + rng.random(count), rng.integers(-126, -100, count))  # tiny
            * rng.choice([-1.0, 1.0], count)),
        f32(np.float32(3.4e38) * rng.choice([-1.0, 1.0], count) * (1 - rng.random(count) * 1e-6)),  # near the largest
        rng.choice(np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF],
                            np.uint32), count),                       # infinities and NaNs
        f32(-exact.reshape(-1) * (1 + rng.standard_normal(count) * 2.0**-20)),      # cancels the sum
    ]
    weights = np.array([1, 1, 4, 2, 1, 1, 1, 1, 3], dtype=np.float64)
    pick = rng.choice(len(candidates), count, p=weights / weights.sum())
    return np.choose(pick, candidates).astype(np.uint32).reshape(shape)


def batch(seed, shape_index, pair_index, index, fa, fb):
    """One MMA-Sim call's operands: A [m][K] and B [K][n] codes, C [m][n] float32 bits."""
    shape = SHAPES[shape_index]
    rng = np.random.default_rng([seed, shape_index, pair_index, index])
    depth = shape.k * shape.chain
    style_a = STYLES[index % len(STYLES)]
    style_b = STYLES[(index // len(STYLES)) % len(STYLES)]
    a = style_a(rng, fa, (shape.m, depth))
    b = style_b(rng, fb, (depth, shape.n))
    if style_a is style_cancelling:
        a, b = cancel_pairs(rng, fa, a, b)
    if shape.from_c:
        c = accumulators(rng, (shape.m, shape.n), fnuz_values(a, fa), fnuz_values(b, fb))
    else:
        c = np.zeros((shape.m, shape.n), np.uint32)
    return a, b, c


# MMA-Sim, in worker processes (its model runs a dot in about half a millisecond of Python).
_mfma = {}


def _start_worker(mmasim_dir):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy_torch
    numpy_torch.install()
    sys.path.insert(0, str(mmasim_dir))


def mmasim_batch(job):
    """D bits of MMA-Sim's CDNA3 mfma for one batch (chained instructions feed D back as C)."""
    shape_index, fa, fb, a, b, c = job
    import torch  # numpy_torch, installed by _start_worker
    from mmasim.simulator.amd import mfma
    shape = SHAPES[shape_index]
    qualifier = f"f32_{shape.qualifier}_{fa}_{fb}"
    if qualifier not in _mfma:
        _mfma[qualifier] = mfma("CDNA3", qualifier)
    instruction = _mfma[qualifier]
    d = torch.from_values(c.view(np.float32), torch.float32)
    for step in range(shape.chain):
        cols = slice(step * shape.k, (step + 1) * shape.k)
        d = instruction(torch.from_values(fnuz_values(a[:, cols], fa), torch.float8_e4m3fnuz if fa == "fp8"
                                          else torch.float8_e5m2fnuz),
                        torch.from_values(fnuz_values(b[cols, :], fb), torch.float8_e4m3fnuz if fb == "fp8"
                                          else torch.float8_e5m2fnuz),
                        d)
    return np.asarray(d.v, dtype=np.float32).reshape(-1).view(np.uint32)


def model_dots(tool, shape, fa, fb, batches, workdir):
    """D bits of our model for every dot of `batches`, in MMA-Sim's order (row-major D)."""
    a_rows = np.concatenate([np.repeat(a, shape.n, axis=0) for a, _, _ in batches])
    b_rows = np.concatenate([np.tile(b.T, (shape.m, 1)) for _, b, _ in batches])
    c = np.concatenate([c.reshape(-1) for _, _, c in batches]).view(np.float32)
    paths = {name: Path(workdir) / f"{name}.npy" for name in "abcd"}
    np.save(paths["a"], np.ascontiguousarray(a_rows))
    np.save(paths["b"], np.ascontiguousarray(b_rows))
    np.save(paths["c"], c)
    args = [str(tool), "gfx942-mfma", FORMATS[fa][0], FORMATS[fb][0], str(paths["a"]), str(paths["b"])]
    args += [str(paths["c"])] if shape.from_c else []
    subprocess.run(args + [str(paths["d"])], check=True)
    return np.load(paths["d"]).view(np.uint32), a_rows, b_rows, c.view(np.uint32)


def compare(ours, theirs):
    """Indices where the float32 bits differ."""
    return np.flatnonzero(ours != theirs)


# Two differences between MMA-Sim and our model that are conventions of MMA-Sim's code, not
# claims about the hardware (reference/mma/README.md):
#  - NaN bits: MMA-Sim returns whatever NaN the host's float64 arithmetic propagates (its NaN path
#    is marked TODO): a NaN accumulator's payload and sign, or torch's 0x7F800001 for the NaN
#    code, quieted. Our model writes 0x7FC00000. Only NaN against NaN is compared there.
#  - Zero products: MMA-Sim gives a zero operand the exponent -126, so a zero product's exponent
#    is -126 plus the other operand's (at most -111). In a step whose products are all zero, an
#    accumulator below that is aligned to it and loses bits below 2^(e - 24); our model lets
#    zeros never decide the alignment and keeps C. Only a drawn C below 2^-100 reaches it: a dot
#    from zero holds 0 or at least 2^-34 between steps (the smallest product), so mqacheck's dots
#    never do.
def both_nan(ours, theirs):
    return np.isnan(ours.view(np.float32)) & np.isnan(theirs.view(np.float32))


def zero_step_below_c(shape, a_rows, b_rows, c, ours, theirs):
    """Dots that start from a C below 2^-100, have a step whose products are all zero, and whose
    two results differ by less than 2^-100: only the bits of C that MMA-Sim's alignment drops. A
    wrong step with nonzero products (each at least 2^-34) moves the result by at least an ulp of
    it, far above 2^-100, and stays unexplained."""
    step = 16
    zero = (a_rows == 0) | (b_rows == 0)
    all_zero_step = zero.reshape(len(zero), -1, step).all(axis=2).any(axis=1)
    with np.errstate(invalid="ignore", over="ignore"):
        magnitude = np.abs(c.view(np.float32).astype(np.float64))
        gap = np.abs(ours.view(np.float32).astype(np.float64) - theirs.view(np.float32).astype(np.float64))
    return shape.from_c & all_zero_step & (magnitude > 0) & (magnitude < 2.0**-100) & (gap < 2.0**-100)


def result_classes(bits):
    """How many results are NaN, infinite, float32 subnormals, -0: what the draws reached."""
    values = bits.view(np.float32)
    subnormal = (values != 0) & (np.abs(values) < np.float32(2.0**-126))
    return (int(np.isnan(values).sum()), int(np.isinf(values).sum()), int(subnormal.sum()),
            int((bits == 0x80000000).sum()))


def bits_text(bits):
    value = np.array([bits], np.uint32).view(np.float32)[0]
    return f"0x{int(bits):08X} ({value!r})"


def describe(i, a_rows, b_rows, c, ours, theirs):
    return (f"    dot {i}: A {bytes(a_rows[i]).hex()} B {bytes(b_rows[i]).hex()} C {bits_text(c[i])}\n"
            f"      ours {bits_text(ours[i])}  MMA-Sim {bits_text(theirs[i])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mmasim_dir", type=Path)
    parser.add_argument("model_dots", type=Path)
    parser.add_argument("--dots", type=int, default=10_000, help="dots per shape and format pair")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--verbose", action="store_true", help="print examples of the explained differences too")
    args = parser.parse_args()
    if not (args.mmasim_dir / "mmasim" / "simulator" / "amd.py").is_file():
        print(f"skipped: no MMA-Sim at {args.mmasim_dir} (fetch microsoft/MMA-Sim there to run this check)")
        return SKIPPED

    # The comparison itself must see a single flipped bit.
    probe = np.arange(8, dtype=np.uint32)
    flipped = probe.copy()
    flipped[5] ^= 1
    assert list(compare(probe, flipped)) == [5], "the comparison misses a flipped bit"

    start = time.time()
    rows, failed = [], False
    with multiprocessing.Pool(args.jobs, _start_worker, (args.mmasim_dir,)) as pool, \
            tempfile.TemporaryDirectory() as workdir:
        for si, shape in enumerate(SHAPES):
            for pi, (fa, fb) in enumerate([(x, y) for x in FORMATS for y in FORMATS]):
                count = -(-args.dots // (shape.m * shape.n))
                batches = [batch(args.seed, si, pi, i, fa, fb) for i in range(count)]
                theirs = np.concatenate(pool.map(mmasim_batch, [(si, fa, fb, *x) for x in batches], chunksize=4))
                ours, a_rows, b_rows, c = model_dots(args.model_dots, shape, fa, fb, batches, workdir)
                differ = compare(ours, theirs)
                nan_bits = differ[both_nan(ours, theirs)[differ]]
                rest = differ[~both_nan(ours, theirs)[differ]]
                explained = zero_step_below_c(shape, a_rows, b_rows, c, ours, theirs)
                zero_step = rest[explained[rest]]
                unexplained = rest[~explained[rest]]
                rows.append((shape.name, f"{fa} x {fb}", len(ours), len(ours) - len(differ), len(nan_bits),
                             len(zero_step), len(unexplained), *result_classes(theirs)))
                failed |= len(unexplained) > 0
                for kind, where in (("UNEXPLAINED", unexplained), ("NaN bits differ", nan_bits),
                                    ("zero products, C below 2^-100", zero_step)):
                    if len(where) and (kind == "UNEXPLAINED" or args.verbose):
                        print(f"{shape.name}, {fa} x {fb}: {len(where)} dots, {kind}; first {args.examples}:")
                        for i in where[:args.examples]:
                            print(describe(i, a_rows, b_rows, c, ours, theirs))
    print(f"\nmqacheck gfx942-mfma vs MMA-Sim CDNA3 mfma, seed {args.seed}, {time.time() - start:.0f} s")
    header = ("shape", "formats", "dots", "bit-exact", "NaN bits", "zero products", "unexplained",
              "NaN", "inf", "subnormal", "-0")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(x).ljust(w) if i < 2 else str(x).rjust(w) for i, (x, w) in enumerate(zip(r, widths))))
    total, agree = sum(r[2] for r in rows), sum(r[3] for r in rows)
    explained = sum(r[4] + r[5] for r in rows)
    print(f"total: {total} dots, {agree} bit-exact, {explained} explained differences (NaN bits; zero products "
          f"with C below 2^-100), {total - agree - explained} unexplained")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
