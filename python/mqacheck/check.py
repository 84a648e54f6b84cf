"""check(bundle, logits, **contract): `mqacheck check` from Python, the judgement as objects.

    j = mqacheck.check("/tmp/b", logits, accumulate="fp32")
    assert j.passed, j.message()

Contract keywords become the command's flags as they are (mqacheck.contract). Bad input (a bundle
that was modified, logits of the wrong shape, a contract word mqacheck does not know: `check`'s exit
status 2) raises MqacheckInputError with mqacheck's own message.

The judge runs in this process where mqacheck._core is found (mqacheck.core: the logits are read
where they lie, the bundle opened once), else as `mqacheck check` in a second process through .npy
files; both give the same judgement. A float32 tensor on a GPU (and its repeat on the same GPU) is
judged on its device where the extension has the GPU path (api::judge_device_output: by the device
comparator where it sees no finding, else copied to the host and judged there); any other tensor is
copied to the host.
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
from .core import CoreNotFound, load_core, opened_bundle
from .judgement import Judgement
from .tensors import bfloat16_bits, is_tensor, logits_for_file


# The largest thread count the judge takes (an unsigned 32-bit count, as the binary's --threads).
MAX_THREADS = 2**32 - 1


def threads_problem(threads: int) -> str:
    """What is wrong with a judge's thread count, or "" (0: every core)."""
    return "" if 0 <= threads <= MAX_THREADS else f"expected 0 (every core) to {MAX_THREADS}"


class MqacheckError(RuntimeError):
    """mqacheck ended in a way the protocol of `check` does not have (a crash, a signal)."""


class MqacheckInputError(MqacheckError, ValueError):
    """mqacheck refused its input (exit status 2); the message is mqacheck's."""


def check(bundle: Bundle | str | os.PathLike[str], logits: Any, *, repeat: Any = None, binary: str | None = None,
          threads: int | None = None, trust_digest: bool = False, in_process: bool | None = None,
          topk_indices: Any = None, topk_columns: str = "absolute", topk_sorted: bool = False,
          **contract: Any) -> Judgement:
    """Judges ``logits`` (float32 [m, n] or [m, s >= n]; NumPy or torch, moved to the host) against
    the bundle under the declared contract. ``repeat``: the same kernel's second launch, judged for
    determinism (bit for bit). ``trust_digest``: the bundle is one you generated yourself, so its
    digest.json may stand for the reference instead of recomputing it (``--trust-digest``: an
    unkeyed digest catches accidents, not a forger). ``in_process``: None judges in this process
    where mqacheck._core is found, True insists on it (CoreNotFound otherwise), False runs the
    binary. ``topk_indices``: a top-k kernel's int32/int64 [m, k] indices of these logits (-1 padding),
    judged beside them (``--topk-indices``; ``topk_columns`` "absolute" or "relative" to ks,
    ``topk_sorted`` where descending order is promised); they are judged through the binary."""
    folder = str(bundle.path if isinstance(bundle, Bundle) else bundle)
    if threads is not None and (problem := threads_problem(threads)):  # both judges refuse it; in one wording
        raise MqacheckInputError(f"threads={threads}: {problem}")
    if topk_indices is not None and in_process:
        raise ValueError("top-k indices are judged through the binary: leave in_process unset or False")
    core = None if in_process is False or topk_indices is not None else load_core(binary)
    if in_process and core is None:
        raise CoreNotFound("in_process=True, and no mqacheck._core was found (build it with the binary: it lands "
                           "in <build>/python/mqacheck/; or set MQACHECK_CORE to its path)")
    if core is not None:
        return _judged_in_process(core, folder, logits, repeat, threads, trust_digest, contract)
    exe = find_binary(binary)
    bf16 = _bfloat16_logits(contract)
    with tempfile.TemporaryDirectory(prefix="mqacheck-check-") as tmp:
        args = [exe, "check", folder, "--logits", _saved(logits, Path(tmp) / "logits.npy", "logits", bf16),
                "--json", str(Path(tmp) / "judgement.json")]
        if repeat is not None:
            args += ["--repeat", _saved(repeat, Path(tmp) / "repeat.npy", "repeat", bf16)]
        if threads is not None:
            args += ["--threads", str(threads)]
        if trust_digest:
            args.append("--trust-digest")
        if topk_indices is not None:
            indices_path = Path(tmp) / "topk_indices.npy"
            np.save(indices_path, _host_array(topk_indices), allow_pickle=False)
            args += ["--topk-indices", str(indices_path), "--topk-columns", topk_columns]
            if topk_sorted:
                args.append("--topk-sorted")
        args += contract_flags(**contract)
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode == 2:
            # The files are this call's temporaries: the message names the argument that held them.
            message = _message(done)
            for name in ("topk_indices", "logits", "repeat"):
                message = message.replace(str(Path(tmp) / f"{name}.npy"), name)
            raise MqacheckInputError(message or "mqacheck check refused its input (exit status 2)")
        if done.returncode not in (0, 1):
            raise MqacheckError(f"mqacheck check ended with status {done.returncode}: {_message(done)}")
        try:
            with open(Path(tmp) / "judgement.json", encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise MqacheckError(f"mqacheck check wrote no readable judgement ({e}): {_message(done)}") from None
    return Judgement.from_json(doc)


def _judged_in_process(core: Any, folder: str, logits: Any, repeat: Any, threads: int | None, trust_digest: bool,
                       contract: dict[str, Any]) -> Judgement:
    try:
        opened = opened_bundle(core, folder, contract_flags(**contract), "trust" if trust_digest else "verify")
        bf16 = _bfloat16_logits(contract)
        on_gpu = getattr(core, "gpu", False) and not bf16 and _judged_on_gpu(logits, repeat)
        text = opened.judge(_in_memory(logits, "logits", bf16, on_gpu),
                            None if repeat is None else _in_memory(repeat, "repeat", bf16, on_gpu),
                            diagnose=True, threads=threads or 0)
    except core.InputError as e:
        raise MqacheckInputError(str(e)) from None
    return Judgement.from_json(json.loads(text))


def _judged_on_gpu(logits: Any, repeat: Any) -> bool:
    """The logits are a float32 tensor on a GPU, and the repeat (where there is one) another on the
    same GPU: the extension judges them there. Anything else goes to the host."""
    def on_gpu(x: Any) -> bool:
        return is_tensor(x) and x.device.type == "cuda" and str(x.dtype) == "torch.float32"
    return on_gpu(logits) and (repeat is None or (on_gpu(repeat) and repeat.device == logits.device))


def _bfloat16_logits(contract: dict[str, Any]) -> bool:
    """The contract declares bfloat16 logits (logits_dtype="bf16", `--logits-dtype bf16`)."""
    return str(contract.get("logits_dtype", "")) == "bf16"


def _in_memory(x: Any, what: str, bf16: bool, on_gpu: bool = False) -> Any:
    """x as the extension reads it (adjacent columns, any row stride), with the values the binary's
    path would save (logits_for_file): a float32 host array or tensor in the machine's byte order
    as it is (a float32 tensor on a GPU left there where ``on_gpu``: the extension judges it on its
    device), under logits_dtype="bf16" the bfloat16 bits (bfloat16_bits); anything else converted
    as that path converts it."""
    if bf16:
        x = bfloat16_bits(x, what)
    elif is_tensor(x) and str(x.dtype) == "torch.float32":
        x = x.detach() if x.device.type == "cpu" or (on_gpu and x.device.type == "cuda") else x.detach().cpu()
    elif not (isinstance(x, np.ndarray) and x.dtype == np.float32 and x.dtype.isnative):
        return logits_for_file(x, what)
    # Rows that overlap, repeat or run backwards (a row stride below the row's width: expand(),
    # broadcast_to, [::-1]) are copied, as the binary's .npy file would hold them.
    if is_tensor(x):
        if x.dim() != 2 or (x.stride(1) == 1 and (x.size(0) <= 1 or x.stride(0) >= x.size(1))):
            return x
        return x.new_empty(x.shape).copy_(x)  # strides of its own (contiguous() keeps a single row's)
    if x.ndim != 2 or (x.strides[1] == x.itemsize and (x.shape[0] <= 1 or x.strides[0] >= x.shape[1] * x.itemsize)):
        return x
    return np.ascontiguousarray(x)


def _saved(logits: Any, path: Path, what: str, bf16: bool) -> str:
    np.save(path, logits_for_file(logits, what, bf16), allow_pickle=False)
    return str(path)


def _message(done: subprocess.CompletedProcess[str]) -> str:
    text = (done.stderr or "").strip() or (done.stdout or "").strip()
    return text.removeprefix("mqacheck: ")


def _host_array(x: Any) -> np.ndarray:
    """Indices as saved for --topk-indices: a tensor moved to the host, its dtype kept (mqacheck
    refuses all but int32 and int64, naming the file)."""
    return x.detach().cpu().numpy() if is_tensor(x) else np.asarray(x)
