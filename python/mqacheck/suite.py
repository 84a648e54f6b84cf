"""A suite file's cases, and their bundles made by `mqacheck gen`."""
from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

from .binary import find_binary


class SuiteError(ValueError):
    """A suite that cannot be read, or a case mqacheck cannot generate; the message names the file."""


def read_toml(file: str | os.PathLike[str], error: type[Exception], missing: str) -> dict:
    """The TOML document in ``file``; ``error`` naming the file where it is ``missing`` (the words
    given) or not valid TOML."""
    try:
        with open(file, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise error(f"{file}: {missing}") from None
    except IsADirectoryError:
        raise error(f"{file}: a folder, not a suite file (accepted: a TOML file, cases/README.md)") from None
    except OSError as e:
        raise error(f"{file}: cannot be read ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise error(f"{file}: not UTF-8 text (byte {e.start}), so not TOML") from None
    except tomllib.TOMLDecodeError as e:
        raise error(f"{file}: not valid TOML: {e}") from None


def case_names(suite: str | os.PathLike[str], operation: str | None = None) -> list[str]:
    """The names of the suite's [[case]] tables, in file order (mqacheck validates the rest when
    it generates a bundle); with ``operation`` ("prefill" or "paged"), those of that operation
    only (a paged case is one whose layout, its own or [defaults]', has kind "paged")."""
    doc = read_toml(suite, SuiteError, "no such suite file")
    cases = doc.get("case")
    if not isinstance(cases, list) or not cases:
        raise SuiteError(f"{suite}: no [[case]] tables (cases/README.md)")
    names = [c.get("name") for c in cases if isinstance(c, dict)]
    if not all(isinstance(n, str) and n for n in names) or len(names) != len(cases):
        raise SuiteError(f"{suite}: every [[case]] needs a name")
    if operation is None:
        return names
    if operation not in ("prefill", "paged"):
        raise ValueError(f"operation '{operation}' is not known (accepted: prefill, paged)")
    defaults = doc.get("defaults", {}).get("layout", {}) if isinstance(doc.get("defaults"), dict) else {}

    def kind(case: dict) -> str:
        layout = case.get("layout", defaults)
        return "paged" if isinstance(layout, dict) and layout.get("kind") == "paged" else "prefill"

    return [n for n, c in zip(names, cases) if kind(c) == operation]


def generate_bundle(suite: str | os.PathLike[str], case: str, out: str | os.PathLike[str],
                    binary: str | None = None) -> Path:
    """Writes the case's bundle to ``out`` (which must not exist) with `mqacheck gen`."""
    done = subprocess.run([find_binary(binary), "gen", "--cases", str(suite), "--case", case, "--out", str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().removeprefix("mqacheck: ")
        raise SuiteError(f"mqacheck gen {case} from {suite}: {message}")
    return Path(out)
