"""Derived search engines of the embedded store above ``engine_min_chunks`` chunks: tantivy for
BM25 (index/sqlite/engine_keyword.py) and a faiss IVF index for vectors (index/sqlite/engine_vector.py), in
``engines/`` of the index folder. SQLite stays the source of truth; below the threshold the store
keeps FTS5 and the exact NumPy matrix.

Consistency: the change log (index/sqlite/changelog.py). Before a search, and after each write, the
engines catch up from the position they record to the log's; hits are joined against SQLite
(``_ids_for_rowids`` drops rowids SQLite no longer holds). Updating the engines' files takes
``engines/lock`` (an flock, released by the kernel when a process dies); a search that finds the
keyword engine behind while another process holds the lock answers from FTS5 instead, and the
vector engine catches up in memory. A process killed at any point leaves either the old or the
new state file (each written to a temporary file, fsynced, then renamed), and the log replays
whatever the files do not hold.

Filters keep pre-filtering semantics: the allowed rowids come from SQLite (``filter_sql``), cached
per filter and index generation. Dense: at most ``engine_exact_rows`` allowed chunks are searched
exactly (their vectors read from SQLite, cached likewise); above, the IVF index searches only the
allowed rowids (a bitmap selector) with more lists probed the more selective the filter is.
Keyword: for an admin tantivy ranks within the allowed rowids (BM25 statistics of the whole
index, as FTS5's bm25() for admins). For any other principal BM25's statistics must come from the
chunks it may read, which tantivy cannot restrict, so the store's slice scorer (FTS5) answers, as
below the threshold; switching scorers when another user's document makes the slice smaller would
itself change the scores that principal sees.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.errors import IndexBusyError
from citeline.filters import Filter
from citeline.index.base import Problem
from citeline.index.sql.dialect import SQLITE
from citeline.index.sql.filters import filter_sql
from citeline.index.sqlite.changelog import changed_rowids, log_floor, log_position
from citeline.index.sqlite.engine_keyword import KeywordEngine, SliceIndex, read_state
from citeline.index.sqlite.engine_vector import VectorEngine
from citeline.index.sqlite.schema import snapshot

log = logging.getLogger(__name__)
Rowids = npt.NDArray[np.int64]
FOLDER = "engines"
#: a filter letting through less than this share of the chunks is searched by keyword in an
#: in-memory index of its slice (engine_keyword.SliceIndex); above, tantivy's ranking is filtered
SLICE_SHARE = 0.05
#: an engine this many changes behind (and a fifth of its size) is built anew rather than updated
REBUILD_CHANGES = 50_000


@dataclass(frozen=True)
class EngineState:
    """What a search needs to know about the engines (SqliteSearch._engine_state)."""

    generation: int
    keyword: bool
    vector: bool
    embedder: str
    dim: int


@dataclass(frozen=True)
class EngineSettings:
    """The settings that concern the engines (settings.py: engine_*)."""

    min_chunks: int = 20_000
    exact_rows: int = 20_000
    nprobe: int = 32


def engines_present(index_folder: Path) -> bool:
    folder = index_folder / FOLDER
    return (folder / "keyword.json").exists() or (folder / "vectors.json").exists()


class Engines:
    def __init__(self, index_folder: Path, read_only: bool, settings: EngineSettings) -> None:
        self.folder = index_folder / FOLDER
        self.read_only = read_only
        self.settings = settings
        self.keyword: KeywordEngine | None = None
        self.vector: VectorEngine | None = None
        self._lock = threading.RLock()
        self._count: tuple[int, int] = (-1, 0)  # (generation, chunks)
        self._slices: OrderedDict[tuple[str, int], Any] = OrderedDict()

    # -- when ----------------------------------------------------------------------------------

    def wanted(self, conn: sqlite3.Connection, generation: int) -> bool:
        """Whether the index is large enough for the engines."""
        if self.settings.min_chunks <= 0:
            return True
        if self._count[0] != generation:
            self._count = (generation, int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]))
        return self._count[1] >= self.settings.min_chunks

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[bool]:
        """The engines' update lock, without waiting: True when this process holds it."""
        if self.read_only:
            yield False
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- catching up ---------------------------------------------------------------------------

    def catch_up(self, conn: sqlite3.Connection, embedder: str, dim: int, tag: str = "") -> tuple[bool, bool]:
        """Bring both engines to the change log's position: (keyword usable, vector usable).
        ``embedder`` names the vectors to read; ``tag`` (name, version, dimension) changes when
        the index's embedder does, and the vector engine is then rebuilt."""
        with self._lock, snapshot(conn):
            position, floor = log_position(conn), log_floor(conn)
            return self._catch_up_keyword(conn, position, floor), self._catch_up_vector(
                conn, (position, floor), embedder, dim, tag or embedder
            )

    def _catch_up_keyword(self, conn: sqlite3.Connection, position: int, floor: int) -> bool:
        if self.keyword is None:
            self.keyword = KeywordEngine(self.folder)
        kw = self.keyword
        if kw.position == position or (kw.refresh() and kw.position == position):
            return True  # current in memory: the state file is read only when the log moved
        with self._file_lock() as locked:
            if not locked:
                return False
            present = kw.refresh()
            if present and kw.position == position:
                return True
            if not present or kw.position < floor:
                rows = conn.execute("SELECT rowid, index_text FROM chunks ORDER BY rowid")
                kw.build(((int(r), str(t)) for r, t in rows), position)
                return True
            changed = changed_rowids(conn, kw.position, position)
            if len(changed) > max(REBUILD_CHANGES, kw.num_docs() // 5):  # cheaper built anew
                rows = conn.execute("SELECT rowid, index_text FROM chunks ORDER BY rowid")
                kw.build(((int(r), str(t)) for r, t in rows), position)
                return True
            kw.apply(changed, self._rows(conn, changed, "index_text"), position)
            return True

    def _rows(self, conn: sqlite3.Connection, rowids: Rowids, column: str) -> list[tuple[int, Any]]:
        out: list[tuple[int, Any]] = []
        ids = rowids.tolist()
        for lo in range(0, len(ids), 900):
            part = ids[lo : lo + 900]
            out += conn.execute(
                f"SELECT rowid, {column} FROM chunks WHERE rowid IN ({','.join('?' * len(part))})", part
            ).fetchall()
        return out

    def _vectors(
        self, conn: sqlite3.Connection, embedder: str, dim: int, where: str, params: Sequence[Any]
    ) -> tuple[Rowids, npt.NDArray[np.float32]]:
        rows = conn.execute(
            "SELECT c.rowid, e.vector FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash "
            f"AND e.embedder = ? WHERE {where} ORDER BY c.rowid",
            [embedder, *params],
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        return rowids, matrix

    def _catch_up_vector(
        self, conn: sqlite3.Connection, log: tuple[int, int], embedder: str, dim: int, tag: str
    ) -> bool:
        """``log``: the change log's (position, floor)."""
        position, floor = log
        if self.vector is None:
            self.vector = VectorEngine(self.folder)
        vec = self.vector
        loaded = vec.position != position and vec.load(position)
        if vec.index is not None and vec.position == position and vec.embedder == tag:
            return True
        if vec.needs_rebuild(tag) or vec.position < floor:
            rowids, matrix = self._vectors(conn, embedder, dim, "1 = 1", [])
            vec.build(rowids, matrix, position, tag)
        else:
            changed = changed_rowids(conn, vec.position, position)
            present, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
            if len(changed):  # rowid IN (...) of at most 900 per statement
                parts = [
                    self._vectors(conn, embedder, dim, f"c.rowid IN ({','.join('?' * len(p))})", p)
                    for p in (changed[lo : lo + 900].tolist() for lo in range(0, len(changed), 900))
                ]
                present = np.concatenate([p for p, _ in parts])
                matrix = np.concatenate([m for _, m in parts])
            vec.apply(changed, present, matrix, position)
        # a long replay on opening is saved, so that the next process does not pay for it again
        replayed = loaded and vec.unsaved > max(1_000, vec.ntotal // 100)
        if vec.checkpoint_due() or replayed:
            with self._file_lock() as locked:
                if locked:
                    vec.save()
        return True

    def close(self) -> None:
        """Save the vector engine's unsaved changes (a writer closing: the next process maps the
        checkpoint instead of reading it and replaying the log)."""
        with self._lock:
            vec = self.vector
            if vec is None or vec.index is None or not vec.unsaved:
                return
            with self._file_lock() as locked:
                if locked:
                    vec.save()

    def saved_position(self) -> int:
        """The lowest change-log position the engines' files hold (what the log must keep)."""
        positions = []
        for name in ("keyword.json", "vectors.json"):
            state = read_state(self.folder / name)
            positions.append(int(state["position"]) if state else -1)
        return min(positions)

    # -- filters -------------------------------------------------------------------------------

    def allowed(self, conn: sqlite3.Connection, flt: Filter, generation: int) -> Rowids:
        """The sorted rowids of the chunks ``flt`` lets through (cached per generation)."""
        key = ("rowids:" + repr(flt), generation)
        found = self._slice(key)
        if found is None:
            cond, params = filter_sql(flt, "document_id", SQLITE)
            rows = conn.execute(f"SELECT rowid FROM chunks WHERE {cond} ORDER BY rowid", params)
            found = np.fromiter((r[0] for r in rows), dtype=np.int64)
            self._keep(key, found)
        return found  # type: ignore[no-any-return]

    def _slice(self, key: tuple[str, int]) -> Any:
        with self._lock:
            found = self._slices.get(key)
            if found is not None:
                self._slices.move_to_end(key)
            return found

    def _keep(self, key: tuple[str, int], value: Any) -> None:
        with self._lock:
            self._slices[key] = value
            while len(self._slices) > 32 or (
                len(self._slices) > 1 and sum(_nbytes(v) for v in self._slices.values()) > 512_000_000
            ):
                self._slices.popitem(last=False)

    # -- search --------------------------------------------------------------------------------

    def vector_search(
        self,
        conn: sqlite3.Connection,
        vector: npt.NDArray[np.float32],
        flt: Filter,
        k: int,
        state: EngineState,
    ) -> list[tuple[int, float]]:
        vec = self.vector
        assert vec is not None and vec.index is not None
        query = np.asarray(vector, dtype=np.float32)
        if flt.is_empty:
            with self._lock:
                return vec.search(query, k, self.settings.nprobe)
        allowed = self.allowed(conn, flt, state.generation)
        if len(allowed) == 0:
            return []
        if len(allowed) <= self.settings.exact_rows:
            return self._exact(conn, query, flt, k, state)
        bitmap = np.zeros(int(allowed[-1]) // 8 + 1, dtype=np.uint8)
        np.bitwise_or.at(bitmap, allowed >> 3, (1 << (allowed & 7)).astype(np.uint8))
        with self._lock:
            nprobe = vec.nprobe_for(self.settings.nprobe, len(allowed) / max(vec.ntotal, 1))
            return vec.search(query, k, nprobe, bitmap)

    def _exact(
        self,
        conn: sqlite3.Connection,
        query: npt.NDArray[np.float32],
        flt: Filter,
        k: int,
        state: EngineState,
    ) -> list[tuple[int, float]]:
        key = ("vectors:" + repr(flt), state.generation)
        found = self._slice(key)
        if found is None:
            cond, params = filter_sql(flt, "c.document_id", SQLITE)
            found = self._vectors(conn, state.embedder, state.dim, cond, params)
            self._keep(key, found)
        rowids, matrix = found
        if len(rowids) == 0:
            return []
        scores = matrix @ query
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((rowids[top], -scores[top]))]
        return [(int(rowids[i]), float(scores[i])) for i in top]

    def keyword_search(
        self, conn: sqlite3.Connection, phrases: Sequence[str], flt: Filter, k: int, generation: int
    ) -> list[tuple[int, float]]:
        kw = self.keyword
        assert kw is not None
        if flt.is_empty:
            with self._lock:
                return kw.search(phrases, k)
        allowed = self.allowed(conn, flt, generation)
        with self._lock:
            selective = len(allowed) < SLICE_SHARE * max(kw.num_docs(), 1)
            if not selective:
                return kw.search(phrases, k, allowed)
        key = ("keyword:" + repr(flt), generation)
        found = self._slice(key)
        if found is None:
            cond, params = filter_sql(flt, "document_id", SQLITE)
            rows = conn.execute(f"SELECT rowid, index_text FROM chunks WHERE {cond} ORDER BY rowid", params)
            found = SliceIndex(kw, rows.fetchall())
            self._keep(key, found)
        with self._lock:
            return found.search(kw, phrases, k)  # type: ignore[no-any-return]

    # -- check and repair ----------------------------------------------------------------------

    def check(self, conn: sqlite3.Connection, embedder: str, dim: int, tag: str) -> list[Problem]:
        """The engines against the chunks (after catching up: a lagging engine is not a problem)."""
        problems: list[Problem] = []
        try:
            keyword_ok, _ = self.catch_up(conn, embedder, dim, tag)
        except Exception as exc:  # a damaged engine file: anything its library raises
            return [Problem("keyword-index", f"the derived engines cannot be read or updated: {exc}")]
        with self._lock, snapshot(conn):
            chunks = np.fromiter(
                (r[0] for r in conn.execute("SELECT rowid FROM chunks ORDER BY rowid")), dtype=np.int64
            )
            if keyword_ok and self.keyword is not None:
                held = self.keyword.rowids()
                if not np.array_equal(held, chunks):
                    problems.append(
                        Problem(
                            "keyword-index",
                            f"the tantivy engine holds {len(held)} rows for {len(chunks)} chunks "
                            f"({len(np.setdiff1d(held, chunks))} of no chunk)",
                        )
                    )
            rows = conn.execute(
                "SELECT c.rowid FROM chunks c JOIN embeddings e ON e.text_hash = c.text_hash AND e.embedder = ? "
                "ORDER BY c.rowid",
                (embedder,),
            )
            expected = np.fromiter((r[0] for r in rows), dtype=np.int64)
            if self.vector is not None and self.vector.index is not None:
                held = self.vector.rowids()
                if not np.array_equal(held, expected):
                    problems.append(
                        Problem(
                            "vector-index",
                            f"the faiss engine holds {len(held)} vectors for {len(expected)} chunks",
                        )
                    )
        return problems

    def rebuild(self, conn: sqlite3.Connection, embedder: str, dim: int, tag: str) -> None:
        """Drop the engines' files and build them again from SQLite."""
        with self._lock, self._file_lock() as locked:
            if not locked:
                raise IndexBusyError(
                    f"{self.folder}: another process is updating the search engines (or the index is "
                    "read-only); run `citeline check --repair` again when it is done."
                )
            self.keyword = self.keyword or KeywordEngine(self.folder)
            self.vector = self.vector or VectorEngine(self.folder)
            self.keyword.remove_files()
            self.vector.remove_files()
            self._slices.clear()
        self.catch_up(conn, embedder, dim, tag)

    def drop(self) -> None:
        """Remove the engines' files (the index fell below the threshold)."""
        with self._lock, self._file_lock() as locked:
            if locked:
                KeywordEngine(self.folder).remove_files()
                VectorEngine(self.folder).remove_files()
                self.keyword = self.vector = None

    def term_count(
        self, conn: sqlite3.Connection, phrases: Sequence[str], flt: Filter, generation: int
    ) -> int:
        kw = self.keyword
        assert kw is not None
        allowed = None if flt.is_empty else self.allowed(conn, flt, generation)
        with self._lock:
            return kw.count(phrases, allowed)


def _nbytes(value: Any) -> int:
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    return int(getattr(value, "nbytes", 0))
