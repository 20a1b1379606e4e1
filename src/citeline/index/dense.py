"""Exact dense search over an in-memory matrix derived from the vectors in SQLite.

Fine below ~200k chunks (a matrix-vector product per query); larger collections
get an approximate engine behind the same two methods.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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
