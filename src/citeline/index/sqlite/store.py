"""The embedded store: one SQLite file (WAL) with FTS5 for BM25 and an in-memory vector matrix.

Every write runs in one transaction, so a reader (or a process killed mid-ingest)
sees a document either as it was or as it is now, never half-replaced.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.errors import CitelineError, EmbedderMismatchError, NotAnIndexError, SchemaTooNewError
from citeline.index.base import EmbedderInfo, Problem, StoredFile, Vector
from citeline.index.sql.filters import filter_sql
from citeline.index.sqlite.dense import DenseMatrix
from citeline.index.sqlite.engines import Engines, EngineSettings, engines_present
from citeline.index.sqlite.schema import SCHEMA_VERSION, migrate, snapshot, storage_error, transaction
from citeline.index.sqlite.write import SqliteWrites
from citeline.index.sqlite.write import text_hash as text_hash  # callers import it from here
from citeline.models import Chunk, Document
from citeline.retrieval.filters import Filter

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from citeline.registry import BuildContext
    from citeline.settings import Settings

DB_NAME = "citeline.db"

_DOC_COLUMNS = (
    "id, source, title, format, content_hash, size, mtime, page_count, metadata, added_at, updated_at, "
    "collection"
)


class SqliteStore(SqliteWrites):
    """SQLite (source of truth) + FTS5 (BM25) + a dense matrix (exact cosine search)."""

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
        self._dense: DenseMatrix | None = None
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
        """A new connection with the index's pragmas (one per thread: see SqliteRecords.conn)."""
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

    def check(self, repair: bool = False) -> list[Problem]:
        from citeline.index.sqlite.checks import check_store

        return check_store(self, repair)

    # -- meta --------------------------------------------------------------------------------

    def embedder_info(self) -> EmbedderInfo | None:
        name = self.meta("embedder")
        if name is None:
            return None
        return EmbedderInfo(name, self.meta("embedder_version") or "", int(self.meta("embedder_dim") or 0))

    def bind_embedder(self, name: str, version: str, dim: int) -> None:
        """Record the index's embedder on first use; refuse a different one later."""
        info = self.embedder_info()
        if info is None:
            with transaction(self.conn):
                self._set_meta("embedder", name)
                self._set_meta("embedder_version", version)
                self._set_meta("embedder_dim", str(dim))
            return
        if (info.name, info.version, info.dim) != (name, version, dim):
            raise EmbedderMismatchError(f"{info.name} ({info.version})", name)

    # -- documents ---------------------------------------------------------------------------

    def _document(
        self,
        row: sqlite3.Row | tuple[Any, ...],
        tags: dict[str, str] | None = None,
        acl: tuple[str, ...] | None = None,
    ) -> Document:
        doc_id = row[0]
        if tags is None:
            tags = dict(
                self.conn.execute(
                    "SELECT key, value FROM doc_tags WHERE document_id = ?", (doc_id,)
                ).fetchall()
            )
        if acl is None:
            acl = tuple(
                r[0]
                for r in self.conn.execute(
                    "SELECT entry FROM doc_acl WHERE document_id = ? ORDER BY entry", (doc_id,)
                )
            )
        return Document(
            id=doc_id,
            source=row[1],
            title=row[2],
            format=row[3],
            content_hash=row[4],
            size=row[5],
            mtime=row[6],
            page_count=row[7],
            tags=tags,
            acl=acl,
            metadata=json.loads(row[8]),
            added_at=row[9],
            updated_at=row[10],
            collection=row[11],
        )

    def get_document(self, document_id: str) -> Document | None:
        row = self.conn.execute(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE id = ?", (document_id,)
        ).fetchone()
        return None if row is None else self._document(row)

    def _documents(self, rows: Sequence[sqlite3.Row | tuple[Any, ...]]) -> list[Document]:
        """Documents of ``rows``, their tags and ACLs read in a few queries (not two per row)."""
        tags: dict[str, dict[str, str]] = {r[0]: {} for r in rows}
        acl: dict[str, list[str]] = {r[0]: [] for r in rows}
        ids = list(tags)
        for lo in range(0, len(ids), 500):
            part = ids[lo : lo + 500]
            marks = ",".join("?" * len(part))
            for doc_id, key, value in self.conn.execute(
                f"SELECT document_id, key, value FROM doc_tags WHERE document_id IN ({marks})", part
            ):
                tags[doc_id][key] = value
            for doc_id, entry in self.conn.execute(
                f"SELECT document_id, entry FROM doc_acl WHERE document_id IN ({marks}) ORDER BY entry", part
            ):
                acl[doc_id].append(entry)
        return [self._document(r, tags[r[0]], tuple(acl[r[0]])) for r in rows]

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        ids = list(dict.fromkeys(document_ids))
        out: dict[str, Document] = {}
        for lo in range(0, len(ids), 500):
            part = ids[lo : lo + 500]
            marks = ",".join("?" * len(part))
            rows = self.conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE id IN ({marks})", part
            ).fetchall()
            out.update((d.id, d) for d in self._documents(rows))
        return out

    def stored_files(self, collection: str) -> list[StoredFile]:
        with snapshot(self.conn):  # the documents, their tags and ACLs as of one moment
            tags: dict[str, dict[str, str]] = {}
            for doc_id, key, value in self.conn.execute(
                "SELECT t.document_id, t.key, t.value FROM doc_tags t JOIN documents d "
                "ON d.id = t.document_id WHERE d.collection = ?",
                (collection,),
            ):
                tags.setdefault(doc_id, {})[key] = value
            acl: dict[str, list[str]] = {}
            for doc_id, entry in self.conn.execute(
                "SELECT a.document_id, a.entry FROM doc_acl a JOIN documents d ON d.id = a.document_id "
                "WHERE d.collection = ? ORDER BY a.entry",
                (collection,),
            ):
                acl.setdefault(doc_id, []).append(entry)
            rows = self.conn.execute(
                "SELECT id, source, content_hash, size, mtime, updated_at, json_extract(metadata, '$.path'), "
                "json_extract(metadata, '$.pipeline'), json_type(metadata, '$.uploaded_by') IS NOT NULL "
                "FROM documents WHERE collection = ?",
                (collection,),
            ).fetchall()
        return [StoredFile.from_row(r, tags.get(r[0], {}), acl.get(r[0], ())) for r in rows]

    def write_mark(self) -> tuple[object, int]:
        # data_version moves when another connection commits, total_changes when this one writes
        # (each thread has its own connection, so the connection itself is part of the mark)
        conn = self.conn
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        return (conn, version), conn.total_changes

    def find_document(self, source: str, collection: str | None = None) -> Document | None:
        if collection is not None:
            sql, params = "collection = ? AND source = ?", [collection, source]
        else:
            sql, params = "source = ?", [source]
        row = self.conn.execute(
            f"SELECT {_DOC_COLUMNS} FROM documents WHERE {sql} ORDER BY collection LIMIT 1", params
        ).fetchone()
        if row is None:  # an absolute file path, as the document was read from
            row = self.conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE json_extract(metadata, '$.path') = ? "
                f"{'AND collection = ?' if collection is not None else ''} LIMIT 1",
                [source] + ([collection] if collection is not None else []),
            ).fetchone()
        return None if row is None else self._document(row)

    def documents(self, flt: Filter, limit: int | None = None, offset: int = 0) -> list[Document]:
        cond, params = filter_sql(flt, "id")
        sql = (
            f"SELECT {_DOC_COLUMNS} FROM documents {'WHERE ' + cond if cond else ''} "
            "ORDER BY collection, source LIMIT ? OFFSET ?"
        )
        rows = self.conn.execute(sql, [*params, -1 if limit is None else limit, offset]).fetchall()
        return self._documents(rows)

    def count_documents(self, flt: Filter) -> int:
        cond, params = filter_sql(flt, "id")
        sql = f"SELECT COUNT(*) FROM documents {'WHERE ' + cond if cond else ''}"
        return int(self.conn.execute(sql, params).fetchone()[0])

    def original(self, document_id: str) -> bytes | None:
        row = self.conn.execute(
            "SELECT b.data FROM documents d JOIN blobs b ON b.content_hash = d.content_hash WHERE d.id = ?",
            (document_id,),
        ).fetchone()
        return None if row is None else bytes(row[0])

    def document_text(self, document_id: str) -> str:
        row = self.conn.execute("SELECT text FROM documents WHERE id = ?", (document_id,)).fetchone()
        return "" if row is None else str(row[0])

    def page_starts(self, document_id: str) -> list[int]:
        row = self.conn.execute("SELECT page_starts FROM documents WHERE id = ?", (document_id,)).fetchone()
        return [] if row is None else list(json.loads(row[0]))

    # -- vectors -----------------------------------------------------------------------------

    def cached_vectors(self, text_hashes: Iterable[str], embedder: str | None = None) -> dict[str, Vector]:
        name = embedder or self.meta("embedder")
        hashes = list(dict.fromkeys(text_hashes))
        out: dict[str, Vector] = {}
        for lo in range(0, len(hashes), 500):
            part = hashes[lo : lo + 500]
            rows = self.conn.execute(
                f"SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND text_hash IN ({','.join('?' * len(part))})",
                [name, *part],
            )
            out.update({h: np.frombuffer(v, dtype=np.float32) for h, v in rows})
        return out

    def all_text_hashes(self) -> list[tuple[str, str]]:
        """(text_hash, index_text) of every distinct chunk text, for re-embedding."""
        return [
            (r[0], r[1])
            for r in self.conn.execute("SELECT text_hash, MIN(index_text) FROM chunks GROUP BY text_hash")
        ]

    def add_vectors(self, embedder: str, vectors: Mapping[str, Vector]) -> None:
        """Store vectors of another embedder side by side (the active one keeps serving)."""
        with self._lock, transaction(self.conn):
            self.conn.executemany(
                "INSERT INTO embeddings (text_hash, embedder, vector) VALUES (?, ?, ?) "
                "ON CONFLICT(text_hash, embedder) DO UPDATE SET vector = excluded.vector",
                [(h, embedder, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
            )
            if embedder == self.meta("embedder"):  # chunks that gain a vector: the engines add them
                self.conn.executemany(
                    "INSERT INTO changes (chunk, op) SELECT rowid, 1 FROM chunks WHERE text_hash = ?",
                    [(h,) for h in vectors],
                )
            self._bump_generation()

    def swap_embedder(self, name: str, version: str, dim: int) -> None:
        """Make ``name`` the active embedder in one transaction and drop the old vectors."""
        with self._lock, transaction(self.conn):
            missing = self.conn.execute(
                "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.text_hash = c.text_hash AND e.embedder = ?)",
                (name,),
            ).fetchone()[0]
            if missing:
                raise CitelineError(
                    f"Reindex incomplete: {missing} chunks lack '{name}' vectors; nothing swapped."
                )
            self.conn.execute("DELETE FROM embeddings WHERE embedder != ?", (name,))
            self._set_meta("embedder", name)
            self._set_meta("embedder_version", version)
            self._set_meta("embedder_dim", str(dim))
            self._bump_generation()
        self._after_write()

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]:
        out: dict[str, tuple[Chunk, Document]] = {}
        ids = list(dict.fromkeys(chunk_ids))
        for lo in range(0, len(ids), 500):
            part = ids[lo : lo + 500]
            rows = self.conn.execute(
                'SELECT c.id, c.document_id, c.ordinal, c.start, c."end", c.page, c.page_end, c.heading, c.kind, '
                'c.index_text, c.token_count, substr(d.text, c.start + 1, c."end" - c.start) '
                "FROM chunks c JOIN documents d ON d.id = c.document_id "
                f"WHERE c.id IN ({','.join('?' * len(part))})",
                part,
            ).fetchall()
            # the hits' documents in a few queries, not three per document
            docs = self.get_documents([r[1] for r in rows])
            for r in rows:
                if r[1] not in docs:
                    continue
                chunk = Chunk(
                    id=r[0],
                    document_id=r[1],
                    ordinal=r[2],
                    start=r[3],
                    end=r[4],
                    page=r[5],
                    page_end=r[6],
                    heading_trail=tuple(json.loads(r[7])),
                    kind=r[8],
                    index_text=r[9],
                    token_count=r[10],
                    text=r[11],
                )
                out[r[0]] = (chunk, docs[r[1]])
        return out

    def document_chunks(self, document_id: str) -> list[str]:
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT id FROM chunks WHERE document_id = ? ORDER BY ordinal", (document_id,)
            )
        ]

    def stats(self) -> dict[str, Any]:
        documents = self.conn.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
        info = self.embedder_info()
        size = sum(p.stat().st_size for p in self.folder.glob(DB_NAME + "*") if p.is_file())
        return {
            "index": str(self.folder),
            "documents": int(documents),
            "chunks": self.count_chunks(Filter.admin()),
            "vectors": int(self.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]),
            "index_bytes": size,
            "schema_version": int(self.meta("schema_version") or 0),
            "embedder": None
            if info is None
            else {"name": info.name, "version": info.version, "dim": info.dim},
        }


def sqlite_factory(
    context: BuildContext | None, location: str | None, *, create: bool = True, read_only: bool = False
) -> SqliteStore:
    """The embedded store in the folder ``location`` (default ./.citeline)."""
    return SqliteStore(Path(location or ".citeline"), create=create, read_only=read_only)
