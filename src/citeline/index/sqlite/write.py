"""Writes to the embedded store: a batch of documents replaced in one transaction, removals, access
changes, and dropping vectors and originals nothing uses any more. Each write bumps the index's
generation, which tells readers (the in-memory vector matrix) to reload."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from citeline.errors import CitelineError
from citeline.index.base import DocumentWrite, Vector
from citeline.index.sqlite.changelog import compact, log_floor, log_position
from citeline.index.sqlite.engines import engines_present
from citeline.index.sqlite.schema import transaction
from citeline.index.sqlite.search import SqliteSearch
from citeline.models import Chunk, Document


def text_hash(index_text: str) -> str:
    return hashlib.sha256(index_text.encode("utf-8")).hexdigest()


log = logging.getLogger(__name__)
#: a writer brings the engines up to date itself once this many changes wait for them
CATCH_UP_CHANGES = 5_000


class SqliteWrites(SqliteSearch):
    _wrote = False

    def _bump_generation(self) -> None:
        self._set_meta("generation", str(int(self.meta("generation") or 0) + 1))
        if not engines_present(self.folder):  # no engine to catch up: the change log is not needed
            compact(self.conn, log_position(self.conn))

    def _after_write(self) -> None:
        """Bring the derived engines up to date (index/engines.py) once ``CATCH_UP_CHANGES`` wait
        for them (a search catches up before that), or drop them when the index fell below the
        threshold; then compact the change log up to what their files hold. The write itself is committed: a failure here is logged, and the next
        search catches up again."""
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
                with self._lock, transaction(self.conn):
                    compact(self.conn, saved)
        except Exception as exc:  # the engines are derived: SQLite holds the write
            log.warning("%s: the derived engines were not updated (%s)", self.location, exc)

    def replace_document(
        self,
        document: Document,
        text: str,
        chunks: Sequence[Chunk],
        vectors: Mapping[str, Vector],
        page_starts: Sequence[int] = (),
        original: bytes | None = None,
    ) -> None:
        self.replace_documents([DocumentWrite(document, text, chunks, vectors, page_starts, original)])

    def replace_documents(self, writes: Sequence[DocumentWrite]) -> None:
        name = self.meta("embedder")
        if name is None:
            raise CitelineError("Bind an embedder to the index before adding documents.")
        with self._lock, transaction(self.conn):
            for write in writes:
                self._replace(name, write)
            self._bump_generation()
        self._after_write()

    def _replace(self, name: str, write: DocumentWrite) -> None:
        document, chunks, vectors = write.document, write.chunks, write.vectors
        now = time.time()
        olds = self.conn.execute(
            "SELECT added_at, content_hash FROM documents WHERE id = ? OR (collection = ? AND source = ?)",
            (document.id, document.collection, document.source),
        ).fetchall()
        old = olds[0] if olds else None
        added_at, updated_at = (old[0] if old else now), now
        if write.keep_times:
            added_at, updated_at = document.added_at, document.updated_at
        old_hashes = self._remove(document.id, document.collection, document.source)
        if write.original is not None:
            self.conn.execute(
                "INSERT INTO blobs (content_hash, data) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (document.content_hash, write.original),
            )
        self.conn.execute(
            "INSERT INTO documents (id, collection, source, title, format, content_hash, size, mtime, "
            "page_count, metadata, text, page_starts, added_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                document.id,
                document.collection,
                document.source,
                document.title,
                document.format,
                document.content_hash,
                document.size,
                document.mtime,
                document.page_count,
                json.dumps(document.metadata),
                write.text,
                json.dumps(list(write.page_starts)),
                added_at,
                updated_at,
            ),
        )
        self.conn.executemany(
            "INSERT INTO doc_tags (document_id, key, value) VALUES (?, ?, ?)",
            [(document.id, k, v) for k, v in document.tags.items()],
        )
        self.conn.executemany(
            "INSERT INTO doc_acl (document_id, entry) VALUES (?, ?)",
            [(document.id, e) for e in set(document.acl)],
        )
        self.conn.executemany(
            "INSERT INTO embeddings (text_hash, embedder, vector) VALUES (?, ?, ?) "
            "ON CONFLICT(text_hash, embedder) DO NOTHING",
            [(h, name, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()],
        )
        self.conn.executemany(
            'INSERT INTO chunks (id, document_id, ordinal, start, "end", page, page_end, heading, kind, '
            "index_text, text_hash, token_count) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    c.id,
                    document.id,
                    c.ordinal,
                    c.start,
                    c.end,
                    c.page,
                    c.page_end,
                    json.dumps(list(c.heading_trail)),
                    c.kind,
                    c.index_text,
                    text_hash(c.index_text),
                    c.token_count,
                )
                for c in chunks
            ],
        )
        missing = self.conn.execute(
            "SELECT COUNT(*) FROM chunks c WHERE c.document_id = ? AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = ?)",
            (document.id, name),
        ).fetchone()[0]
        if missing:
            raise CitelineError(f"{document.source}: {missing} chunks have no vector; nothing was changed.")
        self._gc_embeddings(old_hashes, [r[1] for r in olds if r[1] != document.content_hash])

    def _remove(
        self, document_id: str, collection: str | None = None, source: str | None = None
    ) -> list[str]:
        ids = [document_id]
        if source is not None:
            ids += [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM documents WHERE collection = ? AND source = ?", (collection, source)
                )
            ]
        hashes: list[str] = []
        for doc_id in set(ids):
            hashes += [
                r[0]
                for r in self.conn.execute("SELECT text_hash FROM chunks WHERE document_id = ?", (doc_id,))
            ]
            self.conn.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
            self.conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return hashes

    def _gc_embeddings(self, hashes: Iterable[str], originals: Iterable[str] | None = None) -> None:
        """Drop vectors no chunk uses any more, and originals no document uses (after a remove or an
        edit): those of ``originals`` (content hashes), or when None every original (a sweep that
        reads every blob: check --repair)."""
        self.conn.executemany(
            "DELETE FROM embeddings WHERE text_hash = ? AND NOT EXISTS (SELECT 1 FROM chunks WHERE text_hash = ?)",
            [(h, h) for h in set(hashes)],
        )
        if originals is None:
            self.conn.execute(
                "DELETE FROM blobs WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.content_hash = blobs.content_hash)"
            )
            return
        self.conn.executemany(
            "DELETE FROM blobs WHERE content_hash = ? AND NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.content_hash = ?)",
            [(h, h) for h in set(originals)],
        )

    def update_access(self, document_id: str, tags: Mapping[str, str], acl: Iterable[str]) -> None:
        """Change a document's tags and ACL without touching its chunks."""
        with self._lock, transaction(self.conn):
            self.conn.execute("DELETE FROM doc_tags WHERE document_id = ?", (document_id,))
            self.conn.execute("DELETE FROM doc_acl WHERE document_id = ?", (document_id,))
            self.conn.executemany(
                "INSERT INTO doc_tags (document_id, key, value) VALUES (?, ?, ?)",
                [(document_id, k, v) for k, v in tags.items()],
            )
            self.conn.executemany(
                "INSERT INTO doc_acl (document_id, entry) VALUES (?, ?)", [(document_id, e) for e in set(acl)]
            )
            self._bump_generation()

    def remove_document(self, document_id: str) -> None:
        with self._lock, transaction(self.conn):
            originals = [
                r[0]
                for r in self.conn.execute("SELECT content_hash FROM documents WHERE id = ?", (document_id,))
            ]
            self._gc_embeddings(self._remove(document_id), originals)
            self._bump_generation()
        self._after_write()
