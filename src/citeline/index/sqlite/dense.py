"""Exact dense search over an in-memory matrix derived from the vectors in SQLite.

Fine below ~200k chunks (a matrix-vector product per query); larger collections
get an approximate engine behind the same two methods.

Reading the matrix from SQLite costs ~19 us of CPU per chunk (a join per row, each vector on an
overflow page): 0.1 s at 5k chunks, most of a one-shot `citeline search`. The first process
to read it after a change saves it in the index folder (``dense-matrix.npz``, written to a
temporary file and renamed), keyed by what identifies the vectors it holds; a process whose key
differs reads SQLite again. A damaged or foreign file is ignored.
"""

from __future__ import annotations

import contextlib
import os
import zipfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

SAVED_NAME = "dense-matrix.npz"
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
    """The matrix saved at ``path`` when it was saved under ``key``, else None."""
    try:
        with np.load(path, allow_pickle=False) as data:
            if str(data["key"]) != key:
                return None
            rowids, matrix = data["rowids"], data["matrix"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if rowids.dtype != np.int64 or matrix.dtype != np.float32 or len(rowids) != len(matrix):
        return None
    return DenseMatrix(rowids, matrix)


def save(path: Path, key: str, dense: DenseMatrix) -> None:
    """Save ``dense`` under ``key`` (best effort: a read-only or full disk leaves no file)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.savez(f, key=np.array(key), rowids=dense.rowids, matrix=dense.matrix)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
