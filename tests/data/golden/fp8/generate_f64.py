#!/usr/bin/env python3
"""Golden vectors for float64 -> fp8 conversion, made where the producers live: a GPU machine
with ml_dtypes, torch (CPU and CUDA) and nvcc. ci/gpu.sh runs it as its step `golden-f64`.

    python3 tests/data/golden/fp8/generate_f64.py OUT_DIR

Inputs: float64 values next to every rounding midpoint of every format (e8m0fnu included): the
midpoint itself, +-1 float64 ulp, +-1 float32 ulp, the float32 rounding boundaries on either
side (where a float32 cast stops landing on the midpoint) and +-1 float64 ulp around those,
+-2^-40 relative, both signs; the midpoint past the largest value (the overflow threshold);
zeros, float64 and float32 subnormal and overflow edges, Inf, NaNs with several payloads and
both signs; then log-uniform random values and random bit patterns (fixed seed).

Writes into OUT_DIR:
    in_f64_bits.npy                         uint64 [N]: the inputs as raw bits
    ml_dtypes.<fmt>.from_f64.npy            uint8 [N]: np.asarray(x, np.float64).astype(ml_dtypes.float8_<fmt>)
    torch.<fmt>.from_f64.npy                uint8 [N]: torch.from_numpy(x).to(torch.float8_<fmt>), CPU
    torch_cuda.<fmt>.from_f64.npy           the same cast on the GPU (when torch sees one)
    cuda.<e4m3|e5m2>.<satfinite|nosat>.from_f64.npy
                                            __nv_cvt_double_to_fp8(x, __NV_SATFINITE|__NV_NOSAT,
                                            __NV_E4M3|__NV_E5M2), run on the device (when nvcc and a GPU are there)
    summary_f64.md                          versions, what the CUDA header does, where the producers differ

The C++ side reads them in tests/reference/fp8/golden_test.cpp (kFloat64GoldenFiles).
"""
import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

FORMATS = ["e4m3fn", "e4m3fnuz", "e5m2", "e5m2fnuz", "e4m3b11fnuz", "e8m0fnu"]
TORCH_FORMATS = [f for f in FORMATS if f != "e4m3b11fnuz"]
CUDA_MODES = [(fmt, mode) for fmt in ("e4m3", "e5m2") for mode in ("satfinite", "nosat")]
SEED = 20261130

CUDA_SOURCE = r"""
#include <cuda_fp8.h>
#include <cstdio>
#include <vector>

__global__ void convert(const double* x, unsigned char* out, long n, __nv_saturation_t sat,
                        __nv_fp8_interpretation_t kind) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = __nv_cvt_double_to_fp8(x[i], sat, kind);
}

// argv: in.bin (float64 array) out.bin (4 uint8 arrays: e4m3 satfinite, e4m3 nosat, e5m2 satfinite, e5m2 nosat)
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb");
  fseek(f, 0, SEEK_END);
  long n = ftell(f) / 8;
  fseek(f, 0, SEEK_SET);
  std::vector<double> x(n);
  if (fread(x.data(), 8, n, f) != (size_t)n) return 3;
  fclose(f);
  double* dx;
  unsigned char* dout;
  if (cudaMalloc(&dx, n * 8) != cudaSuccess || cudaMalloc(&dout, n) != cudaSuccess) return 4;
  cudaMemcpy(dx, x.data(), n * 8, cudaMemcpyHostToDevice);
  std::vector<unsigned char> out(n);
  FILE* g = fopen(argv[2], "wb");
  const __nv_fp8_interpretation_t kinds[] = {__NV_E4M3, __NV_E5M2};
  const __nv_saturation_t sats[] = {__NV_SATFINITE, __NV_NOSAT};
  for (auto kind : kinds)
    for (auto sat : sats) {
      convert<<<(n + 255) / 256, 256>>>(dx, dout, n, sat, kind);
      if (cudaDeviceSynchronize() != cudaSuccess) return 5;
      cudaMemcpy(out.data(), dout, n, cudaMemcpyDeviceToHost);
      fwrite(out.data(), 1, n, g);
    }
  fclose(g);
  return 0;
}
"""


def f64(bits):
    return np.array(bits, dtype=np.uint64).view(np.float64)


def f64_scalar(bits):
    return float(f64([bits])[0])


def ladder(ml_dtypes, fmt):
    """Non-negative finite values of the format, ascending, and the value one step past its max."""
    values = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, "float8_" + fmt)).astype(np.float64)
    pos = np.unique(values[np.isfinite(values) & (values >= 0)])
    past = pos[-1] * 2 if fmt == "e8m0fnu" else pos[-1] + (pos[-1] - pos[-2])
    return np.append(pos, past)


def near_midpoints(ml_dtypes):
    points = []
    for fmt in FORMATS:
        values = ladder(ml_dtypes, fmt)
        mids = (values[:-1] + values[1:]) / 2  # exact: neighbouring dyadic numbers
        m32 = mids.astype(np.float32)
        assert np.array_equal(m32.astype(np.float64), mids), fmt  # every fp8 midpoint is a float32
        up32 = np.nextafter(m32, np.float32(np.inf)).astype(np.float64)
        down32 = np.nextafter(m32, np.float32(0)).astype(np.float64)
        edges32 = [(mids + up32) / 2, (mids + down32) / 2]  # where a float32 cast stops giving mids
        around = [mids, up32, down32, mids * (1 + 2.0**-40), mids * (1 - 2.0**-40)]
        for e in [mids] + edges32:
            around += [e, np.nextafter(e, 0), np.nextafter(e, np.inf)]
        around += [values[1:], values[1:] / 2, values[1:] / 4, values[1:] * 0.75]  # the values, below the smallest
        points += around
    x = np.concatenate(points)
    return np.concatenate([x, -x])


def edges():
    tiny, f32 = np.finfo(np.float64), np.finfo(np.float32)
    x = [0.0, 5e-324, f64_scalar(0x000FFFFFFFFFFFFF), tiny.tiny, 2.0**-149, 2.0**-150, 2.0**-151, 2.0**-127, 2.0**-126,
         3 * 2.0**-128, float(f32.max), 2.0**128 - 2.0**103, 2.0**128, 1e300, tiny.max, np.inf]
    x = np.array(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        x = np.concatenate([x, np.nextafter(x, 0), np.nextafter(x, np.inf)])
    nan_bits = [0x7FF8000000000000, 0x7FFC000000000000, 0x7FF4000000000000, 0x7FF0000000000001, 0x7FFFFFFFFFFFFFFF,
                0x7FFA000000000000]
    nans = f64(nan_bits + [b | 0x8000000000000000 for b in nan_bits])
    return np.concatenate([x, -x, nans])


def random_inputs():
    rng = np.random.default_rng(SEED)
    exponents = rng.integers(-140, 130, size=8192)
    mantissas = rng.integers(0, 2**52, size=8192, dtype=np.uint64)
    magnitude = np.ldexp(1 + mantissas.astype(np.float64) / 2.0**52, exponents)  # exact: 53-bit significands
    signs = np.where(rng.integers(0, 2, size=8192) == 1, -1.0, 1.0)
    patterns = rng.integers(0, 2**64, size=2048, dtype=np.uint64).view(np.float64)
    return np.concatenate([signs * magnitude, patterns])


def inputs(ml_dtypes):
    with np.errstate(all="ignore"):
        x = np.concatenate([near_midpoints(ml_dtypes), edges(), random_inputs()])
    bits = np.unique(x.view(np.uint64))  # NaN payloads kept: compared as bits
    return bits.view(np.float64)


def cuda_fp8_header():
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return None, "nvcc not found"
    header = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "include", "cuda_fp8.hpp")
    if not os.path.exists(header):
        return None, f"{header} not found"
    text = open(header).read()
    digest = hashlib.sha256(text.encode()).hexdigest()
    start = text.find("__nv_cvt_double_to_fp8(const double x")
    body = text[start:text.find("\n}\n", start)] if start >= 0 else ""
    nan_lines = [line.strip() for line in body.splitlines() if re.search(r"NaN|0x7[EF]U|res \|= sign", line)]
    return header, f"`{header}` sha256 {digest}; in `__nv_cvt_double_to_fp8`: " + "; ".join(
        f"`{line}`" for line in nan_lines)


def cuda_intrinsic(x, out_dir):
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return "skipped: nvcc not found"
    with tempfile.TemporaryDirectory() as work:
        src, exe = os.path.join(work, "cvt.cu"), os.path.join(work, "cvt")
        open(src, "w").write(CUDA_SOURCE)
        built = subprocess.run([nvcc, "-O2", "-arch=native", src, "-o", exe], capture_output=True, text=True)
        if built.returncode != 0:
            return "skipped: nvcc failed: " + built.stderr.strip()[-400:]
        x.tofile(os.path.join(work, "in.bin"))
        ran = subprocess.run([exe, os.path.join(work, "in.bin"), os.path.join(work, "out.bin")])
        if ran.returncode != 0:
            return f"skipped: the device program exited {ran.returncode} (no usable GPU?)"
        out = np.fromfile(os.path.join(work, "out.bin"), dtype=np.uint8).reshape(len(CUDA_MODES), len(x))
    for (fmt, mode), codes in zip(CUDA_MODES, out):
        np.save(os.path.join(out_dir, f"cuda.{fmt}.{mode}.from_f64.npy"), codes)
    return "written"


def differences(a, b, x, limit=4):
    bad = np.nonzero(a != b)[0]
    examples = ", ".join(f"{x[i].hex()} ({x.view(np.uint64)[i]:#018x}): 0x{a[i]:02X} vs 0x{b[i]:02X}"
                         for i in bad[:limit])
    return len(bad), examples


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MQA_GOLDEN_F64_OUT", "golden-f64")
    os.makedirs(out_dir, exist_ok=True)
    import ml_dtypes
    import torch

    x = inputs(ml_dtypes)
    np.save(os.path.join(out_dir, "in_f64_bits.npy"), x.view(np.uint64))
    results, lines = {}, []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for fmt in FORMATS:
            dtype = getattr(ml_dtypes, "float8_" + fmt)
            results["ml_dtypes", fmt] = np.asarray(x, np.float64).astype(dtype).view(np.uint8)
            via32 = x.astype(np.float32).astype(dtype).view(np.uint8)
            n, ex = differences(results["ml_dtypes", fmt], via32, x)
            lines.append(f"- ml_dtypes {fmt}: float64 cast vs cast of float32(x): {n} differ {ex}")
    gpu = torch.cuda.is_available()
    for fmt in TORCH_FORMATS:
        dtype = getattr(torch, "float8_" + fmt)
        try:
            results["torch", fmt] = torch.from_numpy(x).to(dtype).view(torch.uint8).numpy()
            via32 = torch.from_numpy(x.astype(np.float32)).to(dtype).view(torch.uint8).numpy()
        except (RuntimeError, TypeError) as e:  # a cast this torch does not have: say so, write nothing
            lines.append(f"- torch CPU {fmt}: not written: {e}")
            continue
        n, ex = differences(results["torch", fmt], via32, x)
        lines.append(f"- torch CPU {fmt}: float64 cast vs cast of float32(x): {n} differ {ex}")
        if gpu:
            try:
                results["torch_cuda", fmt] = torch.from_numpy(x).cuda().to(dtype).view(torch.uint8).cpu().numpy()
                n, ex = differences(results["torch", fmt], results["torch_cuda", fmt], x)
                lines.append(f"- torch CPU vs CUDA {fmt}: {n} differ {ex}")
            except (RuntimeError, TypeError) as e:
                lines.append(f"- torch CUDA {fmt}: not written: {e}")
        n, ex = differences(results["ml_dtypes", fmt], results["torch", fmt], x)
        lines.append(f"- ml_dtypes vs torch CPU {fmt}: {n} differ {ex}")
    for (producer, fmt), codes in results.items():
        np.save(os.path.join(out_dir, f"{producer}.{fmt}.from_f64.npy"), codes)

    cuda_status = cuda_intrinsic(x, out_dir)
    _, header_note = cuda_fp8_header()
    nvcc_version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:] \
        if shutil.which("nvcc") else ["none"]
    with open(os.path.join(out_dir, "summary_f64.md"), "w") as f:
        f.write("# float64 -> fp8 golden vectors\n\n")
        f.write(f"- inputs: {len(x)} float64 values (generate_f64.py, seed {SEED})\n")
        f.write(f"- python {platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}, "
                f"torch {torch.__version__} (CUDA {torch.version.cuda}), GPU: "
                f"{torch.cuda.get_device_name(0) if gpu else 'none'}, nvcc: {nvcc_version[0]}\n")
        f.write(f"- __nv_cvt_double_to_fp8 on the device: {cuda_status}\n")
        f.write(f"- CUDA header: {header_note}\n\n## Differences\n\n" + "\n".join(lines) + "\n")
    print(open(os.path.join(out_dir, "summary_f64.md")).read())


if __name__ == "__main__":
    main()
