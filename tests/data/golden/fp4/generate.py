#!/usr/bin/env python3
"""Golden vectors for e2m1fn (fp4) conversion and for bfloat16 logits files, made where
the producers live: a GPU machine with ml_dtypes and torch (CUDA). ci/gpu.sh can run it as a step;
by hand:

    python3 tests/data/golden/fp4/generate.py OUT_DIR

then copy OUT_DIR's files into tests/data/golden/fp4/ (README.md there says what each holds).

Inputs (both signs throughout):
  float32: every float32 within 256 ulps of each e2m1 midpoint (0.25, 0.75, 1.25, 1.75, 2.5, 3.5,
           5, and 7, the overflow threshold between 6 and the absent 8) and of each e2m1 value;
           zeros, subnormals, FLT_MAX, Inf, NaNs with six payloads; every 2^14-th float32 bit
           pattern (all exponents, NaN payloads included); 65536 random bit patterns (seed 20261214).
  float64: next to every midpoint: the midpoint, +-1 float64 ulp, +-1 float32 ulp, the float32
           rounding boundaries on either side (where a float32 cast stops landing on the midpoint)
           and +-1 float64 ulp around them, +-2^-40 relative; the e2m1 values themselves; edges
           (zeros, float64 and float32 subnormal and overflow edges, Inf, NaNs); 8192 log-uniform
           random values in [2^-8, 2^8].

Producers:
  ml_dtypes   x.astype(ml_dtypes.float4_e2m1fn).view(np.uint8): one code per byte
  torch       x.to(torch.float4_e2m1fn_x2) is attempted and its failure recorded: in torch <= 2.11
              the dtype is storage only (c10/util/Float4_e2m1fn_x2.h has no conversion)
  deepgemm    DeepGEMM's fp4 cast (deep_gemm.utils.math._quantize_to_fp4_e2m1: |x| clamped to 6,
              torch.bucketize against the midpoints, sign where the code is nonzero), run on the
              CPU and on the GPU, in the input's dtype. The installed deep_gemm's function is used
              when it imports; otherwise the same three torch calls written out here (the summary
              says which ran).
  bfloat16    what ml_dtypes' np.save writes for a bfloat16 array (its header's descr), and torch's
              float32 -> bfloat16 cast of every float32 input (the rounding bf16 logits get).

Writes into OUT_DIR:
    in_f32_bits.npy                      uint32 [N32]  float32 inputs as raw bits
    in_f64_bits.npy                      uint64 [N64]  float64 inputs as raw bits
    ml_dtypes.e2m1fn.from_f32.npy        uint8 [N32]
    ml_dtypes.e2m1fn.from_f64.npy        uint8 [N64]
    ml_dtypes.e2m1fn.decode_f32bits.npy  uint32 [16]   float32 bits of each code
    deepgemm.e2m1fn.from_f32.npy         uint8 [N32]   (CPU)
    deepgemm.e2m1fn.from_f64.npy         uint8 [N64]   (CPU)
    deepgemm_cuda.e2m1fn.from_f32.npy    uint8 [N32]   (GPU, when torch sees one)
    deepgemm_cuda.e2m1fn.from_f64.npy    uint8 [N64]
    torch.bfloat16.from_f32.npy          uint16 [N32]  torch's float32 -> bfloat16 cast, bits
    ml_dtypes.bfloat16.npy               what np.save writes for ml_dtypes.bfloat16 [2, 5] values
    ml_dtypes.bfloat16_bits.npy          uint16 [2, 5] the same values' bits
    summary.md                           versions, the descr np.save wrote, the torch cast's answer,
                                         where the producers differ

The C++ side reads them in tests/reference/fp8/golden_fp4_test.cpp.
"""
import os
import platform
import sys
import warnings

import numpy as np

SEED = 20261214
MIDPOINTS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0]
VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
E2M1_BOUNDARIES = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
NAN_BITS_32 = [0x7FC00000, 0x7FA00000, 0x7F800001, 0x7FFFFFFF, 0x7FC00001, 0x7FE00000]
NAN_BITS_64 = [0x7FF8000000000000, 0x7FFC000000000000, 0x7FF4000000000000, 0x7FF0000000000001,
               0x7FFFFFFFFFFFFFFF, 0x7FFA000000000000]


def both_signs32(bits):
    bits = np.asarray(bits, dtype=np.uint32)
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


def float32_inputs():
    parts = []
    for v in MIDPOINTS + VALUES:
        centre = int(np.array(v, dtype=np.float32).view(np.uint32))
        lo = max(centre - 256, 0)
        parts.append(np.arange(lo, centre + 257, dtype=np.uint32))
    edges = [0, 1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000] + NAN_BITS_32
    parts.append(np.array(edges, dtype=np.uint32))
    parts.append(np.arange(0, 1 << 31, 1 << 14, dtype=np.uint64).astype(np.uint32))
    rng = np.random.default_rng(SEED)
    parts.append(rng.integers(0, 1 << 31, size=65536, dtype=np.uint64).astype(np.uint32))
    return np.unique(both_signs32(np.concatenate(parts)))


def float64_inputs():
    mids = np.array(MIDPOINTS, dtype=np.float64)
    m32 = mids.astype(np.float32)
    up32 = np.nextafter(m32, np.float32(np.inf)).astype(np.float64)
    down32 = np.nextafter(m32, np.float32(0)).astype(np.float64)
    points = [mids, up32, down32, mids * (1 + 2.0**-40), mids * (1 - 2.0**-40), np.array(VALUES)]
    for e in [mids, (mids + up32) / 2, (mids + down32) / 2]:
        points += [e, np.nextafter(e, 0), np.nextafter(e, np.inf)]
    tiny = np.finfo(np.float64)
    edges = np.array([0.0, 5e-324, tiny.tiny, 2.0**-149, 2.0**-150, 1e-30, float(np.finfo(np.float32).max),
                      2.0**128, 1e300, tiny.max, np.inf])
    rng = np.random.default_rng(SEED)
    random = np.exp2(rng.uniform(-8, 8, size=8192))
    x = np.concatenate(points + [edges, random])
    bits = np.concatenate([x.view(np.uint64), (-x).view(np.uint64), np.array(NAN_BITS_64, dtype=np.uint64),
                           np.array(NAN_BITS_64, dtype=np.uint64) | np.uint64(1 << 63)])
    return np.unique(bits)


def deepgemm_rule(torch):
    """DeepGEMM's fp4 cast: the installed function when deep_gemm imports, else its three torch calls."""
    for module in ("deep_gemm.utils.math", "vllm.third_party.deep_gemm.utils.math"):
        try:
            mod = __import__(module, fromlist=["_quantize_to_fp4_e2m1"])
            return getattr(mod, "_quantize_to_fp4_e2m1"), f"{module}._quantize_to_fp4_e2m1 (installed)"
        except (ImportError, AttributeError):
            continue

    def written_out(x):
        magnitude = x.abs().clamp_max(6.0)
        midpoints = torch.tensor(E2M1_BOUNDARIES, device=x.device, dtype=magnitude.dtype)
        index = torch.bucketize(magnitude, midpoints)
        negative = (x < 0) & (index != 0)
        return (index.to(torch.uint8) | (negative.to(torch.uint8) << 3)).view(torch.int8)

    return written_out, "the rule written out in generate.py (deep_gemm did not import)"


def differences(a, b, bits, limit=4):
    bad = np.nonzero(a != b)[0]
    examples = ", ".join(f"0x{int(bits[i]):x}: 0x{int(a[i]):02X} vs 0x{int(b[i]):02X}" for i in bad[:limit])
    return f"{len(bad)} differ" + (f" ({examples})" if examples else "")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "golden-fp4"
    os.makedirs(out_dir, exist_ok=True)
    import ml_dtypes
    import torch

    save = lambda name, array: np.save(os.path.join(out_dir, name), array)
    lines = []
    b32 = float32_inputs()
    b64 = float64_inputs()
    x32, x64 = b32.view(np.float32), b64.view(np.float64)
    save("in_f32_bits.npy", b32)
    save("in_f64_bits.npy", b64)

    fp4 = ml_dtypes.float4_e2m1fn
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ml32 = x32.astype(fp4).view(np.uint8)
        ml64 = np.asarray(x64, np.float64).astype(fp4).view(np.uint8)
        via32 = x64.astype(np.float32).astype(fp4).view(np.uint8)
    save("ml_dtypes.e2m1fn.from_f32.npy", ml32)
    save("ml_dtypes.e2m1fn.from_f64.npy", ml64)
    decoded = np.arange(16, dtype=np.uint8).view(fp4).astype(np.float32).view(np.uint32)
    save("ml_dtypes.e2m1fn.decode_f32bits.npy", decoded)
    lines.append(f"- ml_dtypes float64 cast vs cast of float32(x): {differences(ml64, via32, b64)}")
    lines.append(f"- ml_dtypes bytes above 0x0F written: {int((ml32 > 15).sum() + (ml64 > 15).sum())}")

    try:
        packed = torch.from_numpy(x32[:16].copy()).to(torch.float4_e2m1fn_x2)
        lines.append(f"- torch float32 -> float4_e2m1fn_x2: a cast exists (gave {packed.view(torch.uint8).tolist()}); "
                     "add a torch row for it")
    except Exception as e:  # the dtype is storage only in torch <= 2.11
        lines.append(f"- torch float32 -> float4_e2m1fn_x2: no cast ({type(e).__name__}: {str(e).splitlines()[0]})")

    rule, which = deepgemm_rule(torch)
    lines.append(f"- DeepGEMM's fp4 cast: {which}")
    results = {}
    for device in ["cpu"] + (["cuda"] if torch.cuda.is_available() else []):
        prefix = "deepgemm" if device == "cpu" else "deepgemm_cuda"
        for suffix, x in (("from_f32", x32), ("from_f64", x64)):
            codes = rule(torch.from_numpy(x.copy()).to(device)).view(torch.uint8).cpu().numpy()
            results[prefix, suffix] = codes
            save(f"{prefix}.e2m1fn.{suffix}.npy", codes)
    if ("deepgemm_cuda", "from_f32") in results:
        for suffix in ("from_f32", "from_f64"):
            lines.append(f"- DeepGEMM cast CPU vs CUDA {suffix}: "
                         f"{differences(results['deepgemm', suffix], results['deepgemm_cuda', suffix], b32 if suffix == 'from_f32' else b64)}")
    lines.append(f"- ml_dtypes vs DeepGEMM cast, float32 inputs: {differences(ml32, results['deepgemm', 'from_f32'], b32)}")

    bf16 = torch.from_numpy(x32.copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    save("torch.bfloat16.from_f32.npy", bf16)
    logits = np.array([[1.0, -2.5, 3.0e38, np.inf, -np.inf], [np.nan, 1e-40, -0.0, 0.1, 65504.0]], dtype=np.float32)
    as_bf16 = logits.astype(ml_dtypes.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save("ml_dtypes.bfloat16.npy", as_bf16)
    save("ml_dtypes.bfloat16_bits.npy", as_bf16.view(np.uint16))
    descr = np.lib.format.dtype_to_descr(as_bf16.dtype)
    lines.append(f"- np.save of an ml_dtypes.bfloat16 array writes descr {descr!r}"
                 + (f" (warnings: {[str(w.message) for w in caught]})" if caught else ""))

    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write("# e2m1fn and bfloat16 golden vectors\n\n")
        f.write(f"- inputs: {len(b32)} float32, {len(b64)} float64 values (generate.py, seed {SEED})\n")
        f.write(f"- python {platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}, "
                f"torch {torch.__version__} (CUDA {torch.version.cuda}), GPU: "
                f"{torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'none'}\n\n## Findings\n\n")
        f.write("\n".join(lines) + "\n")
    print(open(os.path.join(out_dir, "summary.md")).read())


if __name__ == "__main__":
    main()
