"""The shared store: PostgreSQL (the source of truth) + pgvector (HNSW, cosine) + full-text search.

Chosen by an index location that is a URL: ``postgresql://user@host:5432/db`` (or ``postgres://``).
Put the password in ~/.pgpass or PGPASSWORD rather than the URL; wherever it is, citeline never
prints it (``location`` and every error carry the redacted URL).

Writes run in one transaction each, holding the writer lock (pg_advisory_xact_lock): writers take
turns, as with SQLite, while readers never wait and see a document either as it was or as it is
now. Parsing and embedding, the expensive part of ingestion, happen before and in parallel.
What it shares with the embedded store is in index/sql/; here: the pool and its settings, bulk
loads, and what it derives from the rows it writes (write.py). Schema: schema.py (Citus-ready);
search: search.py; connections and their errors: connection.py.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

import psycopg  # a missing extra fails here: the registry names citeline[postgres]
from psycopg_pool import ConnectionPool, PoolTimeout

from citeline.errors import CitelineError
from citeline.index.base import DocumentWrite, EmbedderInfo
from citeline.index.postgres.connection import login_error, unreachable_error
from citeline.index.postgres.schema import SCHEMA_VERSION, TABLES, hnsw_index_sql, open_schema
from citeline.index.postgres.search import PostgresSearch
from citeline.index.postgres.write import insert_chunks, rebuild_keyword
from citeline.index.sql.dialect import POSTGRES, Session
from citeline.index.sql.fts5 import tokenizer
from citeline.index.sql.writes import NewChunk
from citeline.settings import Settings
from citeline.url_secrets import redact_url

if TYPE_CHECKING:
    from citeline.build_context import BuildContext


def _error(url: str, exc: BaseException) -> CitelineError:
    """A database error as a user error, the password removed from anything it says."""
    return CitelineError(f"PostgreSQL at {redact_url(url)}: {redact_url(str(exc), secret_of=url)}")


class PostgresStore(PostgresSearch):
    dialect = POSTGRES

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
            refused = login_error(exc, self.url, self.location)  # exit code 1: will not pass later
            unreachable = unreachable_error(exc, self.url, self.location)
            raise (refused or unreachable or _error(self.url, exc)) from None
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
        except BaseException:
            # the load stopped (the server went away, an error, ^C): build the index if the server
            # still lets us, without hiding why the load stopped; else the next add builds it
            with suppress(CitelineError, psycopg.Error, PoolTimeout):
                self.ensure_vector_index()
            raise
        self.ensure_vector_index()

    def ensure_vector_index(self) -> bool:
        """Build the HNSW index when it is missing (a bulk load that was interrupted); True when it
        was built. Every add ends with it: a re-add after an interrupted load leaves it whole."""
        dim = self._dim()
        if not dim:
            return False
        with self._read() as conn:
            present = conn.execute(
                "SELECT 1 FROM pg_class WHERE relname = 'chunks_embedding_hnsw' "
                "AND relnamespace = current_schema()::regnamespace"
            ).fetchone()
        if present is not None:
            return False
        with self._write() as conn:
            conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
            conn.execute(hnsw_index_sql(dim))
        return True

    # -- what it derives from its rows (the hooks of index/sql/store.py) -------------------------

    def _bump(self, s: Session, chunks: int = 0, tokens: int = 0) -> None:
        """Move the corpus totals (BM25's N and average length) and the generation, last in a write."""
        s.execute(
            "UPDATE counters SET value = value + CASE name WHEN 'generation' THEN 1 WHEN 'chunks' THEN ? "
            "ELSE ? END",
            (chunks, tokens),
        )

    def _prepare(self, writes: Sequence[DocumentWrite]) -> list[list[str]]:
        """The chunks' FTS5 tokens, before the transaction (the writer lock is held for less)."""
        return tokenizer().tokenize([c.index_text for w in writes for c in w.chunks])

    def _insert_chunks(self, s: Session, chunks: Sequence[NewChunk], prepared: Any) -> int:
        return insert_chunks(s.conn, chunks, prepared)

    def _vectors_added(self, s: Session, embedder: str, text_hashes: Sequence[str]) -> None:
        """Pending chunks that gained the index's vector (progressive indexing) take their copy."""
        if embedder == self._meta(s, "embedder") and text_hashes:
            s.execute(
                "UPDATE chunks c SET embedding = e.vector FROM embeddings e WHERE e.text_hash = c.text_hash "
                "AND e.embedder = ? AND c.embedding IS NULL AND c.text_hash = ANY(?)",
                (embedder, list(text_hashes)),
            )
        self._bump(s)

    def _embedder_changed(self, s: Session, name: str, dim: int) -> None:
        """Each chunk's copy of its vector from the embedder's, and the HNSW index for its dimension."""
        s.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
        s.execute(
            "UPDATE chunks c SET embedding = e.vector FROM embeddings e "
            "WHERE e.text_hash = c.text_hash AND e.embedder = ?",
            (name,),
        )
        s.execute(hnsw_index_sql(dim))

    def repair_derived(self, s: Session, steps: set[str], info: EmbedderInfo | None) -> None:
        if "keyword" in steps:
            rebuild_keyword(s.conn)
        # The totals are recounted whenever anything was repaired (one pass), and the generation moves.
        s.execute(
            "UPDATE counters SET value = CASE name WHEN 'chunks' THEN (SELECT count(*) FROM chunks) "
            "WHEN 'tokens' THEN (SELECT coalesce(sum(n_tokens), 0) FROM chunks) ELSE value + 1 END"
        )

    def after_repair(self, steps: set[str], info: EmbedderInfo | None) -> None:
        if "hnsw" in steps and info is not None:
            with self._write() as conn:
                conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
                conn.execute(hnsw_index_sql(info.dim))

    # -- about the index --------------------------------------------------------------------------

    def write_mark(self) -> None:
        return None  # writers on other servers leave no cheap trace here: read again every time

    def _size_bytes(self) -> int:
        with self.reading() as s:
            return int(
                s.value(
                    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "WHERE c.relname = ANY(?) AND c.relnamespace = current_schema()::regnamespace",
                    (list(TABLES),),
                )
            )

    def _schema_version(self) -> int:
        return SCHEMA_VERSION


def postgres_factory(
    context: BuildContext | None, location: str | None, *, create: bool = True, read_only: bool = False
) -> PostgresStore:
    """The PostgreSQL store at the URL ``location`` (postgresql://user@host:port/db)."""
    from citeline.settings import load_settings

    if not location:
        raise CitelineError("The postgresql store needs a URL: postgresql://user@host:5432/db")
    settings = context.settings if context is not None else load_settings(location)
    return PostgresStore(location, create=create, read_only=read_only, settings=settings)
