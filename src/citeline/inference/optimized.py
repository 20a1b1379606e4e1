"""Optimised ONNX graphs kept in the cache folder, so that a process loads one instead of building it.

onnxruntime's graph optimisation of the packaged int8 models (MiniLM, our cross-encoder) folds
their int8 weights into float32 ones: building it costs each process 0.25-0.35 s of CPU, and the
graph as loaded, unoptimised, runs those casts on every call (0.1 s for a one-word query). The
first process to optimise a model saves the result (the graph, ~50 kB, and its weights as an
external file, ~90 MB, which onnxruntime maps from disk); later ones load it in ~0.05 s of CPU and
run it as fast as a graph they optimised themselves, with the same outputs.

An entry is named after the model file (path, size, modification time), onnxruntime's version
and the CPU (a saved optimised graph may use kernels of this machine's instruction set). It is
written to a temporary folder and renamed into place, so a reader never sees half of one; one
that onnxruntime cannot load is removed and built again. Where the cache cannot be written,
processes build the graph as before.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import platform
from pathlib import Path

GRAPH, WEIGHTS = "model.onnx", "model.data"
#: initializers at least this large go to the weights file (onnxruntime maps it; the graph stays small)
EXTERNAL_MIN_BYTES = 1024


@functools.cache
def _machine() -> str:
    """The CPU's architecture and instruction-set flags (a saved graph may depend on them)."""
    flags = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("flags", "Features")):
                flags = line
                break
    return f"{platform.machine()}|{flags}"


def entry(model: Path) -> Path | None:
    """The cache folder for ``model``'s optimised graph (None: the model file cannot be read)."""
    import onnxruntime as ort

    from citeline.settings import process_cache_root

    try:
        stat = model.stat()
        name = str(model.resolve())
    except OSError:
        return None
    key = f"{name}|{stat.st_size}|{stat.st_mtime_ns}|{ort.__version__}|{_machine()}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return process_cache_root() / "models" / "onnx-optimized" / digest


def saved(folder: Path | None) -> Path | None:
    """The saved graph in ``folder``, if both of its files are there."""
    if folder is None or not (folder / GRAPH).is_file() or not (folder / WEIGHTS).is_file():
        return None
    return folder / GRAPH


def staging(folder: Path) -> Path | None:
    """A new temporary folder beside ``folder`` to save a graph into (None: not writable)."""
    import tempfile  # here and shutil below: for the process that saves a graph, not those loading one

    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    except OSError:
        return None


def publish(tmp: Path, folder: Path) -> None:
    """Rename the graph saved in ``tmp`` into place (another process may have been first)."""
    if saved(tmp) is not None and not folder.exists():
        with contextlib.suppress(OSError):  # a folder replaces only an absent (or empty) one
            os.replace(tmp, folder)
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


def discard(folder: Path) -> None:
    """Remove an entry onnxruntime could not load (built again by this process)."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
