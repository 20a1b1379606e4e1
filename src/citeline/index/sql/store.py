"""The SQL store core: the Store contract (index/base.py) written once for both SQL stores.

Documents, chunks, vectors and writes here; meta, settings, keys and traces in records.py; the
spelling of each store in dialect.py. A store (index/sqlite/store.py, index/postgres/store.py)
adds its connections (the read and write contexts), its search, and the hooks below for what it
derives from the rows it writes: SQLite's change log and generation, PostgreSQL's tsvectors,
postings, BM25 totals and HNSW index.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from citeline.errors import CitelineError, EmbedderMismatchError
from citeline.filters import Filter
from citeline.index.base import DocumentWrite, EmbedderInfo, Problem, StoredFile, Vector
from citeline.index.sql import rows
from citeline.index.sql.dialect import Session, insert_sql
from citeline.index.sql.filters import filter_sql
from citeline.index.sql.records import SqlRecords
from citeline.index.sql.writes import PENDING_KEY, NewChunk, remove_documents, write_documents
from citeline.types import Chunk, Document

if TYPE_CHECKING:
    from citeline.index.sql.checks import Found


#: a chunk without a vector of the index's embedder: pending (searched by its fast vector)
_PENDING = (
    "NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash "
    "AND e.embedder = (SELECT value FROM meta WHERE key = 'embedder'))"
)


class SqlStore(SqlRecords):
    # -- what a store adds ------------------------------------------------------------------------

    @abstractmethod
    def _bump(self, s: Session, chunks: int = 0, tokens: int = 0) -> None:
        """Last in every write that changes documents: move the generation (and the totals BM25
        keeps, by the chunks and tokens added or removed)."""

    def _after_write(self) -> None:
        """After a write's commit (SQLite brings its derived engines up to date)."""

    def _prepare(self, writes: Sequence[DocumentWrite]) -> Any:
        """Work on a batch before its transaction (PostgreSQL tokenizes its chunks)."""
        return None

    @abstractmethod
    def _insert_chunks(self, s: Session, chunks: Sequence[NewChunk], prepared: Any) -> int:
        """Insert a batch's chunks and what the store derives from them; the tokens added."""

    def _vectors_added(self, s: Session, embedder: str, text_hashes: Sequence[str]) -> None:
        """After ``add_vectors`` wrote vectors of ``embedder`` (in the same transaction)."""

    def _embedder_changed(self, s: Session, name: str, dim: int) -> None:
        """After the index's embedder was set (bound, or swapped to ``name``), in that transaction."""

    @abstractmethod
    def _size_bytes(self) -> int:
        """What the index takes on disk."""

    @abstractmethod
    def _schema_version(self) -> int: ...

    # -- check (index/sql/checks.py) ---------------------------------------------------------------

    def check(self, repair: bool = False) -> list[Problem]:
        from citeline.index.sql.checks import check_store

        return check_store(self, repair)

    def check_probe(
        self, name: str, s: Session, info: EmbedderInfo | None, found: Sequence[Found]
    ) -> list[Found]:
        """The problems of the check table's probe ``name`` (``found``: those found before it)."""
        return []

    @abstractmethod
    def repair_derived(self, s: Session, steps: set[str], info: EmbedderInfo | None) -> None:
        """Last in a repair's transaction: rebuild what the store derives (``steps``: all of the
        repair's, the store's own among them) and move the generation."""

    def after_repair(self, steps: set[str], info: EmbedderInfo | None) -> None:
        """After the repair's commit: rebuild what lives outside the transaction."""

    # -- the embedder -----------------------------------------------------------------------------

    def bind_embedder(self, name: str, version: str, dim: int) -> None:
        """Record the index's embedder on first use; EmbedderMismatchError for another one later."""
        info = self.embedder_info()
        if info is None:
            with self.writing() as s:
                if self._meta(s, "embedder") is None:  # another process may have bound it meanwhile
                    self._set_embedder(s, name, version, dim)
                    self._embedder_changed(s, name, dim)
            info = self.embedder_info()
        if info is not None and (info.name, info.version, info.dim) != (name, version, dim):
            raise EmbedderMismatchError(f"{info.name} ({info.version})", name)

    def swap_embedder(self, name: str, version: str, dim: int) -> None:
        """Make ``name`` the active embedder in one transaction and drop the other vectors."""
        with self.writing() as s:
            missing = s.value(
                "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.text_hash = c.text_hash AND e.embedder = ?)",
                (name,),
            )
            if missing:
                raise CitelineError(
                    f"Reindex incomplete: {missing} chunks lack '{name}' vectors; nothing swapped."
                )
            s.execute("DELETE FROM embeddings WHERE embedder <> ?", (name,))
            s.execute("DELETE FROM meta WHERE key = ?", (PENDING_KEY,))
            self._set_embedder(s, name, version, dim)
            self._embedder_changed(s, name, dim)
            self._bump(s)
        self._after_write()

    # -- documents --------------------------------------------------------------------------------

    def _documents(self, s: Session, found: Sequence[rows.Row]) -> list[Document]:
        """Documents of ``found`` (rows of rows.document_columns), their tags and ACLs read in a
        few queries (not two per row)."""
        d = self.dialect
        tags: dict[str, dict[str, str]] = {r[0]: {} for r in found}
        acl: dict[str, list[str]] = {r[0]: [] for r in found}
        for part in d.batches(list(tags)):
            cond, params = d.in_list("document_id", part)
            for doc_id, key, value in s.rows(
                f"SELECT document_id, key, value FROM doc_tags WHERE {cond}", params
            ):
                tags[doc_id][key] = value
            for doc_id, entry in s.rows(
                f"SELECT document_id, entry FROM doc_acl WHERE {cond} ORDER BY {d.bytewise('entry')}", params
            ):
                acl[doc_id].append(entry)
        return [rows.document(r, tags[r[0]], acl[r[0]]) for r in found]

    def _find(self, where: str, params: Sequence[Any]) -> Document | None:
        with self.reading() as s:
            found = s.rows(
                f"SELECT {rows.document_columns(self.dialect)} FROM documents WHERE {where} LIMIT 1", params
            )
            return self._documents(s, found)[0] if found else None

    def get_document(self, document_id: str) -> Document | None:
        return self._find(f"{self.dialect.document_id} = ?", (document_id,))

    def _documents_by_id(self, s: Session, document_ids: Iterable[str]) -> dict[str, Document]:
        d, out = self.dialect, dict[str, Document]()
        for part in d.batches(list(dict.fromkeys(document_ids))):
            cond, params = d.in_list(d.document_id, part)
            found = s.rows(f"SELECT {rows.document_columns(d)} FROM documents WHERE {cond}", params)
            out.update((doc.id, doc) for doc in self._documents(s, found))
        return out

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        with self.reading() as s:
            return self._documents_by_id(s, document_ids)

    def stored_files(self, collection: str) -> list[StoredFile]:
        d = self.dialect
        with self.reading(snapshot=True) as s:  # the documents, their tags and ACLs as of one moment
            tags: dict[str, dict[str, str]] = {}
            for doc_id, key, value in s.rows(
                "SELECT t.document_id, t.key, t.value FROM doc_tags t JOIN documents d "
                f"ON d.{d.document_id} = t.document_id WHERE d.collection = ?",
                (collection,),
            ):
                tags.setdefault(doc_id, {})[key] = value
            acl: dict[str, list[str]] = {}
            for doc_id, entry in s.rows(
                f"SELECT a.document_id, a.entry FROM doc_acl a JOIN documents d ON d.{d.document_id} = a.document_id "
                f"WHERE d.collection = ? ORDER BY {d.bytewise('a.entry')}",
                (collection,),
            ):
                acl.setdefault(doc_id, []).append(entry)
            found = s.rows(
                f"SELECT {d.document_id}, source, content_hash, size, mtime, updated_at, "
                f"{d.json_string('metadata', 'path')}, {d.json_string('metadata', 'pipeline')}, "
                f"{d.json_has('metadata', 'uploaded_by')} FROM documents WHERE collection = ?",
                (collection,),
            )
        return [StoredFile.from_row(r, tags.get(r[0], {}), acl.get(r[0], ())) for r in found]

    def find_document(self, source: str, collection: str | None = None) -> Document | None:
        """By source (in ``collection``, or any collection when None), else by absolute file path."""
        scope, extra = (" AND collection = ?", [collection]) if collection is not None else ("", [])
        by_path = f"{self.dialect.json_text('metadata', 'path')} = ?{scope}"
        return self._find(f"source = ?{scope} ORDER BY collection", [source, *extra]) or self._find(
            by_path, [source, *extra]
        )

    def documents(self, flt: Filter, limit: int | None = None, offset: int = 0) -> list[Document]:
        d = self.dialect
        cond, params = filter_sql(flt, d.document_id, d)
        with self.reading() as s:
            found = s.rows(
                f"SELECT {rows.document_columns(d)} FROM documents {'WHERE ' + cond if cond else ''} "
                "ORDER BY collection, source LIMIT ? OFFSET ?",
                [*params, d.no_limit if limit is None else limit, offset],
            )
            return self._documents(s, found)

    def count_documents(self, flt: Filter) -> int:
        cond, params = filter_sql(flt, self.dialect.document_id, self.dialect)
        with self.reading() as s:
            return int(s.value(f"SELECT COUNT(*) FROM documents {'WHERE ' + cond if cond else ''}", params))

    def _document_value(self, column: str, document_id: str) -> Any:
        with self.reading() as s:
            return s.value(
                f"SELECT {column} FROM documents WHERE {self.dialect.document_id} = ?", (document_id,)
            )

    def document_text(self, document_id: str) -> str:
        value = self._document_value("text", document_id)
        return "" if value is None else str(value)

    def page_starts(self, document_id: str) -> list[int]:
        value = self._document_value("page_starts", document_id)
        return [] if value is None else rows.page_starts(value)

    def original(self, document_id: str) -> bytes | None:
        """The file's bytes as they were added (None when not kept). Two queries, not a join:
        PostgreSQL keeps originals by content hash, away from their documents."""
        content_hash = self._document_value("content_hash", document_id)
        if content_hash is None:
            return None
        with self.reading() as s:
            data = s.value("SELECT data FROM blobs WHERE content_hash = ?", (content_hash,))
        return None if data is None else bytes(data)

    def document_chunks(self, document_id: str) -> list[str]:
        with self.reading() as s:
            found = s.rows(
                f"SELECT {self.dialect.chunk_id} FROM chunks WHERE document_id = ? ORDER BY ordinal",
                (document_id,),
            )
        return [r[0] for r in found]

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]:
        d, out = self.dialect, dict[str, tuple[Chunk, Document]]()
        with self.reading() as s:
            for part in d.batches(list(dict.fromkeys(chunk_ids))):
                cond, params = d.in_list(f"c.{d.chunk_id}", part)
                found = s.rows(
                    f"SELECT {rows.chunk_columns(d)} FROM chunks c JOIN documents d "
                    f"ON d.{d.document_id} = c.document_id WHERE {cond}",
                    params,
                )
                docs = self._documents_by_id(s, (r[1] for r in found))  # a few queries, not three a hit
                out.update((r[0], (rows.chunk(r), docs[r[1]])) for r in found if r[1] in docs)
        return out

    def count_chunks(self, flt: Filter) -> int:
        cond, params = filter_sql(flt, "c.document_id", self.dialect)
        with self.reading() as s:
            return int(s.value(f"SELECT COUNT(*) FROM chunks c {'WHERE ' + cond if cond else ''}", params))

    # -- writes -----------------------------------------------------------------------------------

    def replace_document(  # noqa: PLR0913 (the Store contract's signature)
        self,
        document: Document,
        text: str,
        chunks: Sequence[Chunk],
        vectors: Mapping[str, Vector],
        page_starts: Sequence[int] = (),
        original: bytes | None = None,
    ) -> bool:
        return document.id in self.replace_documents(
            [DocumentWrite(document, text, tuple(chunks), vectors, tuple(page_starts), original)]
        )

    def replace_documents(self, writes: Sequence[DocumentWrite]) -> frozenset[str]:
        name = self.meta("embedder")
        if name is None:
            raise CitelineError("Bind an embedder to the index before adding documents.")
        prepared = self._prepare(writes)
        with self.writing() as s:
            insert = partial(self._insert_chunks, prepared=prepared)
            chunks, tokens, existed = write_documents(s, name, writes, insert)
            self._bump(s, chunks, tokens)
        self._after_write()
        return existed

    def remove_document(self, document_id: str) -> None:
        with self.writing() as s:
            removed = remove_documents(s, [document_id])
            self._bump(s, -removed.chunks, -removed.tokens)
        self._after_write()

    def update_access(self, document_id: str, tags: Mapping[str, str], acl: Iterable[str]) -> None:
        """Change a document's tags and ACL without touching its chunks."""
        with self.writing() as s:
            s.execute("DELETE FROM doc_tags WHERE document_id = ?", (document_id,))
            s.execute("DELETE FROM doc_acl WHERE document_id = ?", (document_id,))
            s.many(
                insert_sql("doc_tags", ["document_id", "key", "value"]),
                [(document_id, k, v) for k, v in tags.items()],
            )
            s.many(
                insert_sql("doc_acl", ["document_id", "entry"]), [(document_id, e) for e in sorted(set(acl))]
            )
            self._bump(s)

    # -- vectors ----------------------------------------------------------------------------------

    def cached_vectors(self, text_hashes: Iterable[str], embedder: str | None = None) -> dict[str, Vector]:
        """Vectors already computed (by ``embedder``, default the index's), keyed by indexed-text hash."""
        d, out = self.dialect, dict[str, Vector]()
        with self.reading() as s:
            name = embedder or self._meta(s, "embedder")
            for part in d.batches(list(dict.fromkeys(text_hashes))):
                cond, params = d.in_list("text_hash", part)
                found = s.rows(
                    f"SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND {cond}", [name, *params]
                )
                out.update((h, d.vector_value(v)) for h, v in found)
        return out

    def all_text_hashes(self) -> list[tuple[str, str]]:
        """(text_hash, index_text) of every distinct chunk text, for re-embedding."""
        with self.reading() as s:
            return [
                (r[0], r[1])
                for r in s.rows("SELECT text_hash, MIN(index_text) FROM chunks GROUP BY text_hash")
            ]

    def add_vectors(self, embedder: str, vectors: Mapping[str, Vector]) -> None:
        """Store vectors of another embedder side by side (the active one keeps serving)."""
        d = self.dialect
        with self.writing() as s:
            s.many(
                insert_sql(
                    "embeddings",
                    ["text_hash", "embedder", "vector"],
                    "ON CONFLICT (text_hash, embedder) DO UPDATE SET vector = excluded.vector",
                ),
                [(h, embedder, d.vector_param(v)) for h, v in vectors.items()],
            )
            self._vectors_added(s, embedder, list(vectors))

    # -- progressive indexing (see citeline.retrieval.progressive) --------------------------------

    def pending_embedder(self) -> str | None:
        return self.meta(PENDING_KEY)

    def unembedded(self, limit: int) -> list[tuple[str, str]]:
        with self.reading() as s:
            return [
                (r[0], r[1])
                for r in s.rows(
                    "SELECT c.text_hash, MIN(c.index_text) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM "
                    "embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = "
                    "(SELECT value FROM meta WHERE key = 'embedder')) GROUP BY c.text_hash "
                    "ORDER BY c.text_hash LIMIT ?",
                    (limit,),
                )
            ]

    def finish_pending(self) -> bool:
        with self.writing() as s:
            fast = self._meta(s, PENDING_KEY)
            if fast is None:
                return True
            if s.value(f"SELECT COUNT(*) FROM chunks c WHERE {_PENDING}"):
                return False
            s.execute("DELETE FROM embeddings WHERE embedder = ?", (fast,))
            s.execute("DELETE FROM meta WHERE key = ?", (PENDING_KEY,))
            self._bump(s)
        self._after_write()
        return True

    def stats(self) -> dict[str, Any]:
        info = self.embedder_info()
        with self.reading() as s:
            documents = s.value("SELECT COUNT(*) FROM documents")
            vectors = s.value("SELECT COUNT(*) FROM embeddings")
            fast = self._meta(s, PENDING_KEY)
            pending = s.value(f"SELECT COUNT(*) FROM chunks c WHERE {_PENDING}") if fast else 0
        chunks = self.count_chunks(Filter.admin())
        return {
            "index": self.location,
            "documents": int(documents),
            "chunks": chunks,
            # progressive indexing: chunks searched with the full vectors, and those still waiting
            "full_vectors": chunks - int(pending),
            "pending_vectors": {"chunks": int(pending), "embedder": fast} if fast else None,
            "vectors": int(vectors),
            "index_bytes": self._size_bytes(),
            "schema_version": self._schema_version(),
            "embedder": None
            if info is None
            else {"name": info.name, "version": info.version, "dim": info.dim},
        }
