"""AITER's Triton ``fp8_mqa_logits`` on an NVIDIA GPU: AITER's own wrapper and kernel, read from its
source folder, with the two things only an AMD GPU has supplied from outside:

- ``aiter.ops.triton.utils._triton.arch_info.get_arch()``, which asks ROCm for the gfx name: here it
  names no AMD architecture ("sm90"), so the wrapper takes its generic path (no FN->FNUZ recast,
  which it does only on gfx942; no Gluon kernel, which it has only for gfx950 and gfx1250);
- the launch options ``waves_per_eu`` and ``matrix_instr_nonkdim``, which Triton's AMD backend
  takes and its NVIDIA backend refuses: dropped at the launch (amd_only.py).

The kernel's code and the wrapper's (allocation, clean_logits, strides, tile sizes) are AITER's,
untouched. The source folder is AITER_SOURCE (default .external/aiter: its aiter/ops/triton/
attention/fp8_mqa_logits.py and _triton_kernels/attention/fp8_mqa_logits.py, ci/real_libraries.sh).

    python3 -m mqacheck.adapter --convention aiter --device cuda \\
        --function tests/gpu/real_libraries/aiter_shim.py:fp8_mqa_logits
"""
from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

from amd_only import NvidiaLaunch, load, package

SOURCE = Path(os.environ.get("AITER_SOURCE", Path(__file__).resolve().parents[3] / ".external" / "aiter"))


def _aiter_fp8_mqa_logits() -> Any:
    for name in ("aiter", "aiter.ops", "aiter.ops.triton", "aiter.ops.triton.utils", "aiter.ops.triton._triton_kernels",
                 "aiter.ops.triton._triton_kernels.attention", "aiter.ops.triton.attention"):
        package(name)
    arch_info = types.SimpleNamespace(get_arch=lambda: "sm90")
    sys.modules["aiter.ops.triton.utils._triton"] = types.SimpleNamespace(arch_info=arch_info)  # type: ignore[assignment]
    kernels = load("aiter.ops.triton._triton_kernels.attention.fp8_mqa_logits",
                   SOURCE / "aiter/ops/triton/_triton_kernels/attention/fp8_mqa_logits.py", SOURCE)
    kernels._fp8_mqa_logits_kernel = NvidiaLaunch(kernels._fp8_mqa_logits_kernel)
    wrapper = load("aiter.ops.triton.attention.fp8_mqa_logits", SOURCE / "aiter/ops/triton/attention/fp8_mqa_logits.py",
                   SOURCE)
    return wrapper.fp8_mqa_logits


fp8_mqa_logits = _aiter_fp8_mqa_logits()
