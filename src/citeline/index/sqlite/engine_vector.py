"""The vector engine for large embedded indexes: a faiss IVF index (inverted lists of raw float32
vectors, inner product = cosine on normalised vectors), ids = SQLite chunk rowids.

Persistence is a checkpoint plus the change log (index/sqlite/changelog.py): ``engines/vectors.json``
names the checkpoint file (``vectors-N.faiss``), the change-log position it holds, the embedder
and the number of vectors its centroids were trained on. A process loads the checkpoint and
replays the log after its position in memory; a new checkpoint is written (to a new file, then
the state switched atomically) when a fifth of the vectors changed since the last one, when a
process had to replay more than 1% of them on opening, and when a writer closes the store.

A checkpoint at the log's position is memory-mapped (faiss IO_FLAG_MMAP_IFC: 0.03 s at 1M vectors
against 1.1 s to read 1.5 GB), which is what a one-shot search process finds after a writer closed.
A mapped index cannot be changed (faiss aborts the process), so every change reads it into memory
first (``_own``).

Updates: every changed rowid that SQLite still holds is removed and added again (so replaying is
harmless); a rowid SQLite no longer holds is tombstoned (left out of every search by a selector)
and the tombstones are compacted (removed from the inverted lists) when they pass 2% of the
vectors or at a checkpoint. The index is rebuilt (new centroids) when it holds four times the
vectors it was trained on.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.errors import MissingExtraError
from citeline.index.sqlite.engine_keyword import _write_json, read_state

Rowids = npt.NDArray[np.int64]
Matrix = npt.NDArray[np.float32]


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise MissingExtraError("the vector engine for large indexes", "faiss-cpu", "engines") from exc
    return faiss


def lists_for(n: int) -> int:
    """Inverted lists for ``n`` vectors: about 4 sqrt(n), at least 39 training points each."""
    return max(1, min(int(4 * math.sqrt(max(n, 1))), n // 39))


class VectorEngine:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.state_path = folder / "vectors.json"
        self.faiss = _faiss()
        self.faiss.omp_set_num_threads(1)  # a query is small; threads cost more than they bring
        self.index: Any = None
        self.position = -1
        self.embedder = ""
        self.trained = 0
        self.unsaved = 0
        self.tombstones: set[int] = set()
        self._file: str | None = None
        self._not_deleted: Any = None
        self.mapped = False  # the checkpoint file is mapped, not read: _own() before any change

    @property
    def ntotal(self) -> int:
        return 0 if self.index is None else int(self.index.ntotal) - len(self.tombstones)

    def load(self, position: int = -1) -> bool:
        """The checkpoint on disk, if there is a readable one (its position may be behind);
        mapped when it holds ``position`` (nothing to replay), else read."""
        state = read_state(self.state_path)
        if state is None:
            return False
        if state.get("file") == self._file and self.index is not None and self.position >= state["position"]:
            return True
        mapped = state.get("position") == position
        try:
            flags = self.faiss.IO_FLAG_MMAP_IFC if mapped else 0
            index = self.faiss.read_index(str(self.folder / state["file"]), flags)
        except (RuntimeError, KeyError, TypeError):
            return False
        self.index, self._file, self.mapped = index, state["file"], mapped
        self.position, self.embedder = int(state["position"]), str(state["embedder"])
        self.trained, self.unsaved = int(state["trained"]), 0
        self.tombstones, self._not_deleted = set(), None
        return True

    def build(
        self, rowids: Rowids, matrix: Matrix, position: int, embedder: str, sample: int = 100_000
    ) -> None:
        faiss = self.faiss
        n, dim = matrix.shape
        nlist = lists_for(n)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.min_points_per_centroid = 1  # lists_for keeps 39 per list; small indexes have one
        rng = np.random.default_rng(0)
        train = matrix if n <= sample else matrix[np.sort(rng.choice(n, sample, replace=False))]
        if n:
            index.train(np.ascontiguousarray(train))
            for lo in range(0, n, 100_000):
                index.add_with_ids(np.ascontiguousarray(matrix[lo : lo + 100_000]), rowids[lo : lo + 100_000])
        self.index, self.position, self.embedder, self.trained = index, position, embedder, n
        self.tombstones, self._not_deleted, self.unsaved, self.mapped = set(), None, 0, False

    def _own(self) -> None:
        """Read a mapped checkpoint into memory, so that it can be changed."""
        if self.mapped and self._file is not None:
            self.index = self.faiss.read_index(str(self.folder / self._file))
            self.mapped = False

    def needs_rebuild(self, embedder: str) -> bool:
        return (
            self.index is None
            or not self.index.is_trained  # built while the index had no vectors
            or embedder != self.embedder
            or self.ntotal > 4 * max(self.trained, 2_500)
        )

    def apply(self, changed: Rowids, present: Rowids, matrix: Matrix, position: int) -> None:
        """Changed rowids: the ones in ``present`` (with ``matrix``, their vectors) are replaced,
        the others tombstoned."""
        faiss = self.faiss
        self._own()
        if len(present):
            self.index.remove_ids(faiss.IDSelectorBatch(present))
            self.tombstones.difference_update(present.tolist())
            self.index.add_with_ids(np.ascontiguousarray(matrix, dtype=np.float32), present)
        gone = np.setdiff1d(changed, present)
        self.tombstones.update(gone.tolist())
        self._not_deleted = None
        self.unsaved += len(changed)
        self.position = position
        if len(self.tombstones) > max(1_000, self.index.ntotal // 50):
            self.compact()

    def compact(self) -> None:
        if self.tombstones:
            self._own()
            ids = np.fromiter(self.tombstones, dtype=np.int64)
            self.index.remove_ids(self.faiss.IDSelectorBatch(ids))
            self.tombstones, self._not_deleted = set(), None

    def checkpoint_due(self) -> bool:
        return self.unsaved > max(1_000, self.ntotal // 5) or self._file is None

    def save(self) -> None:
        """A new checkpoint file, then the state names it (call holding the engines' lock)."""
        self.compact()
        state = read_state(self.state_path) or {}
        number = int(str(state.get("file", "vectors-0.faiss")).split("-")[-1].split(".")[0]) + 1
        name = f"vectors-{number}.faiss"
        tmp = self.folder / (name + ".tmp")
        self.faiss.write_index(self.index, str(tmp))
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.folder / name)
        _write_json(
            self.state_path,
            {"file": name, "position": self.position, "embedder": self.embedder, "trained": self.trained},
        )
        for old in self.folder.glob("vectors-*.faiss*"):
            if old.name != name:
                old.unlink(missing_ok=True)
        self._file, self.unsaved = name, 0

    def remove_files(self) -> None:
        self.state_path.unlink(missing_ok=True)
        for old in self.folder.glob("vectors-*.faiss*"):
            old.unlink(missing_ok=True)
        self.index, self._file, self.position, self.mapped = None, None, -1, False

    def nprobe_for(self, base: int, selectivity: float) -> int:
        """More lists for a filtered search: the k-th allowed neighbour lies further out, about
        1/selectivity times as many vectors away (1/sqrt(selectivity) measured recall 0.94 at 10%
        in tests/index/test_engines.py; the lists scanned hold as many allowed vectors as an
        unfiltered search scans)."""
        nlist = int(self.index.nlist)
        return max(1, min(nlist, math.ceil(base / max(selectivity, 1e-6))))

    def search(
        self, vector: Matrix, k: int, nprobe: int, allowed_bitmap: npt.NDArray[np.uint8] | None = None
    ) -> list[tuple[int, float]]:
        """Top-k (rowid, cosine) among the rowids set in ``allowed_bitmap`` (bit i = rowid i)
        or, without one, among every vector not tombstoned."""
        if self.index is None or self.index.ntotal == 0 or k <= 0:
            return []
        faiss = self.faiss
        selector = None
        if allowed_bitmap is not None:
            selector = faiss.IDSelectorBitmap(len(allowed_bitmap), faiss.swig_ptr(allowed_bitmap))  # n: bytes
        elif self.tombstones:
            if self._not_deleted is None:
                batch = faiss.IDSelectorBatch(np.fromiter(self.tombstones, dtype=np.int64))
                self._not_deleted = (batch, faiss.IDSelectorNot(batch))
            selector = self._not_deleted[1]
        params = faiss.SearchParametersIVF(nprobe=nprobe)
        if selector is not None:
            params.sel = selector
        scores, ids = self.index.search(np.asarray(vector, dtype=np.float32)[None, :], k, params=params)
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def rowids(self) -> Rowids:
        """Every rowid held and not tombstoned (for ``citeline check``)."""
        if self.index is None:
            return np.zeros(0, dtype=np.int64)
        invlists = self.index.invlists
        parts = []
        for lst in range(self.index.nlist):
            size = invlists.list_size(lst)
            if size:
                parts.append(self.faiss.rev_swig_ptr(invlists.get_ids(lst), size).copy())
        held = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
        if self.tombstones:
            held = np.setdiff1d(held, np.fromiter(self.tombstones, dtype=np.int64))
        return held
