"""The host side of the `run --kernel` protocol, as small as a test needs: starts an adapter,
poisons ``out``, sends one request line (with an id) and reads one response line (with a timeout),
which must echo the id. Written
from the protocol's description (python/README.md), not from the package's serve()."""
from __future__ import annotations

import json
import selectors
import subprocess
from pathlib import Path
from typing import Any

import numpy as np

POISON_BITS = 0x7FC0DEAD


class Adapter:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=env)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)
        self.requests = 0

    def request(self, bundle: Path, out: Path, launch: int = 1, shape: tuple[int, int] | None = None,
                timeout: float = 60.0) -> dict[str, Any]:
        """Poisons ``out`` (float32 ``shape``; None: leaves ``out`` alone) and asks for one launch."""
        if shape is not None:
            np.save(out, np.full(shape, POISON_BITS, dtype=np.uint32).view(np.float32))
        self.requests += 1
        request_id = f"{self.requests}.{launch}"
        response = self.send(json.dumps({"id": request_id, "bundle": str(bundle), "out": str(out), "launch": launch}),
                             timeout)
        assert response.get("id") == request_id, f"the response does not echo the request's id {request_id!r}: {response}"
        return response

    def send(self, line: str, timeout: float = 60.0) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        if not self.selector.select(timeout):
            raise TimeoutError(f"no response within {timeout} s to {line}")
        response = self.process.stdout.readline()
        assert response.endswith("\n"), f"adapter closed stdout; stderr: {self.stderr()}"
        return json.loads(response)

    def close(self, timeout: float = 30.0) -> tuple[int, str, str]:
        """Closes stdin; returns (exit status, the rest of stdout, stderr)."""
        out, err = self.process.communicate(timeout=timeout)
        return self.process.returncode, out, err

    def stderr(self) -> str:
        self.process.kill()
        return self.process.communicate()[1]

    def __enter__(self) -> "Adapter":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
