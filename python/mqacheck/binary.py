"""Where the mqacheck binary is: the one rule every part of the package uses."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


class BinaryNotFound(RuntimeError):
    """Neither MQACHECK nor PATH leads to an mqacheck executable."""


def find_binary(explicit: str | os.PathLike[str] | None = None) -> str:
    """``explicit``, else the MQACHECK environment variable, else `mqacheck` on PATH."""
    for source, candidate in (("the binary argument", explicit), ("MQACHECK", os.environ.get("MQACHECK"))):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            raise BinaryNotFound(f"{source} names {str(candidate)!r}, which is not an executable file "
                                 "(build it: cmake --build build --target mqacheck)")
    found = shutil.which("mqacheck")
    if found is None:
        raise BinaryNotFound("mqacheck is not on PATH and MQACHECK is not set: set MQACHECK=/path/to/build/mqacheck "
                             "(build it: cmake --build build --target mqacheck)")
    return found
