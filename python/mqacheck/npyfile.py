""".npy files written whole or not at all, and headers read without the data."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np


def save_atomic(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Writes ``array`` to ``path`` through a temporary sibling renamed over it at the end, so a
    reader never sees half a file and a failure (or Ctrl-C) leaves the old file, or none."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array, allow_pickle=False)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def read_header(path: str | os.PathLike[str]) -> tuple[np.dtype, tuple[int, ...]]:
    """(dtype, shape) of an .npy file, reading only its header."""
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
        if version not in readers:
            raise ValueError(f"{path}: .npy format version {version[0]}.{version[1]} (1.0 or 2.0 expected)")
        shape, _, dtype = readers[version](f)
    return np.dtype(dtype), tuple(shape)
