"""SQLite schema of the embedded index, with ordered migrations.

SQLite is the source of truth; FTS5 and the in-memory vector matrix are derived from
it and can always be rebuilt (`citeline reindex`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from citeline.errors import CitelineError, DiskFullError, IndexBusyError, ReadOnlyIndexError

SCHEMA_VERSION = 3

_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    page_count INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}',
    text TEXT NOT NULL,
    page_starts TEXT NOT NULL DEFAULT '[]',
    added_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX documents_mtime ON documents(mtime);
CREATE INDEX documents_format ON documents(format);
CREATE TABLE doc_tags (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (document_id, key)
);
CREATE INDEX doc_tags_kv ON doc_tags(key, value);
CREATE TABLE doc_acl (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    entry TEXT NOT NULL,
    PRIMARY KEY (document_id, entry)
);
CREATE INDEX doc_acl_entry ON doc_acl(entry);
CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    page INTEGER,
    page_end INTEGER,
    heading TEXT NOT NULL,
    kind TEXT NOT NULL,
    index_text TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    token_count INTEGER NOT NULL
);
CREATE INDEX chunks_document ON chunks(document_id);
CREATE INDEX chunks_text_hash ON chunks(text_hash);
CREATE TABLE embeddings (
    text_hash TEXT NOT NULL,
    embedder TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (text_hash, embedder)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    index_text, content='chunks', content_rowid='rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, index_text) VALUES (new.rowid, new.index_text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, index_text) VALUES ('delete', old.rowid, old.index_text);
END;
CREATE TABLE traces (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    question TEXT NOT NULL,
    refused INTEGER NOT NULL,
    support REAL,
    data TEXT NOT NULL
);
CREATE INDEX traces_created ON traces(created_at);
"""

# Version 2: document identity from (collection, source) instead of the adding machine's absolute
# path; original bytes (content-addressed); settings, API keys and trace owners in the index.
_V2_TABLES = """
CREATE TABLE documents_v2 (
    id TEXT PRIMARY KEY,
    collection TEXT NOT NULL DEFAULT 'default',
    source TEXT NOT NULL,
    title TEXT NOT NULL,
    format TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime REAL NOT NULL,
    page_count INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}',
    text TEXT NOT NULL,
    page_starts TEXT NOT NULL DEFAULT '[]',
    added_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (collection, source)
);
CREATE TABLE blobs (
    content_hash TEXT PRIMARY KEY,
    data BLOB NOT NULL
) WITHOUT ROWID;
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    user TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    groups TEXT NOT NULL DEFAULT '[]',
    role TEXT NOT NULL DEFAULT 'reader',
    label TEXT NOT NULL DEFAULT '',
    meta TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    revoked_at REAL
);
ALTER TABLE traces ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX traces_owner ON traces(owner, created_at);
"""


def _v2(conn: sqlite3.Connection) -> None:
    from citeline.types import DEFAULT_COLLECTION, document_id_for

    for statement in _statements(_V2_TABLES):
        conn.execute(statement)
    rows = conn.execute("SELECT id, source FROM documents").fetchall()
    new_ids = {old: document_id_for(DEFAULT_COLLECTION, source.replace("\\", "/")) for old, source in rows}
    conn.execute(
        "INSERT INTO documents_v2 (id, collection, source, title, format, content_hash, size, mtime, "
        "page_count, metadata, text, page_starts, added_at, updated_at) SELECT id, 'default', source, "
        "title, format, content_hash, size, mtime, page_count, metadata, text, page_starts, added_at, "
        "updated_at FROM documents"
    )
    # Children first (foreign keys are off during migrations), then the documents themselves.
    for old, new in new_ids.items():
        if old == new:
            continue
        conn.execute(
            "UPDATE chunks SET id = ? || substr(id, 13), document_id = ? WHERE document_id = ?",
            (new[:12], new, old),
        )
        for table in ("doc_tags", "doc_acl"):
            conn.execute(f"UPDATE {table} SET document_id = ? WHERE document_id = ?", (new, old))
        conn.execute("UPDATE documents_v2 SET id = ? WHERE id = ?", (new, old))
    conn.execute("DROP TABLE documents")
    conn.execute("ALTER TABLE documents_v2 RENAME TO documents")
    conn.execute("CREATE INDEX documents_mtime ON documents(mtime)")
    conn.execute("CREATE INDEX documents_format ON documents(format)")
    conn.execute("CREATE INDEX documents_collection ON documents(collection, source)")


# Version 3: the change log of chunks (index/sqlite/changelog.py). Triggers write it in the transaction
# that adds or removes the chunk rows, so every write path (ingestion, removal, repair) logs itself;
# AUTOINCREMENT never reuses a position, even after the log is compacted.
_V3 = """
CREATE TABLE changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk INTEGER NOT NULL,
    op INTEGER NOT NULL
);
CREATE TRIGGER chunks_log_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO changes(chunk, op) VALUES (new.rowid, 1);
END;
CREATE TRIGGER chunks_log_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO changes(chunk, op) VALUES (old.rowid, 0);
END;
"""

# MIGRATIONS[v] upgrades a database at schema version v-1 to version v: a script, or a function
# for steps that compute values (new ids).
MIGRATIONS: dict[int, str | Callable[[sqlite3.Connection], None]] = {1: _V1, 2: _v2, 3: _V3}


def storage_error(exc: sqlite3.Error, where: str = "the index") -> CitelineError | None:
    """The user-facing error for a failed write (busy, read-only, disk full), else None."""
    message = str(exc).lower()
    if "locked" in message or "busy" in message:
        return IndexBusyError(
            f"{where} is busy: another process is writing to it and did not finish within the lock "
            "timeout (lock_timeout_s). Nothing was changed by this command's last step; run it again "
            "when the other writer is done."
        )
    if "readonly" in message or "read-only" in message:
        return ReadOnlyIndexError(
            f"{where} is read-only here ({exc}): nothing can be written. Open it where its folder and "
            "files can be written."
        )
    if "full" in message or "disk i/o" in message or "ioerr" in message:
        return DiskFullError(
            f"Could not write to {where}: the disk is full, a file size limit was reached, or the disk "
            f"failed (sqlite: {exc}). The last write was rolled back, so nothing is half-written: free "
            "some space and run the command again."
        )
    return None


@contextmanager
def transaction(conn: sqlite3.Connection, where: str = "the index") -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (the connection is in autocommit mode).

    A write that fails because another writer holds the index, the index is read-only or the disk
    is full raises the matching IndexUnavailableError (exit code 4), after the rollback."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise (storage_error(exc, where) or exc) from exc
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # SQLite may have rolled back already (I/O error)
                conn.execute("ROLLBACK")
        if isinstance(exc, sqlite3.OperationalError):
            translated = storage_error(exc, where)
            if translated is not None:
                raise translated from exc
        raise


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Several reads that must agree with each other (counts and the rows they count): one read
    transaction, so a writer committing in between changes none of them (WAL keeps the snapshot)."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def migrate(conn: sqlite3.Connection, current: int) -> None:
    """Apply each pending migration in its own transaction.

    Foreign keys are off while migrating (a table rebuild must not cascade-delete the rows that
    point at it) and checked before each commit.
    """
    conn.execute("PRAGMA foreign_keys=OFF")
    try:
        for version in range(current + 1, SCHEMA_VERSION + 1):
            _migrate_one(conn, version)
    finally:
        conn.execute("PRAGMA foreign_keys=ON")


def _migrate_one(conn: sqlite3.Connection, version: int) -> None:
    step = MIGRATIONS[version]
    with transaction(conn):
        # Another process opening the same new index may have applied this step first.
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is not None and int(row[0]) >= version:
            return
        if callable(step):
            step(conn)
        else:
            for statement in _statements(step):
                conn.execute(statement)
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise sqlite3.IntegrityError(f"migration to schema {version} broke foreign keys: {broken[:3]}")
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('schema_version', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(version),),
        )


def _statements(script: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies whole."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return [s for s in out if s]
