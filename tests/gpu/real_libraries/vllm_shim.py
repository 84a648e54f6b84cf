"""vLLM's ``fp8_mqa_logits_gfx942`` on an NVIDIA GPU: vLLM's own wrapper and kernel, read from its
source folder, with what only an AMD GPU or an installed vLLM has supplied from outside:

- ``vllm.triton_utils``, through which vLLM imports Triton: here Triton itself;
- the launch options ``waves_per_eu`` and ``matrix_instr_nonkdim``, which Triton's AMD backend
  takes and its NVIDIA backend refuses: dropped at the launch (amd_only.py).

The kernel's code and the wrapper's (the -inf fill, the tile choice for gfx942's 64 KiB of LDS,
strides) are vLLM's, untouched. The source folder is VLLM_SOURCE (default .external/vllm: its
vllm/v1/attention/ops/triton_fp8_mqa_logits.py, ci/real_libraries.sh).

    python3 -m mqacheck.adapter --convention vllm --device cuda \\
        --function tests/gpu/real_libraries/vllm_shim.py:fp8_mqa_logits_gfx942
"""
from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from amd_only import NvidiaLaunch, load, package

SOURCE = Path(os.environ.get("VLLM_SOURCE", Path(__file__).resolve().parents[3] / ".external" / "vllm"))


def _vllm_fp8_mqa_logits_gfx942() -> Any:
    for name in ("vllm", "vllm.v1", "vllm.v1.attention", "vllm.v1.attention.ops"):
        package(name)
    sys.modules["vllm.triton_utils"] = types.SimpleNamespace(tl=tl, triton=triton)  # type: ignore[assignment]
    module = load("vllm.v1.attention.ops.triton_fp8_mqa_logits",
                  SOURCE / "vllm/v1/attention/ops/triton_fp8_mqa_logits.py", SOURCE)
    module._fp8_mqa_logits_kernel = NvidiaLaunch(module._fp8_mqa_logits_kernel)
    return module.fp8_mqa_logits_gfx942


fp8_mqa_logits_gfx942 = _vllm_fp8_mqa_logits_gfx942()
