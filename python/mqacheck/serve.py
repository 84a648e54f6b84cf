"""serve(fn): a kernel function as the adapter process of `mqacheck run --kernel 'COMMAND'`.

    # my_adapter.py
    import mqacheck
    def my_kernel(bundle):                      # or my_kernel(bundle, out), see mqacheck.launch
        return run_my_kernel(bundle.q, bundle.k, bundle.k_scale, bundle.weights, bundle.ks, bundle.ke)
    mqacheck.serve(my_kernel, label="my-kernel 1.0", device="cuda")

    mqacheck run --cases cases/quick.toml --kernel 'python3 my_adapter.py' --accumulate fp32

Stdout is the protocol channel: while serving, file descriptor 1 and sys.stdout point at stderr,
so nothing the kernel, torch or Triton prints (from Python or from C) can corrupt a response.
"""
from __future__ import annotations

import os
import sys
import traceback
from contextlib import ExitStack, contextmanager, redirect_stdout
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

import numpy as np

from .bundle import Bundle, load_inputs
from .launch import KernelFn, launch, writes_in_place
from .npyfile import read_header, save_atomic
from .protocol import (ProtocolError, Request, Unsupported, error_response, label_problem, ok_response, parse_request,
                       unsupported_response)


TopkFn = Callable[[Bundle, np.ndarray, int], np.ndarray]


def serve(fn: KernelFn, *, label: str | None = None, device: Any = None, in_place: bool | None = None,
          topk: TopkFn | None = None, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Answers requests until stdin closes; returns 0 (the process's exit status).

    ``device``: None gives the kernel NumPy bundles, "cuda" (or any torch device) torch tensors.
    ``in_place``: force fn(bundle, out) (True) or fn(bundle) (False); default: from the signature.
    ``topk``: an indexer's second stage, topk(bundle, logits, k) -> int64 [m, k] indices: run on the
    kernel's logits when a request asks for them ("topk_out", ``run --kernel --topk-indices``); the
    top-k conventions (mqacheck.conventions.topk) make one from a library's function.
    ``stdin``/``stdout``: the protocol streams (default: the process's, with stdout guarded).
    Any exception of the kernel becomes {"ok": false, "error": "Type: message"} for that request
    (its traceback goes to stderr); the process stays up for the next request. ``Unsupported("why")``
    becomes {"ok": false, "unsupported": "why"}: mqacheck skips the case with that reason.
    A ``label`` mqacheck would refuse (protocol.label_problem) is a ValueError here, before any
    request.
    """
    if label is not None and (problem := label_problem(label)):
        raise ValueError(f"label {label!r}: {problem} (mqacheck refuses every answer that carries it)")
    if in_place is None:
        in_place = writes_in_place(fn)
    server = _Server(fn, label, device, in_place, topk)
    with ExitStack() as stack:
        if stdout is None:
            stdout = stack.enter_context(_guarded_stdout())
        stack.enter_context(redirect_stdout(sys.stderr))
        for line in stdin if stdin is not None else sys.stdin:
            if not line.strip():
                continue
            stdout.write(server.answer(line) + "\n")
            stdout.flush()
    return 0


class _Server:
    def __init__(self, fn: KernelFn, label: str | None, device: Any, in_place: bool, topk: TopkFn | None) -> None:
        self.fn, self.label, self.device, self.in_place, self.topk = fn, label, device, in_place, topk
        self.cached: tuple[tuple[Any, ...], Bundle] | None = None  # launch 1 and 2 of a case share it

    def answer(self, line: str) -> str:
        try:
            request = parse_request(line)
        except ProtocolError as e:
            return error_response(e.request_id, f"bad request: {e}")
        try:
            bundle = self.bundle(request.bundle)
            out = self.poisoned_output(request) if self.in_place else None
            result = launch(self.fn, bundle, out=out, in_place=self.in_place)
            if request.topk_out is not None:
                if self.topk is None:
                    raise ValueError("mqacheck asks for top-k indices (run --kernel --topk-indices) but this adapter "
                                     "serves no top-k function (python3 -m mqacheck.adapter --topk-convention ...)")
                indices = np.asarray(self.topk(bundle, result.logits, request.topk), dtype=np.int64)
                save_atomic(request.topk_out, indices)
            save_atomic(request.out, result.logits)
            return ok_response(request.id, result.seconds, self.label)
        except Unsupported as e:  # not the kernel's case: skipped, no traceback
            return unsupported_response(request.id, str(e))
        except Exception as e:  # the kernel's failure is this request's answer, not the adapter's end
            traceback.print_exc(file=sys.stderr)
            return error_response(request.id, f"{type(e).__name__}: {e}")

    def bundle(self, path: str) -> Bundle:
        key = _identity(Path(path))
        if self.cached is None or self.cached[0] != key:
            self.cached = None  # never hold two cases' tensors at once
            self.cached = (key, load_inputs(path, self.device))
        return self.cached[1]

    @staticmethod
    def poisoned_output(request: Request) -> np.ndarray | None:
        """mqacheck's poisoned buffer from ``out``; None (poison [m, n] made here) where it is absent."""
        try:
            dtype, shape = read_header(request.out)  # what it holds, before reading it
        except FileNotFoundError:
            return None
        if dtype != np.float32 or len(shape) != 2:
            raise ValueError(f"{request.out}: the poisoned output is {dtype} {list(shape)}; float32 [m, s] was expected")
        return np.load(request.out, allow_pickle=False)


def _identity(path: Path) -> tuple[Any, ...]:
    """What changes when a bundle folder is replaced (mqacheck writes bundles by renaming a whole
    folder), so a path reused for the next case never serves the last one's inputs."""
    folder, case = path.stat(), (path / "case.toml").stat()
    return (str(path.resolve()), folder.st_ino, folder.st_mtime_ns, case.st_ino, case.st_mtime_ns, case.st_size)


@contextmanager
def _guarded_stdout() -> Iterator[TextIO]:
    """A private copy of file descriptor 1 for protocol lines; fd 1 itself now writes to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    saved_fd = os.dup(1)
    os.dup2(2, 1)
    try:
        with os.fdopen(protocol_fd, "w", buffering=1, encoding="utf-8") as protocol:
            yield protocol
    finally:
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
