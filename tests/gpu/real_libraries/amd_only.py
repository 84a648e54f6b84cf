"""What AMD-only Triton code needs to run on an NVIDIA GPU, shared by the shims of AITER's and vLLM's
kernels: their launch options that only Triton's AMD backend takes, dropped at the launch, and
loading a library's files as the modules they are without installing the library.
"""
from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

# Triton's AMD backend takes these launch options and its NVIDIA backend refuses them.
AMD_ONLY_LAUNCH_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim")


class NvidiaLaunch:
    """kernel[grid](...) as the library writes it, less the AMD backend's launch options."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def __getitem__(self, grid: Any) -> Any:
        launch = self.kernel[grid]
        return lambda *args, **kwargs: launch(*args, **{k: v for k, v in kwargs.items()
                                                        if k not in AMD_ONLY_LAUNCH_OPTIONS})


def package(name: str) -> types.ModuleType:
    """An (empty) package registered under NAME, so that submodules can be registered under it."""
    module = sys.modules.get(name) or types.ModuleType(name)
    module.__path__ = []
    sys.modules[name] = module
    return module


def load(name: str, path: Path, source: Path) -> types.ModuleType:
    """The module at PATH, registered as NAME (SOURCE: the library's folder, named in errors)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise ImportError(f"{path}: not a Python module (the library's source folder: {source})")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
