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

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg  # a missing extra fails here: the registry names citeline[postgres]
from psycopg_pool import ConnectionPool, PoolTimeout

from citeline.errors import CitelineError, EmbedderMismatchError
from citeline.index.base import DocumentWrite, EmbedderInfo, Problem, Vector
from citeline.index.postgres.connection import unreachable_error
from citeline.index.postgres.documents import PostgresDocuments
from citeline.index.postgres.schema import SCHEMA_VERSION, TABLES, hnsw_index_sql, open_schema
from citeline.index.postgres.text import as_array, tokenizer
from citeline.models import Chunk, Document
from citeline.settings import Settings, redact_url

if TYPE_CHECKING:
    from citeline.registry import BuildContext


def _error(url: str, exc: BaseException) -> CitelineError:
    """A database error as a user error, the password removed from anything it says."""
    return CitelineError(f"PostgreSQL at {redact_url(url)}: {redact_url(str(exc), secret_of=url)}")


class PostgresStore(PostgresDocuments):
    def __init__(
        self, url: str, *, create: bool = True, read_only: bool = False, settings: Settings | None = None
    ) -> None:
        self.url = url.replace("postgresql+psycopg://", "postgresql://", 1)
        self.location = redact_url(self.url)
        self.read_only = read_only
        self._df_cache = OrderedDict()
        self._df_lock = threading.Lock()
        self.configure(settings or Settings())
        options = "-c default_transaction_read_only=on" if read_only else ""
        # check: a pooled connection is tried (an empty query) before it is handed out, so one
        # that a server restart or a failover broke is replaced instead of failing the request
        self.pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=self.pool_size,
            timeout=self.connect_timeout_s,
            check=ConnectionPool.check_connection,
            # the pool reconnects in the background with exponential backoff (1, 2, 4... s) for
            # reconnect_timeout, then gives up and the next request tries at once: bounded by the
            # connect timeout, a server back after an outage is used again within seconds
            # (psycopg_pool's default of 5 minutes let the backoff grow to minutes)
            reconnect_timeout=self.connect_timeout_s,
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
            self.iterative_scan = open_schema(
                self.url, self.location, create, read_only, max(2, round(self.connect_timeout_s))
            )
            self.pool.open(wait=True, timeout=self.connect_timeout_s)
        except (psycopg.Error, PoolTimeout) as exc:
            self.pool.close()
            # a server that is down, starting or restarting: exit code 4, run again (README)
            unreachable = unreachable_error(exc, self.url, self.location)
            raise (unreachable or _error(self.url, exc)) from None
        except BaseException:
            self.pool.close()
            raise

    def configure(self, settings: Settings) -> None:
        """Apply the pg_* settings (pool size, exact-scan thresholds, ef_search) and how long a
        write waits for another writer (lock_timeout_s)."""
        self.pool_size = settings.pg_pool_size
        self.exact_scan_rows = settings.pg_exact_scan_rows
        self.exact_scan_fraction = settings.pg_exact_scan_fraction
        self.ef_search = settings.pg_hnsw_ef_search
        self.lock_timeout_ms = round(settings.lock_timeout_s * 1000)
        self.connect_timeout_s = settings.pg_connect_timeout_s
        pool = getattr(self, "pool", None)
        if pool is not None:
            pool.timeout = pool.reconnect_timeout = self.connect_timeout_s
        if pool is not None and pool.max_size != self.pool_size:
            pool.resize(min_size=min(pool.min_size, self.pool_size), max_size=self.pool_size)

    @staticmethod
    def _configure_connection(conn: Any) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def close(self) -> None:
        self.pool.close()

    def check(self, repair: bool = False) -> list[Problem]:
        from citeline.index.postgres.checks import check_store

        return check_store(self, repair)

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Load many documents at once: the HNSW index is dropped while loading and built once at
        the end (pgvector's advice: much faster than maintaining it row by row). Dense searches
        meanwhile scan exactly: correct, only slower. Used by migrate and Ray ingestion into an
        empty index."""
        with self._write() as conn:
            conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        try:
            yield
        finally:
            dim = self._dim()
            if dim:
                with self._write() as conn:
                    conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
                    conn.execute(hnsw_index_sql(dim))

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
        from citeline.index.postgres.write import write_documents

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
        from citeline.index.postgres.write import remove_documents

        with self._write() as conn:
            chunks, tokens = remove_documents(conn, [document_id])
            self._bump(conn, -chunks, -tokens)

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
    def _one_in(conn: Any, sql: str) -> Any:
        row = conn.execute(sql).fetchone()
        return None if row is None else row[0]

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
