"""check(bundle, logits, **contract): `mqacheck check` from Python, the judgement as objects.

    j = mqacheck.check("/tmp/b", logits, accumulate="fp32")
    assert j.passed, j.message()

Contract keywords become the command's flags as they are (mqacheck.contract). Exit status 2 (bad
input: a bundle that was modified, logits of the wrong shape, a contract word mqacheck does not
know) raises MqacheckInputError with mqacheck's own message.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .binary import find_binary
from .bundle import Bundle
from .contract import contract_flags
from .judgement import Judgement
from .tensors import logits_to_numpy


class MqacheckError(RuntimeError):
    """mqacheck ended in a way the protocol of `check` does not have (a crash, a signal)."""


class MqacheckInputError(MqacheckError, ValueError):
    """mqacheck refused its input (exit status 2); the message is mqacheck's."""


def check(bundle: Bundle | str | os.PathLike[str], logits: Any, *, repeat: Any = None, binary: str | None = None,
          threads: int | None = None, trust_digest: bool = False, **contract: Any) -> Judgement:
    """Judges ``logits`` (float32 [m, n] or [m, s >= n]; NumPy or torch, moved to the host) against
    the bundle under the declared contract. ``repeat``: the same kernel's second launch, judged for
    determinism (bit for bit). ``trust_digest``: the bundle is one you generated yourself, so its
    digest.json may stand for the reference instead of recomputing it (``--trust-digest``: an
    unkeyed digest catches accidents, not a forger)."""
    exe = find_binary(binary)
    folder = str(bundle.path if isinstance(bundle, Bundle) else bundle)
    with tempfile.TemporaryDirectory(prefix="mqacheck-check-") as tmp:
        args = [exe, "check", folder, "--logits", _saved(logits, Path(tmp) / "logits.npy", "logits"),
                "--json", str(Path(tmp) / "judgement.json")]
        if repeat is not None:
            args += ["--repeat", _saved(repeat, Path(tmp) / "repeat.npy", "repeat")]
        if threads is not None:
            args += ["--threads", str(threads)]
        if trust_digest:
            args.append("--trust-digest")
        args += contract_flags(**contract)
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode == 2:
            raise MqacheckInputError(_message(done) or "mqacheck check refused its input (exit status 2)")
        if done.returncode not in (0, 1):
            raise MqacheckError(f"mqacheck check ended with status {done.returncode}: {_message(done)}")
        try:
            with open(Path(tmp) / "judgement.json", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise MqacheckError(f"mqacheck check wrote no readable judgement ({e}): {_message(done)}") from None
    return Judgement.from_json(doc)


def _saved(logits: Any, path: Path, what: str) -> str:
    np.save(path, np.ascontiguousarray(logits_to_numpy(logits, what)), allow_pickle=False)
    return str(path)


def _message(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or "").strip() or (done.stdout or "").strip()
    return text.removeprefix("mqacheck: ")
