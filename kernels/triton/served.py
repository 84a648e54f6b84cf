"""Our Triton kernel as kernel functions for mqacheck's serve(): fn(bundle, out), writing into
mqacheck's poisoned output in place, so a tile the kernel never stores is found (`unwritten`).

    mqacheck run --cases cases/nightly.toml --accumulate sm90-wgmma --relu fmax \\
        --kernel 'python3 -m mqacheck.adapter --device cuda --function kernels/triton/served.py:correct'

    correct              the kernel
    inclusive_end        planted bug: ke read as inclusive (BUGCLASSES 11) -> mask-shift
    tail_tile_dropped    planted bug: grid of n // BLOCK_N tiles, the partial last tile is never
                         stored (BUGCLASSES 16) -> unwritten, wherever n % 128 != 0
"""
from __future__ import annotations

from typing import Any

from mqa_logits import fp8_mqa_logits  # kernels/triton/ is on sys.path when mqacheck loads this file

# Hopper's fp8 MMA (wgmma) takes e4m3fn and e5m2; other formats are refused, not converted.
FORMATS = ("e4m3fn", "e5m2")


def correct(bundle: Any, out: Any) -> None:
    _launch(bundle, out, None)


def inclusive_end(bundle: Any, out: Any) -> None:
    _launch(bundle, out, "inclusive-end")


def tail_tile_dropped(bundle: Any, out: Any) -> None:
    _launch(bundle, out, "tail-tile-dropped")


def _launch(bundle: Any, out: Any, bug: str | None) -> None:
    if bundle.device is None or bundle.device.type != "cuda":
        raise RuntimeError("our Triton kernel runs on a CUDA device: serve it with --device cuda")
    for which, fmt in (("q", bundle.q_format.name), ("k", bundle.k_format.name)):
        if fmt not in FORMATS:
            raise ValueError(f"{which} is {fmt}: our Triton kernel consumes {' and '.join(FORMATS)} (Hopper's fp8 MMA)")
    fp8_mqa_logits(bundle.q, bundle.k, bundle.k_scale, bundle.weights, bundle.ks, bundle.ke,
                   clean_logits=bundle.clean_logits, out=out, bug=bug)
