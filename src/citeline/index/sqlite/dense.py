"""Exact dense search over an in-memory matrix derived from the vectors in SQLite.

Fine below ~200k chunks (a matrix-vector product per query); larger collections
get an approximate engine behind the same two methods.

Reading the matrix from SQLite costs ~19 us of CPU per chunk (a join per row, each vector on an
overflow page): 0.1 s at 5k chunks, most of a one-shot `citeline search`. The first process
to read it after a change saves it in the index folder (``dense-matrix.bin``, written to a
temporary file and renamed), keyed by what identifies the vectors it holds; a process whose key
differs reads SQLite again. A damaged or foreign file is ignored.

The file is a header line (magic, then JSON: key, rows, dim) and the raw rowids and vectors, which
the next process maps into memory rather than reads: at 17k chunks an ``.npz`` (read through
zipfile, its CRC checked, copied) cost a one-shot search 0.06-0.17 s of CPU, the mapping ~0.01 s.
Files are only ever replaced by a rename, never written in place, so a mapping stays valid.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
from pathlib import Path

import numpy as np
import numpy.typing as npt

SAVED_NAME = "dense-matrix.bin"
#: the format saved before (read by nothing now): removed when the new file is saved
LEGACY_NAME = "dense-matrix.npz"
MAGIC = b"citeline-dense-matrix 1\n"
#: the arrays start at a multiple of this, after the header (aligned for numpy)
ALIGN = 64
Matrix = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]


class DenseMatrix:
    def __init__(self, rowids: Ids, matrix: Matrix) -> None:
        self.rowids = rowids
        self.matrix = matrix

    def __len__(self) -> int:
        return len(self.rowids)

    def search(self, vector: Matrix, k: int, allowed: Ids | None = None) -> list[tuple[int, float]]:
        """Top-k (rowid, cosine) by exact search, restricted to ``allowed`` rowids if given."""
        if len(self.rowids) == 0 or k <= 0:
            return []
        if allowed is not None:
            mask = np.isin(self.rowids, allowed)
            rows = np.flatnonzero(mask)
            if len(rows) == 0:
                return []
            scores = self.matrix[rows] @ vector
            ids = self.rowids[rows]
        else:
            scores = self.matrix @ vector
            ids = self.rowids
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((ids[top], -scores[top]))]
        return [(int(ids[i]), float(scores[i])) for i in top]


def load_saved(path: Path, key: str) -> DenseMatrix | None:
    """The matrix saved at ``path`` when it was saved under ``key``, else None (mapped, read-only)."""
    try:
        with open(path, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            header = json.loads(f.readline())
            if header.get("key") != key:
                return None
            rows, dim, offset = int(header["rows"]), int(header["dim"]), int(header["offset"])
            if rows == 0:
                return DenseMatrix(np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32))
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if len(mapped) != offset + rows * (8 + 4 * dim):
            return None  # cut short or grown: not the file that was saved
        rowids = np.frombuffer(mapped, dtype=np.int64, count=rows, offset=offset)
        matrix = np.frombuffer(mapped, dtype=np.float32, count=rows * dim, offset=offset + 8 * rows)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # damaged or foreign
    return DenseMatrix(rowids, matrix.reshape(rows, dim))


def save(path: Path, key: str, dense: DenseMatrix) -> None:
    """Save ``dense`` under ``key`` (best effort: a read-only or full disk leaves no file)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    rows, dim = dense.matrix.shape if dense.matrix.ndim == 2 else (0, 0)
    header = json.dumps({"key": key, "rows": rows, "dim": dim, "offset": 0}).encode()
    offset = -(-(len(MAGIC) + len(header) + 32) // ALIGN) * ALIGN  # room for the offset's digits
    header = json.dumps({"key": key, "rows": rows, "dim": dim, "offset": offset}).encode()
    try:
        with open(tmp, "wb") as f:
            f.write(MAGIC + header + b"\n")
            f.write(b"\0" * (offset - f.tell()))
            f.write(np.ascontiguousarray(dense.rowids, dtype=np.int64).tobytes())
            f.write(np.ascontiguousarray(dense.matrix, dtype=np.float32).tobytes())
        os.replace(tmp, path)
        with contextlib.suppress(OSError):
            (path.parent / LEGACY_NAME).unlink(missing_ok=True)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
