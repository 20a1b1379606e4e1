"""The embedded store: one SQLite file (WAL) with FTS5 for BM25 and an in-memory vector matrix.

Every write runs in one transaction, so a reader (or a process killed mid-ingest) sees a document
either as it was or as it is now, never half-replaced. What it shares with the PostgreSQL store
is in index/sql/; here: opening the folder, connections, the generation that tells readers to
reload, and the derived engines' upkeep after writes (index/sqlite/engines.py).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.errors import (
    CitelineError,
    IndexFolderError,
    NotAnIndexError,
    SchemaTooNewError,
    folder_error_reason,
)
from citeline.index.base import EmbedderInfo, Problem
from citeline.index.sql.dialect import SQLITE, Session, insert_sql
from citeline.index.sql.rows import chunk_write_columns
from citeline.index.sql.writes import NewChunk
from citeline.index.sqlite import schema
from citeline.index.sqlite.changelog import compact, log_floor, log_position
from citeline.index.sqlite.engines import Engines, EngineSettings, engines_present
from citeline.index.sqlite.schema import SCHEMA_VERSION, migrate, storage_error, transaction
from citeline.index.sqlite.search import SqliteSearch

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from citeline.build_context import BuildContext
    from citeline.index.sql.checks import Found
    from citeline.settings import Settings

DB_NAME = "citeline.db"
#: a writer brings the engines up to date itself once this many changes wait for them
CATCH_UP_CHANGES = 5_000


class SqliteStore(SqliteSearch):
    """SQLite (source of truth) + FTS5 (BM25) + a dense matrix (exact cosine search)."""

    dialect = SQLITE
    _wrote = False

    def __init__(self, folder: Path, *, create: bool = True, read_only: bool = False) -> None:
        self.folder = folder
        self.location = str(folder)
        self.path = folder / DB_NAME
        self._check_folder(create and not read_only)
        writable = os.access(folder, os.W_OK) and (not self.path.exists() or os.access(self.path, os.W_OK))
        self.read_only = read_only or not writable
        self._lock = threading.RLock()
        self._init_connections()
        try:
            self._open_schema()
        except sqlite3.OperationalError as exc:
            self.close()
            translated = storage_error(exc, f"the index at {folder}")
            if translated is not None:
                raise translated from exc
            raise NotAnIndexError(str(folder), f"{DB_NAME} is not a readable SQLite database: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            self.close()
            raise NotAnIndexError(str(folder), f"{DB_NAME} is not a readable SQLite database: {exc}") from exc
        except BaseException:
            self.close()
            raise
        self._dense = None
        self._dense_generation = -1
        self._engines = Engines(folder, self.read_only, EngineSettings())

    _immutable = False

    def _connect_read_only(self) -> sqlite3.Connection:
        """A read-only connection. On a read-only file system (or a folder this user may not write)
        SQLite cannot create the WAL index (-shm) it needs to read a WAL database; when nobody
        is writing the index (no -shm there), it is opened as immutable instead."""
        if not self._immutable:
            conn = sqlite3.connect(
                f"file:{self.path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                return conn
            except sqlite3.OperationalError:
                conn.close()
                if self.path.with_name(DB_NAME + "-shm").exists():
                    raise
                self._immutable = True
        return sqlite3.connect(
            f"file:{self.path}?mode=ro&immutable=1", uri=True, isolation_level=None, check_same_thread=False
        )

    def _connect(self) -> sqlite3.Connection:
        """A new connection with the index's pragmas (one per thread: see SqliteConnections.conn)."""
        if self.read_only:
            conn = self._connect_read_only()
        else:
            conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self._wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
        return conn

    def _wal(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL. On a brand-new database that another process is switching at the same
        moment, SQLite answers "database is locked" at once, without waiting (busy_timeout does not
        cover it): wait and try again, up to the lock timeout."""
        deadline = time.monotonic() + self._busy_ms / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    # -- opening -----------------------------------------------------------------------------

    def _check_folder(self, create: bool) -> None:
        try:
            self._check_folder_entries(create)
        except OSError as exc:  # a file in the path, a read-only place, no permission
            raise IndexFolderError(str(self.folder), folder_error_reason(exc)) from exc

    def _check_folder_entries(self, create: bool) -> None:
        if self.folder.exists() and not self.folder.is_dir():
            raise NotAnIndexError(str(self.folder), "it is a file, not a folder")
        if self.path.exists():
            return
        # another process may be creating this index right now: its database files do not count
        ours = ("citeline.toml", DB_NAME, ".citeline-toml-")
        if self.folder.exists() and any(not p.name.startswith(ours) for p in self.folder.iterdir()):
            raise NotAnIndexError(str(self.folder), f"the folder has files but no {DB_NAME}")
        if not create:
            raise NotAnIndexError(str(self.folder), "no index here yet; `citeline add` creates one")
        self.folder.mkdir(parents=True, exist_ok=True)

    def _open_schema(self) -> None:
        tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" not in tables:
            if tables:
                raise NotAnIndexError(str(self.folder), f"{DB_NAME} holds other tables")
            if self.read_only:
                raise NotAnIndexError(str(self.folder), "empty database on a read-only folder")
            # IF NOT EXISTS: two processes may create the same new index at once
            self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            current = 0
        else:
            current = int(self.meta("schema_version") or 0)
        if current > SCHEMA_VERSION:
            raise SchemaTooNewError(str(self.folder), current, SCHEMA_VERSION)
        if current < SCHEMA_VERSION:
            if self.read_only:
                raise CitelineError(f"{self.folder}: the index needs a schema upgrade but is read-only.")
            migrate(self.conn, current)

    def close(self) -> None:
        """A store that wrote brings the engines up to date and saves the vector engine, so that
        the next process maps its checkpoint instead of reading it and replaying the log (at 1M
        chunks: 0.03 s against 1-13 s); the writer pays for it (1.5 GB written at 1M chunks)."""
        if self._wrote and not self.read_only and engines_present(self.folder):
            try:
                if self._engine_state() is not None:
                    self._engines.close()
            except Exception as exc:  # a full disk or damaged engine: the next process replays the log
                log.warning("%s: the vector engine's checkpoint was not saved (%s)", self.location, exc)
        self._close_connections()

    def configure(self, settings: Settings) -> None:
        """How long a write waits for another writer's transaction (lock_timeout_s); when the
        derived engines take over (engine_*)."""
        self._set_busy_timeout(round(settings.lock_timeout_s * 1000))
        self._engines.settings = EngineSettings(
            settings.engine_min_chunks, settings.engine_exact_rows, settings.engine_nprobe
        )

    # -- the read and write contexts ------------------------------------------------------------

    @contextmanager
    def reading(self, snapshot: bool = False) -> Iterator[Session]:
        if not snapshot:
            yield Session(self.conn, SQLITE)
            return
        with schema.snapshot(self.conn) as conn:
            yield Session(conn, SQLITE)

    @contextmanager
    def writing(self) -> Iterator[Session]:
        with self._lock, transaction(self.conn) as conn:
            yield Session(conn, SQLITE)

    def write_mark(self) -> tuple[object, int]:
        # data_version moves when another connection commits, total_changes when this one writes
        # (each thread has its own connection, so the connection itself is part of the mark)
        conn = self.conn
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        return (conn, version), conn.total_changes

    # -- after writes: the generation and the derived engines -------------------------------------

    def _bump(self, s: Session, chunks: int = 0, tokens: int = 0) -> None:
        """Move the generation, which tells readers (the vector matrix) to reload."""
        self._set_meta(s, "generation", str(int(self._meta(s, "generation") or 0) + 1))
        if not engines_present(self.folder):  # no engine to catch up: the change log is not needed
            compact(s.conn, log_position(s.conn))

    def _insert_chunks(self, s: Session, chunks: Sequence[NewChunk], prepared: Any) -> int:
        # triggers index them in FTS5 and log them for the engines (index/sqlite/schema.py)
        s.many(insert_sql("chunks", chunk_write_columns(SQLITE)), [c.params for c in chunks])
        return 0

    def _vectors_added(self, s: Session, embedder: str, text_hashes: Sequence[str]) -> None:
        if embedder == self._meta(s, "embedder"):  # chunks that gain a vector: the engines add them
            s.many(
                "INSERT INTO changes (chunk, op) SELECT rowid, 1 FROM chunks WHERE text_hash = ?",
                [(h,) for h in text_hashes],
            )
        self._bump(s)

    def _after_write(self) -> None:
        """Bring the derived engines up to date (index/sqlite/engines.py) once ``CATCH_UP_CHANGES``
        wait for them (a search catches up before that), or drop them when the index fell below
        the threshold; then compact the change log up to what their files hold. The write itself
        is committed: a failure here is logged, and the next search catches up again."""
        self._wrote = True  # close() brings the engines' files up to date
        try:
            generation = int(self.meta("generation") or 0)
            if not self._engines.wanted(self.conn, generation):
                if engines_present(self.folder):
                    self._engines.drop()
                return
            saved = self._engines.saved_position()
            if log_position(self.conn) - saved < CATCH_UP_CHANGES:
                return  # the next search catches up (a tantivy commit per small write costs)
            if self._engine_state() is None:
                return
            saved = self._engines.saved_position()
            if saved > log_floor(self.conn):
                with self.writing() as s:
                    compact(s.conn, saved)
        except Exception as exc:  # the engines are derived: SQLite holds the write
            log.warning("%s: the derived engines were not updated (%s)", self.location, exc)

    # -- check (the table and the checker: index/sql/checks.py) -----------------------------------

    def check_probe(
        self, name: str, s: Session, info: EmbedderInfo | None, found: Sequence[Found]
    ) -> list[Found]:
        if name == "fts":
            return self._fts_problems(s)
        if info is None:
            return []
        if name == "finite-vectors":
            return self._vector_problems(s, info)
        if name == "matrix" and not any(step and step.startswith("bad-vectors:") for _, step in found):
            return self._matrix_problems(s, info)
        generation = int(self._meta(s, "generation") or 0)
        if name == "engines" and (self._engines.wanted(s.conn, generation) or engines_present(self.folder)):
            return [
                (p, "engines") for p in self._engines.check(s.conn, info.name, info.dim, self._engine_tag())
            ]
        return []

    def _fts_problems(self, s: Session) -> list[Found]:
        """FTS5's rows against the chunks, then its own integrity check (its text against theirs)."""
        fts_rows = s.value("SELECT COUNT(*) FROM chunks_fts_docsize")
        chunk_rows = s.value("SELECT COUNT(*) FROM chunks")
        stray = s.value(
            "SELECT COUNT(*) FROM chunks_fts_docsize f WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.rowid = f.id)"
        )
        problem = None
        if fts_rows != chunk_rows or stray:
            problem = f"FTS5 holds {fts_rows} rows for {chunk_rows} chunks ({stray} of no chunk)"
        elif not self.read_only:
            # an INSERT: on a connection of its own, as the check's read snapshot cannot take the
            # write lock once another writer has committed
            conn = self._connect()
            try:
                conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
            except sqlite3.DatabaseError as exc:
                problem = f"FTS5 does not match the chunks' text ({exc})"
            finally:
                conn.close()
        return [(Problem("keyword-index", problem), "fts")] if problem else []

    def _vector_problems(self, s: Session, info: EmbedderInfo) -> list[Found]:
        """Vectors of the embedder that are not ``dim`` finite numbers."""
        size = (info.name, info.dim * 4)
        bad = [
            r[0]
            for r in s.rows(
                "SELECT text_hash FROM embeddings WHERE embedder = ? AND length(vector) != ?", size
            )
        ]
        for text_hash_, vector in s.execute(
            "SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND length(vector) = ?", size
        ):
            if not np.isfinite(np.frombuffer(vector, dtype=np.float32)).all():
                bad.append(text_hash_)
        if not bad:
            return []
        detail = f"{len(bad)} vectors are not {info.dim} finite numbers (embedder {info.name})"
        return [(Problem("vectors", detail), "bad-vectors:" + ",".join(bad))]

    def _matrix_problems(self, s: Session, info: EmbedderInfo) -> list[Found]:
        """The vector matrix builds, with a row per chunk that has a vector."""
        chunk_rows = s.value("SELECT COUNT(*) FROM chunks")
        missing = s.value(
            "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = ?)",
            (info.name,),
        )
        self._dense = None
        try:
            matrix = self._dense_matrix()
        except (ValueError, sqlite3.DatabaseError) as exc:
            return [(Problem("vector-index", f"the vector matrix cannot be built: {exc}"), None)]
        if len(matrix) == chunk_rows - missing and matrix.matrix.shape[1:] == (info.dim,):
            return []
        detail = (
            f"the vector matrix has {len(matrix)} rows of {matrix.matrix.shape[1:]} for "
            f"{chunk_rows - missing} chunks with vectors of dimension {info.dim}"
        )
        return [(Problem("vector-index", detail), "dense")]

    def repair_derived(self, s: Session, steps: set[str], info: EmbedderInfo | None) -> None:
        for step in steps:
            if step.startswith("bad-vectors:") and info is not None:
                hashes = [h for h in step[len("bad-vectors:") :].split(",") if h]
                s.many(
                    "DELETE FROM embeddings WHERE text_hash = ? AND embedder = ?",
                    [(h, info.name) for h in hashes],
                )
        # FTS5 is rebuilt from the chunks whenever anything was repaired: it costs one pass.
        s.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        self._bump(s)

    def after_repair(self, steps: set[str], info: EmbedderInfo | None) -> None:
        self._dense = None  # rebuilt from SQLite on next use
        generation = int(self.meta("generation") or 0)
        if info is not None and (self._engines.wanted(self.conn, generation) or engines_present(self.folder)):
            self._engines.rebuild(self.conn, info.name, info.dim, self._engine_tag())

    # -- about the index --------------------------------------------------------------------------

    def _size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.glob(DB_NAME + "*") if p.is_file())

    def _schema_version(self) -> int:
        return int(self.meta("schema_version") or 0)


def sqlite_factory(
    context: BuildContext | None, location: str | None, *, create: bool = True, read_only: bool = False
) -> SqliteStore:
    """The embedded store in the folder ``location`` (default ./.citeline)."""
    return SqliteStore(Path(location or ".citeline"), create=create, read_only=read_only)
