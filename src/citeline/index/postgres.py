"""The shared store: PostgreSQL (the source of truth) + pgvector (HNSW, cosine) + full-text search.

Chosen by an index location that is a URL: ``postgresql://user@host:5432/db`` (or ``postgres://``).
Put the password in ~/.pgpass or PGPASSWORD rather than the URL; wherever it is, citeline never
prints it (``location`` and every error carry the redacted URL).

Writes run in one transaction each, holding the writer lock (pg_advisory_xact_lock): writers take
turns, as with SQLite, while readers never wait and see a document either as it was or as it is
now. Parsing and embedding, the expensive part of ingestion, happen before and in parallel.
Schema: postgres_schema.py (Citus-ready); search: postgres_search.py; records: postgres_records.py.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.errors import CitelineError, EmbedderMismatchError, NotAnIndexError, SchemaTooNewError
from citeline.index.base import DocumentWrite, EmbedderInfo, Vector
from citeline.index.postgres_schema import (
    ITERATIVE_SCAN_PGVECTOR,
    MIN_PGVECTOR,
    SCHEMA_VERSION,
    TABLES,
    hnsw_index_sql,
    migrate,
    parse_version,
)
from citeline.index.postgres_search import PostgresSearch
from citeline.index.postgres_text import as_array, tokenizer
from citeline.models import Chunk, Document
from citeline.retrieval.filters import Filter
from citeline.settings import Settings, redact_url

if TYPE_CHECKING:
    from citeline.registry import BuildContext

_DOC_COLUMNS = (
    "document_id, source, title, format, content_hash, size, mtime, page_count, metadata, added_at, "
    "updated_at, collection"
)
_MIGRATION_LOCK = 0x6369_7465_6D69_6772


def _error(url: str, exc: BaseException) -> CitelineError:
    """A database error as a user error, the password removed from anything it says."""
    return CitelineError(f"PostgreSQL at {redact_url(url)}: {redact_url(str(exc), secret_of=url)}")


class PostgresStore(PostgresSearch):
    def __init__(
        self, url: str, *, create: bool = True, read_only: bool = False, settings: Settings | None = None
    ) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url.replace("postgresql+psycopg://", "postgresql://", 1)
        self.location = redact_url(self.url)
        self.read_only = read_only
        self._df_cache = OrderedDict()
        self._df_lock = threading.Lock()
        self.configure(settings or Settings())
        options = "-c default_transaction_read_only=on" if read_only else ""
        self.pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            kwargs={
                "autocommit": True,
                "application_name": "citeline",
                **({"options": options} if options else {}),
            },
            configure=self._configure_connection,
            open=False,
            name="citeline",
        )
        try:
            self._open_schema(create)
            self.pool.open(wait=True, timeout=30.0)
        except psycopg.Error as exc:
            self.pool.close()
            raise _error(self.url, exc) from None
        except BaseException:
            self.pool.close()
            raise

    def configure(self, settings: Settings) -> None:
        """Apply the pg_* settings (pool size, exact-scan thresholds, ef_search)."""
        self.pool_size = settings.pg_pool_size
        self.exact_scan_rows = settings.pg_exact_scan_rows
        self.exact_scan_fraction = settings.pg_exact_scan_fraction
        self.ef_search = settings.pg_hnsw_ef_search
        pool = getattr(self, "pool", None)
        if pool is not None and pool.max_size != self.pool_size:
            pool.resize(min_size=min(pool.min_size, self.pool_size), max_size=self.pool_size)

    @staticmethod
    def _configure_connection(conn: Any) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def _open_schema(self, create: bool) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True, connect_timeout=30) as conn:
            tables = {
                r[0]
                for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                )
            }
            if "citeline_schema" not in tables:
                clash = sorted(set(TABLES) & tables)
                if clash:
                    raise NotAnIndexError(self.location, f"the database has tables named {', '.join(clash)}")
                if self.read_only or not create:
                    raise NotAnIndexError(self.location, "no index here yet; `citeline add` creates one")
            self._check_pgvector(conn)
            current = self._schema_version(conn) if "citeline_schema" in tables else 0
            if current > SCHEMA_VERSION:
                raise SchemaTooNewError(self.location, current, SCHEMA_VERSION)
            if current < SCHEMA_VERSION:
                if self.read_only:
                    raise CitelineError(
                        f"{self.location}: the index needs a schema upgrade but is read-only."
                    )
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                    conn.execute(
                        "CREATE TABLE IF NOT EXISTS citeline_schema "
                        "(version integer PRIMARY KEY, applied_at double precision NOT NULL)"
                    )
                    migrate(conn, self._schema_version(conn))  # another process may have migrated
            version = self._one_in(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            self.iterative_scan = parse_version(str(version)) >= ITERATIVE_SCAN_PGVECTOR

    @staticmethod
    def _one_in(conn: Any, sql: str) -> Any:
        row = conn.execute(sql).fetchone()
        return None if row is None else row[0]

    def _schema_version(self, conn: Any) -> int:
        return int(self._one_in(conn, "SELECT coalesce(max(version), 0) FROM citeline_schema") or 0)

    def _check_pgvector(self, conn: Any) -> None:
        import psycopg

        if self._one_in(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'") is None:
            available = self._one_in(
                conn, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            )
            if available is None:
                raise CitelineError(
                    f"{self.location}: the server has no pgvector extension; install pgvector >= "
                    f"{'.'.join(map(str, MIN_PGVECTOR))} on it."
                )
            if self.read_only:
                raise CitelineError(f"{self.location}: run CREATE EXTENSION vector first (read-only here).")
            try:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise CitelineError(
                    f"{self.location}: could not create the pgvector extension ({exc.diag.message_primary}); "
                    "ask the database owner to run CREATE EXTENSION vector."
                ) from None
        version = str(self._one_in(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        if parse_version(version) < MIN_PGVECTOR:
            raise CitelineError(
                f"{self.location}: pgvector {version} is too old; citeline needs >= "
                f"{'.'.join(map(str, MIN_PGVECTOR))} (HNSW)."
            )

    def close(self) -> None:
        self.pool.close()

    # -- index metadata -------------------------------------------------------------------------

    def embedder_info(self) -> EmbedderInfo | None:
        with self._read() as conn:
            rows = dict(conn.execute("SELECT key, value FROM meta WHERE key LIKE 'embedder%%'").fetchall())
        if "embedder" not in rows:
            return None
        return EmbedderInfo(
            rows["embedder"], rows.get("embedder_version", ""), int(rows.get("embedder_dim", 0))
        )

    def bind_embedder(self, name: str, version: str, dim: int) -> None:
        info = self.embedder_info()
        if info is None:
            with self._write() as conn:
                if self._one_in(conn, "SELECT value FROM meta WHERE key = 'embedder'") is None:
                    self._set_meta(conn, "embedder", name)
                    self._set_meta(conn, "embedder_version", version)
                    self._set_meta(conn, "embedder_dim", str(dim))
                    conn.execute(hnsw_index_sql(dim))
            info = self.embedder_info()
        if info is not None and (info.name, info.version, info.dim) != (name, version, dim):
            raise EmbedderMismatchError(f"{info.name} ({info.version})", name)

    # -- documents ------------------------------------------------------------------------------

    def _documents(self, conn: Any, rows: Sequence[tuple[Any, ...]]) -> list[Document]:
        ids = [r[0] for r in rows]
        tags: dict[str, dict[str, str]] = {i: {} for i in ids}
        acl: dict[str, list[str]] = {i: [] for i in ids}
        if ids:
            for doc_id, key, value in conn.execute(
                "SELECT document_id, key, value FROM doc_tags WHERE document_id = ANY(%s)", (ids,)
            ):
                tags[doc_id][key] = value
            for doc_id, entry in conn.execute(
                'SELECT document_id, entry FROM doc_acl WHERE document_id = ANY(%s) ORDER BY entry COLLATE "C"',
                (ids,),
            ):
                acl[doc_id].append(entry)
        return [
            Document(
                id=r[0],
                source=r[1],
                title=r[2],
                format=r[3],
                content_hash=r[4],
                size=r[5],
                mtime=r[6],
                page_count=r[7],
                tags=tags[r[0]],
                acl=tuple(acl[r[0]]),
                metadata=r[8] if isinstance(r[8], dict) else json.loads(r[8]),
                added_at=r[9],
                updated_at=r[10],
                collection=r[11],
            )
            for r in rows
        ]

    def _find(self, where: str, params: Sequence[Any]) -> Document | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE {where} LIMIT 1", params
            ).fetchone()
            return None if row is None else self._documents(conn, [row])[0]

    def get_document(self, document_id: str) -> Document | None:
        return self._find("document_id = %s", (document_id,))

    def find_document(self, source: str, collection: str | None = None) -> Document | None:
        scope, extra = ("AND collection = %s", [collection]) if collection is not None else ("", [])
        return self._find(f"source = %s {scope} ORDER BY collection", [source, *extra]) or self._find(
            f"metadata->>'path' = %s {scope}", [source, *extra]
        )

    def documents(self, flt: Filter, limit: int | None = None, offset: int = 0) -> list[Document]:
        cond, params = self._filter(flt, "document_id")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents {'WHERE ' + cond if cond else ''} "
                "ORDER BY collection, source LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
            return self._documents(conn, rows)

    def count_documents(self, flt: Filter) -> int:
        cond, params = self._filter(flt, "document_id")
        with self._read() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM documents {'WHERE ' + cond if cond else ''}", params
            ).fetchone()
        return int(row[0])

    def document_text(self, document_id: str) -> str:
        value = self._one("SELECT text FROM documents WHERE document_id = %s", (document_id,))
        return "" if value is None else str(value)

    def page_starts(self, document_id: str) -> list[int]:
        value = self._one("SELECT page_starts FROM documents WHERE document_id = %s", (document_id,))
        return [] if value is None else list(value if isinstance(value, list) else json.loads(value))

    def original(self, document_id: str) -> bytes | None:
        content_hash = self._one("SELECT content_hash FROM documents WHERE document_id = %s", (document_id,))
        if content_hash is None:
            return None
        data = self._one("SELECT data FROM blobs WHERE content_hash = %s", (content_hash,))
        return None if data is None else bytes(data)

    def replace_document(
        self,
        document: Document,
        text: str,
        chunks: Sequence[Chunk],
        vectors: Mapping[str, Vector],
        page_starts: Sequence[int] = (),
        original: bytes | None = None,
    ) -> None:
        self.replace_documents(
            [DocumentWrite(document, text, tuple(chunks), vectors, tuple(page_starts), original)]
        )

    def replace_documents(self, writes: Sequence[DocumentWrite]) -> None:
        from citeline.index.postgres_write import write_documents

        name = self.meta("embedder")
        if name is None:
            raise CitelineError("Bind an embedder to the index before adding documents.")
        token_lists = tokenizer().tokenize([c.index_text for w in writes for c in w.chunks])
        with self._write() as conn:
            chunks, tokens = write_documents(conn, name, writes, token_lists)
            self._bump(conn, chunks, tokens)

    def update_access(self, document_id: str, tags: Mapping[str, str], acl: Iterable[str]) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM doc_tags WHERE document_id = %s", (document_id,))
            conn.execute("DELETE FROM doc_acl WHERE document_id = %s", (document_id,))
            if tags:
                conn.cursor().executemany(
                    "INSERT INTO doc_tags (document_id, key, value) VALUES (%s, %s, %s)",
                    [(document_id, k, v) for k, v in tags.items()],
                )
            if acl:
                conn.cursor().executemany(
                    "INSERT INTO doc_acl (document_id, entry) VALUES (%s, %s)",
                    [(document_id, e) for e in sorted(set(acl))],
                )
            self._bump(conn)

    def remove_document(self, document_id: str) -> None:
        from citeline.index.postgres_write import remove_documents

        with self._write() as conn:
            chunks, tokens = remove_documents(conn, [document_id])
            self._bump(conn, -chunks, -tokens)

    def document_chunks(self, document_id: str) -> list[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT chunk_id FROM chunks WHERE document_id = %s ORDER BY ordinal", (document_id,)
            ).fetchall()
        return [r[0] for r in rows]

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                'SELECT c.chunk_id, c.document_id, c.ordinal, c.start, c."end", c.page, c.page_end, c.heading, '
                'c.kind, c.index_text, c.token_count, substr(d.text, c.start + 1, c."end" - c.start) '
                "FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE c.chunk_id = ANY(%s)",
                (ids,),
            ).fetchall()
            doc_rows = conn.execute(
                f"SELECT {_DOC_COLUMNS} FROM documents WHERE document_id = ANY(%s)",
                (list({r[1] for r in rows}),),
            ).fetchall()
            docs = {d.id: d for d in self._documents(conn, doc_rows)}
        out: dict[str, tuple[Chunk, Document]] = {}
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

    # -- vectors --------------------------------------------------------------------------------

    def cached_vectors(self, text_hashes: Iterable[str], embedder: str | None = None) -> dict[str, Vector]:
        name = embedder or self.meta("embedder")
        hashes = list(dict.fromkeys(text_hashes))
        if not hashes:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT text_hash, vector FROM embeddings WHERE embedder = %s AND text_hash = ANY(%s)",
                (name, hashes),
            ).fetchall()
        return {h: as_array(v) for h, v in rows}

    def all_text_hashes(self) -> list[tuple[str, str]]:
        with self._read() as conn:
            rows = conn.execute("SELECT text_hash, min(index_text) FROM chunks GROUP BY text_hash").fetchall()
        return [(r[0], r[1]) for r in rows]

    def add_vectors(self, embedder: str, vectors: Mapping[str, Vector]) -> None:
        with self._write() as conn:
            conn.cursor().executemany(
                "INSERT INTO embeddings (text_hash, embedder, vector) VALUES (%s, %s, %s) "
                "ON CONFLICT (text_hash, embedder) DO UPDATE SET vector = excluded.vector",
                [(h, embedder, np.asarray(v, dtype=np.float32)) for h, v in vectors.items()],
            )

    def swap_embedder(self, name: str, version: str, dim: int) -> None:
        with self._write() as conn:
            missing = self._one_in_params(
                conn,
                "SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e "
                "WHERE e.text_hash = c.text_hash AND e.embedder = %s)",
                (name,),
            )
            if missing:
                raise CitelineError(
                    f"Reindex incomplete: {missing} chunks lack '{name}' vectors; nothing swapped."
                )
            conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
            conn.execute(
                "UPDATE chunks c SET embedding = e.vector FROM embeddings e "
                "WHERE e.text_hash = c.text_hash AND e.embedder = %s",
                (name,),
            )
            conn.execute("DELETE FROM embeddings WHERE embedder <> %s", (name,))
            self._set_meta(conn, "embedder", name)
            self._set_meta(conn, "embedder_version", version)
            self._set_meta(conn, "embedder_dim", str(dim))
            conn.execute(hnsw_index_sql(dim))
            self._bump(conn)

    @staticmethod
    def _one_in_params(conn: Any, sql: str, params: Sequence[Any]) -> Any:
        row = conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def stats(self) -> dict[str, Any]:
        info = self.embedder_info()
        with self._read() as conn:
            documents = self._one_in(conn, "SELECT count(*) FROM documents")
            vectors = self._one_in(conn, "SELECT count(*) FROM embeddings")
            size = self._one_in_params(
                conn,
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "WHERE c.relname = ANY(%s) AND c.relnamespace = current_schema()::regnamespace",
                (list(TABLES),),
            )
            totals = self._totals(conn)
        return {
            "index": self.location,
            "documents": int(documents),
            "chunks": totals.get("chunks", 0),
            "vectors": int(vectors),
            "index_bytes": int(size),
            "schema_version": SCHEMA_VERSION,
            "embedder": None
            if info is None
            else {"name": info.name, "version": info.version, "dim": info.dim},
        }


def postgres_factory(
    context: BuildContext | None, location: str | None, *, create: bool = True, read_only: bool = False
) -> PostgresStore:
    """The PostgreSQL store at the URL ``location`` (postgresql://user@host:port/db)."""
    from citeline.settings import load_settings

    if not location:
        raise CitelineError("The postgresql store needs a URL: postgresql://user@host:5432/db")
    settings = context.settings if context is not None else load_settings(location)
    return PostgresStore(location, create=create, read_only=read_only, settings=settings)
