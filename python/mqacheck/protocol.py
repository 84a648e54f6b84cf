"""The JSON-lines protocol of `mqacheck run --kernel` (python/README.md, "The protocol").

mqacheck writes one request per line on the adapter's stdin and waits for one response line on
its stdout before it sends the next:

    request   {"id": "3.1", "bundle": "<bundle folder>", "out": "<path of a float32 .npy>", "launch": 1}
              an indexer's also "topk_out": "<path of an int64 .npy to write>", "topk": 2048
    response  {"id": "3.1", "ok": true, "seconds": 0.0012, "label": "my-kernel 1.2"}     seconds, label optional
              {"id": "3.1", "ok": false, "error": "ValueError: head_dim 96 is not a power of two"}
              {"id": "3.1", "ok": false, "unsupported": "128 heads: DeepGEMM on sm90 takes 32 or 64"}

Every response echoes its request's ``id``: mqacheck refuses an answer carrying another (one
arriving late, for an earlier request).

Before each request mqacheck writes ``out`` filled with POISON (float32 [m, n] or [m, s >= n]).
With ``run --kernel --topk-indices`` each request also names ``topk_out``: the adapter writes there
each row's ``topk`` selected keys, int64 [m, topk], -1 padding windows shorter than topk.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# mqacheck's poison: a quiet NaN whose payload no arithmetic produces, so an element that still
# holds it was never written (the `unwritten` finding).
POISON_BITS = 0x7FC0DEAD
POISON = np.array(POISON_BITS, dtype=np.uint32).view(np.float32)[()]


class Unsupported(Exception):
    """Raised by a kernel for a case it does not take (a head count, a format it has no code for):
    serve() answers {"ok": false, "unsupported": str(e)} and mqacheck skips the case with that reason
    instead of counting an error. Raise it before running anything: launch 2 of a case whose launch 1
    ran may not be refused (mqacheck makes that the case's error)."""


class ProtocolError(ValueError):
    """A request line that is not what the protocol says; ``request_id`` is its id where it has
    one, so that even the refusal can be answered to the request it is about."""

    def __init__(self, message: str, request_id: str | None = None) -> None:
        super().__init__(message)
        self.request_id = request_id


@dataclass(frozen=True)
class Request:
    bundle: str
    out: str
    launch: int
    id: str | None = None  # None: a host that sends no id (the response then carries none)
    topk_out: str | None = None  # an indexer's: where its indices go
    topk: int | None = None  # and their k


def parse_request(line: str) -> Request:
    """One request line; unknown keys are ignored so that mqacheck may add some."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as e:
        raise ProtocolError(f"request is not JSON ({e.msg} at column {e.colno}): {line[:200]!r}") from None
    except (ValueError, RecursionError) as e:  # an integer of thousands of digits, arrays nested past the stack
        raise ProtocolError(f"request is not JSON this adapter reads ({type(e).__name__}: {str(e)[:200]}): "
                            f"{line[:200]!r}") from None
    if not isinstance(doc, dict):
        raise ProtocolError(f"request is not a JSON object: {line[:200]!r}")
    request_id = doc.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise ProtocolError(f"request's \"id\" is {request_id!r}; a string is expected")
    for key, kind in (("bundle", str), ("out", str)):
        if not isinstance(doc.get(key), kind) or not doc[key]:
            raise ProtocolError(f"request lacks \"{key}\" (a path): {line[:200]!r}", request_id)
    launch = doc.get("launch", 1)
    if not isinstance(launch, int) or isinstance(launch, bool) or launch < 1:
        raise ProtocolError(f"request's \"launch\" is {launch!r}; a positive integer is expected", request_id)
    topk_out, topk = doc.get("topk_out"), doc.get("topk")
    if topk_out is not None and (not isinstance(topk_out, str) or not topk_out or not isinstance(topk, int)
                                 or isinstance(topk, bool) or topk < 1):
        raise ProtocolError(f"request's \"topk_out\" needs a path and \"topk\" a positive integer: {line[:200]!r}",
                            request_id)
    return Request(doc["bundle"], doc["out"], launch, request_id, topk_out, topk if topk_out is not None else None)


# A response's "label": what mqacheck takes (kernels/external/protocol.hpp: 1 to 200 bytes of UTF-8,
# no control characters); an answer with another breaks the protocol.
MAX_LABEL_BYTES = 200


def label_problem(label: str) -> str:
    """Why mqacheck would refuse ``label``, or "" where it takes it."""
    try:
        data = label.encode("utf-8")
    except UnicodeEncodeError:
        return "it holds a character that is not text (a byte of a path that is not UTF-8)"
    if not 1 <= len(data) <= MAX_LABEL_BYTES:
        return f"a label is 1 to {MAX_LABEL_BYTES} bytes of UTF-8, this one {len(data)}"
    if any(b < 0x20 or b == 0x7F for b in data):
        return "a label holds no control characters (a newline, a tab, ...)"
    return ""


def fitted_label(text: str) -> str:
    """``text`` (a default label made of a command line's words) as a label mqacheck takes: control
    characters and what is not text dropped, and past 200 bytes its last bytes after "..." (a
    path's end names the function)."""
    kept = "".join(c for c in text if ord(c) >= 0x20 and ord(c) != 0x7F and not 0xD800 <= ord(c) <= 0xDFFF) or "kernel"
    data = kept.encode("utf-8")
    if len(data) <= MAX_LABEL_BYTES:
        return kept
    return "..." + data[len(data) - (MAX_LABEL_BYTES - 3):].decode("utf-8", "ignore")


def _with_id(request_id: str | None, doc: dict[str, Any]) -> dict[str, Any]:
    return doc if request_id is None else {"id": request_id, **doc}


def ok_response(request_id: str | None, seconds: float | None = None, label: str | None = None) -> str:
    """The answer to the request ``request_id`` (Request.id): ``out`` holds the logits."""
    doc: dict[str, Any] = {"ok": True}
    if seconds is not None and math.isfinite(seconds):
        doc["seconds"] = seconds
    if label:
        doc["label"] = label
    return json.dumps(_with_id(request_id, doc))


def error_response(request_id: str | None, message: str) -> str:
    """The answer to the request ``request_id``: it could not be run, and why."""
    return json.dumps(_with_id(request_id, {"ok": False, "error": message}))


def unsupported_response(request_id: str | None, reason: str) -> str:
    """The answer to the request ``request_id``: the kernel does not take its case, and why."""
    return json.dumps(_with_id(request_id, {"ok": False, "unsupported": reason or "(no reason given)"}))
