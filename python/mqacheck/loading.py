"""A function named on a command line: ``module.path:function`` or ``path/to/file.py:function``."""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable


class FunctionSpecError(ValueError):
    """A function spec that names nothing callable; the message says what was wrong."""


def load_function(spec: str) -> Callable[..., Any]:
    """The callable ``spec`` names. A spec whose module part ends in .py or holds a path separator
    is a file (imported under its own module name, so Triton and inspect can read its source);
    any other is an importable module. The function part may be dotted (``Class.method``)."""
    module_part, sep, attribute = spec.rpartition(":")
    if not sep or not module_part or not attribute:
        raise FunctionSpecError(f"'{spec}': expected MODULE:FUNCTION or path/to/file.py:FUNCTION")
    if module_part.endswith(".py") or "/" in module_part or "\\" in module_part:
        module = _import_file(Path(module_part), spec)
    else:
        try:
            module = importlib.import_module(module_part)
        except ImportError as e:
            raise FunctionSpecError(f"'{spec}': cannot import module '{module_part}' ({e})") from None
    target: Any = module
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise FunctionSpecError(f"'{spec}': {getattr(target, '__name__', module_part)} has no attribute '{name}'")
        target = getattr(target, name)
    if not callable(target):
        raise FunctionSpecError(f"'{spec}': {attribute} is a {type(target).__name__}, not a function")
    return target


def _import_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise FunctionSpecError(f"'{spec}': no such file {path}")
    resolved = path.resolve()
    name = f"mqacheck_user_{resolved.stem}_{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise FunctionSpecError(f"'{spec}': {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # before exec: dataclasses and Triton look their module up by name
    sys.path.insert(0, str(resolved.parent))  # the file's own siblings import as they would when run
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
