#!/usr/bin/env python3
"""mqa_mma_model_dots, the tool mmasim_crosscheck.py sets beside MMA-Sim, on dots whose results are
known without either model: a chain from 0 of exact products, the same chain from a C it adds to
exactly, and the all-zero step over a C below 2^-100 that reference/mma/README.md describes (our
model keeps C; MMA-Sim's alignment drops its last bit). Runs in every CI, where MMA-Sim is absent.

    known_dots.py MQA_MMA_MODEL_DOTS
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ONE, TWO = 0x40, 0x48  # e4m3fnuz (bias 8): 1.0 and 2.0; 0x40 is also e5m2fnuz's 1.0 (bias 16)


def run(tool, workdir, fa, fb, a, b, c=None):
    paths = [Path(workdir) / f"{n}.npy" for n in "abcd"]
    np.save(paths[0], np.asarray(a, np.uint8))
    np.save(paths[1], np.asarray(b, np.uint8))
    args = [tool, "gfx942-mfma", fa, fb, str(paths[0]), str(paths[1])]
    if c is not None:
        np.save(paths[2], np.asarray(c, np.uint32).view(np.float32))
        args.append(str(paths[2]))
    subprocess.run(args + [str(paths[3])], check=True)
    return np.load(paths[3]).view(np.uint32)


def main():
    tool = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as workdir:
        # 128 products of 1 x 2, four 32-product instructions chained from 0: exactly 256.
        d = run(tool, workdir, "e4m3fnuz", "e4m3fnuz", [[ONE] * 128], [[TWO] * 128])
        if d[0] != np.float32(256).view(np.uint32):
            failures.append(f"1 x 2 summed 128 times from 0: 0x{int(d[0]):08X}, expected 256.0 (0x43800000)")
        # One 16-product step from C = 0.5: 32.5 exactly.
        d = run(tool, workdir, "e4m3fnuz", "e4m3fnuz", [[ONE] * 16], [[TWO] * 16], [np.float32(0.5).view(np.uint32)])
        if d[0] != np.float32(32.5).view(np.uint32):
            failures.append(f"16 products of 2 from C = 0.5: 0x{int(d[0]):08X}, expected 32.5 (0x42020000)")
        # All products zero, C = 0x00800001 (just above 2^-126): our model keeps C bit for bit.
        d = run(tool, workdir, "e5m2fnuz", "e5m2fnuz", [[0x00] * 16], [[0x7F] * 16], [0x00800001])
        if d[0] != 0x00800001:
            failures.append(f"an all-zero step over C = 0x00800001 gave 0x{int(d[0]):08X}, expected C")
    for f in failures:
        print("FAIL:", f)
    print("known_dots:", "FAILED" if failures else "3 known dots right")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
