"""mqacheck._core, the judge in this process (python/core/module.cpp), and where to find it.

check() judges through it when it is found and through the `mqacheck check` binary otherwise; both
give the same judgement (the same C++ code, api/check.hpp). Found, in order:

- ``MQACHECK_CORE``: the extension's path, or ``off`` to judge through the binary always;
- ``mqacheck._core`` where it was installed into the package;
- beside the binary find_binary() gives: ``<build>/python/mqacheck/_core.<abi>.so``, where CMake
  builds it with the binary (the extension and the binary of one build agree on everything); one
  there that does not load (built for another Python) is named in a RuntimeWarning, and the binary
  judges.

A Bundle is judged by one thread at a time (the extension serialises them); bundles are not shared
between processes.

Opened bundles (the case read, every input checked against the digest, the inputs regenerated
where the digest is not trusted) are kept for the next judgement of the same bundle:
``OPEN_BUNDLES`` of them, least recently used first out, each holding its inputs (q, k, scales,
weights, windows: far less than one output's logits). A bundle whose files changed (size, times,
inode) is opened again.

Each opened bundle's references (its reference.npy rows, magnitudes, a modelled contract's centre:
12 bytes per judged element, 16 under a bf16 contract, about twice that for a modelled contract's
sampled rows) are kept by the extension for its next judgement, which then costs the comparator
alone: at most ``MQACHECK_REFERENCE_CACHE_BYTES`` bytes over all bundles (default: a quarter of the
machine's memory; 0 keeps none), least recently used first out. A bundle whose references alone
exceed it is judged block by block every time, as the binary judges it. Where a GPU's output is
judged on its device, the references' device copy is kept beside them (about as many bytes again
and 2 more per judged element, with the comparator's working memory, about 8 bytes a key for each
of two rows a multiprocessor, in the GPU's memory: ``reference_device_bytes()``) and leaves with
them.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path
from types import ModuleType
from typing import Any

from .binary import BinaryNotFound, find_binary

OPEN_BUNDLES = 4

_loaded: dict[str, ModuleType | None] = {}
_open: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_open_lock = threading.Lock()  # check() from several threads: the cache's reads and writes


class CoreNotFound(RuntimeError):
    """in_process=True was asked for and no mqacheck._core could be loaded."""


class CoreSettingError(ValueError):
    """An environment setting of the extension (MQACHECK_REFERENCE_CACHE_BYTES) that is not one."""


def _from_path(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader("mqacheck._core", str(path))
    spec = importlib.util.spec_from_file_location("mqacheck._core", path, loader=loader)
    if spec is None:
        raise ImportError(f"{path} is not a Python extension")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def _candidates(binary: str | None) -> list[Path]:
    try:
        exe = Path(find_binary(binary))
    except BinaryNotFound:
        return []
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return [exe.parent / "python" / "mqacheck" / f"_core{s}" for s in suffixes]


def load_core(binary: str | None = None) -> ModuleType | None:
    """The extension, or None where there is none (or MQACHECK_CORE=off). A path MQACHECK_CORE names
    that does not load is an error, not a silent fallback."""
    setting = os.environ.get("MQACHECK_CORE", "")
    key = f"{setting}\0{binary or ''}\0{os.environ.get('MQACHECK', '')}"
    if key in _loaded:
        return _loaded[key]
    module: ModuleType | None = None
    if setting.lower() == "off":
        module = None
    elif setting:
        try:
            module = _from_path(Path(setting))
        except (ImportError, OSError) as e:
            raise CoreNotFound(f"MQACHECK_CORE names {setting!r}, which does not load: {e}") from None
    else:
        try:
            from . import _core as installed  # type: ignore[attr-defined]
            module = installed
        except ImportError:
            for path in _candidates(binary):
                if path.is_file():
                    try:
                        module = _from_path(path)
                    except (ImportError, OSError) as e:  # built for another Python: the binary judges
                        warnings.warn(f"mqacheck: {path} does not load ({e}); judging through the binary",
                                      RuntimeWarning, stacklevel=3)
                    break
    if module is not None and os.environ.get("MQACHECK_REFERENCE_CACHE_BYTES"):
        setting = os.environ["MQACHECK_REFERENCE_CACHE_BYTES"]
        if not setting.isdigit():
            raise CoreSettingError(f"MQACHECK_REFERENCE_CACHE_BYTES={setting!r}: expected a number of bytes (0 keeps "
                                   "none)")
        module.set_reference_cache_bytes(int(setting))
    _loaded[key] = module
    return module


def _fingerprint(folder: Path) -> tuple[Any, ...]:
    """What says the bundle's files are the ones opened: each file's name, size, times and inode.
    The change time too: a file written in place with its size and modification time restored
    (cp -p, rsync -t, touch -r) still changed it."""
    entries = []
    with os.scandir(folder) as it:
        for e in it:
            if e.is_file():
                s = e.stat()
                entries.append((e.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
    return tuple(sorted(entries))


def opened_bundle(core: ModuleType, folder: str, flags: list[str], digest: str) -> Any:
    """core.Bundle for the folder under the flags, opened again only where its files changed.

    The Bundle is given the folder's resolved path: it reads reference.npy again at later
    judgements (where its references were not kept), and a path relative to the working directory,
    or through a link, could by then name another folder."""
    path = Path(folder).resolve()
    is_dir = path.is_dir()
    key = (str(path), tuple(flags), digest, _fingerprint(path) if is_dir else None)
    with _open_lock:
        if key in _open:
            _open.move_to_end(key)
            return _open[key]
    # As bytes: a folder whose name is not UTF-8 (surrogate escapes in Python) is a folder still.
    bundle = core.Bundle(os.fsencode(path if is_dir else folder), flags, digest)
    with _open_lock:
        _open[key] = bundle
        while len(_open) > OPEN_BUNDLES:
            _open.popitem(last=False)
    return bundle
