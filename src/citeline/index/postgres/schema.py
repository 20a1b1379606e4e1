"""PostgreSQL schema of the shared index, with ordered migrations (table ``citeline_schema``).

Citus-ready: every table is either *distributed* (sharded by the column named in DISTRIBUTION)
or a small *reference* table (copied to every node). The distribution column is part of every
primary key and unique constraint of its table (Citus can only enforce uniqueness within one
shard); tests/index/test_postgres.py checks this on the live schema through pg_catalog.

* ``document_id`` shards documents, chunks, postings, doc_tags and doc_acl, so a document and everything
  it owns live on one shard (co-located): replacing a document, and the ACL and tag joins of
  every filtered search, stay on one node; searches fan out to all shards and merge top-k.
  Document ids are sha256(collection, source), so they spread evenly; (collection, source) is
  unique because the id is derived from it, and needs no constraint of its own.
* ``text_hash`` shards the vector cache (embeddings), ``content_hash`` the original bytes
  (blobs), ``trace_id`` the traces.
* meta, counters, settings and api_keys are reference tables (a few rows each).

pgvector: the dense side needs the extension ``vector`` >= 0.5.0 (HNSW). Before 0.8.0 an HNSW
scan filters *after* its candidate list (``hnsw.ef_search`` rows), so search.py scans
exactly below a selectivity threshold; 0.8.0 adds iterative scans, used when present.
"""

from __future__ import annotations

from typing import Any

from citeline.errors import CitelineError, NotAnIndexError, SchemaTooNewError

SCHEMA_VERSION = 2
_MIGRATION_LOCK = 0x6369_7465_6D69_6772  # pg_advisory_xact_lock key of schema migrations
#: pgvector's first version with HNSW, and the one with iterative (filtered) index scans
MIN_PGVECTOR = (0, 5, 0)
ITERATIVE_SCAN_PGVECTOR = (0, 8, 0)

DISTRIBUTION: dict[str, str] = {
    "documents": "document_id",
    "chunks": "document_id",
    "postings": "document_id",
    "doc_tags": "document_id",
    "doc_acl": "document_id",
    "embeddings": "text_hash",
    "blobs": "content_hash",
    "traces": "trace_id",
}
REFERENCE_TABLES = ("citeline_schema", "meta", "counters", "settings", "api_keys")
TABLES = (*DISTRIBUTION, *REFERENCE_TABLES)

_V1 = """
CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL);
INSERT INTO counters (name, value) VALUES ('generation', 0), ('chunks', 0), ('tokens', 0);
CREATE TABLE settings (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE api_keys (
    id text PRIMARY KEY,
    "user" text NOT NULL,
    key_hash text NOT NULL UNIQUE,
    groups text NOT NULL DEFAULT '[]',
    role text NOT NULL DEFAULT 'reader',
    label text NOT NULL DEFAULT '',
    meta text NOT NULL DEFAULT '{}',
    created_at double precision NOT NULL,
    revoked_at double precision
);
CREATE TABLE documents (
    document_id text COLLATE "C" NOT NULL PRIMARY KEY,
    collection text COLLATE "C" NOT NULL DEFAULT 'default',
    source text COLLATE "C" NOT NULL,
    title text NOT NULL,
    format text COLLATE "C" NOT NULL,
    content_hash text COLLATE "C" NOT NULL,
    size bigint NOT NULL,
    mtime double precision NOT NULL,
    page_count integer,
    metadata json NOT NULL DEFAULT '{}',
    text text NOT NULL,
    page_starts json NOT NULL DEFAULT '[]',
    added_at double precision NOT NULL,
    updated_at double precision NOT NULL
);
CREATE INDEX documents_collection_source ON documents (collection, source);
CREATE INDEX documents_source ON documents (source text_pattern_ops);
CREATE INDEX documents_mtime ON documents (mtime);
CREATE INDEX documents_format ON documents (format);
CREATE INDEX documents_content_hash ON documents (content_hash);
CREATE TABLE doc_tags (
    document_id text COLLATE "C" NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    PRIMARY KEY (document_id, key)
);
CREATE INDEX doc_tags_kv ON doc_tags (key, value);
CREATE TABLE doc_acl (
    document_id text COLLATE "C" NOT NULL,
    entry text NOT NULL,
    PRIMARY KEY (document_id, entry)
);
CREATE INDEX doc_acl_entry ON doc_acl (entry);
CREATE TABLE blobs (
    content_hash text COLLATE "C" NOT NULL PRIMARY KEY,
    data bytea NOT NULL
);
CREATE TABLE embeddings (
    text_hash text COLLATE "C" NOT NULL,
    embedder text NOT NULL,
    vector vector NOT NULL,
    PRIMARY KEY (text_hash, embedder)
);
CREATE TABLE chunks (
    document_id text COLLATE "C" NOT NULL,
    chunk_id text COLLATE "C" NOT NULL,
    seq bigserial NOT NULL,
    ordinal integer NOT NULL,
    start integer NOT NULL,
    "end" integer NOT NULL,
    page integer,
    page_end integer,
    heading text NOT NULL,
    kind text NOT NULL,
    index_text text NOT NULL,
    text_hash text COLLATE "C" NOT NULL,
    token_count integer NOT NULL,
    n_tokens integer NOT NULL,
    tsv tsvector NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (document_id, chunk_id)
);
CREATE INDEX chunks_chunk_id ON chunks (chunk_id);
CREATE INDEX chunks_seq ON chunks (seq);
CREATE INDEX chunks_text_hash ON chunks (text_hash);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE TABLE postings (
    document_id text COLLATE "C" NOT NULL,
    lexeme text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    tf integer NOT NULL,
    n_tokens integer NOT NULL,
    PRIMARY KEY (document_id, seq, lexeme)
);
CREATE INDEX postings_lexeme ON postings (lexeme) INCLUDE (seq, tf, n_tokens, document_id);
CREATE TABLE traces (
    trace_id text COLLATE "C" NOT NULL PRIMARY KEY,
    created_at double precision NOT NULL,
    question text NOT NULL,
    refused boolean NOT NULL,
    support double precision,
    data text NOT NULL,
    owner text NOT NULL DEFAULT ''
);
CREATE INDEX traces_created ON traces (created_at);
CREATE INDEX traces_owner ON traces (owner, created_at);
"""

# MIGRATIONS[v] upgrades schema version v-1 to v (statements run in one transaction).
# Version 2: progressive indexing. A pending chunk (only the fast embedder's vector so far) has no
# copy of the index's vector: NULL, which the HNSW index leaves out.
_V2 = """
ALTER TABLE chunks ALTER COLUMN embedding DROP NOT NULL;
"""
MIGRATIONS: dict[int, str] = {1: _V1, 2: _V2}


def statements(script: str) -> list[str]:
    """Split a migration script into statements (no function bodies in these scripts)."""
    return [s.strip() for s in script.split(";") if s.strip()]


def of_dimension(dim: int, column: str = "embedding") -> str:
    """The HNSW index's predicate: the rows whose vector has the active embedder's dimension.

    A dense query names it too, so that the planner may use the (partial) index."""
    return f"vector_dims({column}) = {int(dim)}"


def hnsw_index_sql(dim: int) -> str:
    """The HNSW index over the active embedder's vectors (cosine), on a cast to its dimension.

    Partial (``of_dimension``): building an index reads the row versions that an update left behind
    too (in the same transaction, or still visible to another one), and casting a vector of the
    previous embedder to this dimension fails ("expected 256 dimensions, not 384"): a reindex to
    an embedder of another width swaps and builds the index in one transaction."""
    return (
        f"CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw ON chunks "
        f"USING hnsw ((embedding::vector({int(dim)})) vector_cosine_ops) WHERE {of_dimension(dim)}"
    )


def parse_version(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits or 0))
    return tuple(out)


def migrate(conn: Any, current: int) -> None:
    """Apply each pending migration in its own transaction (the caller holds the migration lock)."""
    for version in range(current + 1, SCHEMA_VERSION + 1):
        with conn.transaction():
            for statement in statements(MIGRATIONS[version]):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO citeline_schema (version, applied_at) VALUES (%s, extract(epoch FROM now()))",
                (version,),
            )


def open_schema(url: str, location: str, create: bool, read_only: bool, connect_timeout: int = 30) -> bool:
    """Check pgvector and migrate the schema; True when pgvector has iterative index scans."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        }
        if "citeline_schema" not in tables:
            clash = sorted(set(TABLES) & tables)
            if clash:
                raise NotAnIndexError(location, f"the database has tables named {', '.join(clash)}")
            if read_only or not create:
                raise NotAnIndexError(location, "no index here yet; `citeline add` creates one")
        _check_pgvector(conn, location, read_only)
        current = _schema_version(conn) if "citeline_schema" in tables else 0
        if current > SCHEMA_VERSION:
            raise SchemaTooNewError(location, current, SCHEMA_VERSION)
        if current < SCHEMA_VERSION:
            if read_only:
                raise CitelineError(f"{location}: the index needs a schema upgrade but is read-only.")
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS citeline_schema "
                    "(version integer PRIMARY KEY, applied_at double precision NOT NULL)"
                )
                migrate(conn, _schema_version(conn))  # another process may have migrated
        version = _one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        return parse_version(str(version)) >= ITERATIVE_SCAN_PGVECTOR


def _one(conn: Any, sql: str) -> Any:
    row = conn.execute(sql).fetchone()
    return None if row is None else row[0]


def _schema_version(conn: Any) -> int:
    return int(_one(conn, "SELECT coalesce(max(version), 0) FROM citeline_schema") or 0)


def _check_pgvector(conn: Any, location: str, read_only: bool) -> None:
    import psycopg

    if _one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'") is None:
        available = _one(conn, "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        if available is None:
            raise CitelineError(
                f"{location}: the server has no pgvector extension; install pgvector >= "
                f"{'.'.join(map(str, MIN_PGVECTOR))} on it."
            )
        if read_only:
            raise CitelineError(f"{location}: run CREATE EXTENSION vector first (read-only here).")
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.Error as exc:
            raise CitelineError(
                f"{location}: could not create the pgvector extension ({exc.diag.message_primary}); "
                "ask the database owner to run CREATE EXTENSION vector."
            ) from None
    version = str(_one(conn, "SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
    if parse_version(version) < MIN_PGVECTOR:
        raise CitelineError(
            f"{location}: pgvector {version} is too old; citeline needs >= "
            f"{'.'.join(map(str, MIN_PGVECTOR))} (HNSW)."
        )
