"""A suite file's cases, and their bundles made by `mqacheck gen`."""
from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

from .binary import find_binary


class SuiteError(ValueError):
    """A suite that cannot be read, or a case mqacheck cannot generate; the message names the file."""


def case_names(suite: str | os.PathLike[str]) -> list[str]:
    """The names of the suite's [[case]] tables, in file order (mqacheck validates the rest when
    it generates a bundle)."""
    try:
        with open(suite, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise SuiteError(f"{suite}: no such suite file") from None
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{suite}: not valid TOML: {e}") from None
    cases = doc.get("case")
    if not isinstance(cases, list) or not cases:
        raise SuiteError(f"{suite}: no [[case]] tables (cases/README.md)")
    names = [c.get("name") for c in cases if isinstance(c, dict)]
    if not all(isinstance(n, str) and n for n in names) or len(names) != len(cases):
        raise SuiteError(f"{suite}: every [[case]] needs a name")
    return names


def generate_bundle(suite: str | os.PathLike[str], case: str, out: str | os.PathLike[str],
                    binary: str | None = None) -> Path:
    """Writes the case's bundle to ``out`` (which must not exist) with `mqacheck gen`."""
    done = subprocess.run([find_binary(binary), "gen", "--cases", str(suite), "--case", case, "--out", str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().removeprefix("mqacheck: ")
        raise SuiteError(f"mqacheck gen {case} from {suite}: {message}")
    return Path(out)
