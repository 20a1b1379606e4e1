"""`citeline check` for the embedded store: is the index whole, and do its derived indexes match?

SQLite is the source of truth; FTS5 (keyword search) and the vector matrix are derived from the
chunks and vectors it holds. A process killed mid-write leaves SQLite consistent (every write is
one transaction), so what this finds after a crash is a bug, a full disk or a file edited by hand.

Checks: ``PRAGMA integrity_check``; foreign keys (tags, ACLs, chunks of no document); FTS5's own
integrity check against the chunks (and its row sizes against the chunk rows); every chunk has a
finite vector of the embedder's dimension and the matrix builds with one row per chunk; every
chunk's span resolves to text in its document; every document has chunks; no vector or original
that nothing uses. ``repair`` rebuilds FTS5 ('rebuild') and the matrix, drops orphans and broken
vectors, and removes documents that cannot be made whole (reported: ``citeline add`` adds their
files again). Chunks left without a vector are embedded again by ``KnowledgeBase.check``.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

import numpy as np

from citeline.index.base import Problem
from citeline.index.sqlite.engines import engines_present
from citeline.index.sqlite.schema import transaction

if TYPE_CHECKING:
    from citeline.index.sqlite import SqliteStore

_SHOW = 5  # examples named per problem


def _names(rows: list[tuple[str, ...]]) -> str:
    shown = ", ".join(str(r[-1]) for r in rows[:_SHOW])
    return shown + (f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else "")


def check_store(store: SqliteStore, repair: bool = False) -> list[Problem]:
    conn = store.conn
    found: list[tuple[Problem, str | None]] = []  # (problem, the repair step that fixes it)

    integrity = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)")]
    if integrity != ["ok"]:
        found.append(
            (
                Problem(
                    "integrity",
                    "SQLite integrity_check: " + "; ".join(integrity[:5]) + " (if REINDEX does not fix "
                    "it, add the documents again into a new index)",
                ),
                "reindex",
            )
        )

    for table in ("doc_tags", "doc_acl", "chunks"):
        rows = conn.execute(
            f"SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.id = t.document_id)"
        ).fetchone()[0]
        if rows:
            found.append((Problem("orphan", f"{rows} rows of {table} belong to no document"), "orphans"))

    fts_rows = conn.execute("SELECT COUNT(*) FROM chunks_fts_docsize").fetchone()[0]
    chunk_rows = conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    stray = conn.execute(
        "SELECT COUNT(*) FROM chunks_fts_docsize f WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.rowid = f.id)"
    ).fetchone()[0]
    fts_problem = None
    if fts_rows != chunk_rows or stray:
        fts_problem = f"FTS5 holds {fts_rows} rows for {chunk_rows} chunks ({stray} of no chunk)"
    elif not store.read_only:
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            fts_problem = f"FTS5 does not match the chunks' text ({exc})"
    if fts_problem:
        found.append((Problem("keyword-index", fts_problem), "fts"))

    found += _vector_problems(store, chunk_rows)
    found += _engine_problems(store)

    broken = conn.execute(
        "SELECT DISTINCT d.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.start < 0 "
        'OR c."end" <= c.start OR c."end" > length(d.text) '
        "OR trim(substr(d.text, c.start + 1, c.\"end\" - c.start), ' \t\n\r') = ''"
    ).fetchall()
    if broken:
        found.append(
            (
                Problem(
                    "span",
                    f"chunks whose span does not resolve in the text of {len(broken)} "
                    f"documents: {_names(broken)}",
                ),
                "drop:" + ",".join(r[0] for r in broken),
            )
        )
    empty = conn.execute(
        "SELECT d.id, d.source FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)"
    ).fetchall()
    if empty:
        found.append(
            (
                Problem("document", f"{len(empty)} documents have no chunks: {_names(empty)}"),
                "drop:" + ",".join(r[0] for r in empty),
            )
        )
    blobs = conn.execute(
        "SELECT COUNT(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.content_hash = b.content_hash)"
    ).fetchone()[0]
    if blobs:
        found.append((Problem("orphan", f"{blobs} original files belong to no document"), "blobs"))

    if not repair or not found:
        return [p for p, _ in found]
    steps = {step for _, step in found if step is not None}
    with store._lock, transaction(conn, f"the index at {store.location}"):
        _repair(store, steps)
    store._dense = None  # rebuilt from SQLite on next use
    info = store.embedder_info()
    generation = int(store.meta("generation") or 0)
    if info is not None and (store._engines.wanted(conn, generation) or engines_present(store.folder)):
        store._engines.rebuild(conn, info.name, info.dim, store._engine_tag())
    return [Problem(p.kind, p.detail, repaired=step is not None) for p, step in found]


def _engine_problems(store: SqliteStore) -> list[tuple[Problem, str | None]]:
    """The derived engines (index/engines.py) against the chunks, when the index uses them."""
    info = store.embedder_info()
    generation = int(store.meta("generation") or 0)
    if info is None or not (store._engines.wanted(store.conn, generation) or engines_present(store.folder)):
        return []
    problems = store._engines.check(store.conn, info.name, info.dim, store._engine_tag())
    return [(p, "engines") for p in problems]


def _vector_problems(store: SqliteStore, chunk_rows: int) -> list[tuple[Problem, str | None]]:
    conn = store.conn
    info = store.embedder_info()
    out: list[tuple[Problem, str | None]] = []
    if info is None:
        if chunk_rows:
            out.append((Problem("vectors", f"{chunk_rows} chunks but no embedder recorded"), None))
        return out
    bad = [
        r[0]
        for r in conn.execute(
            "SELECT text_hash FROM embeddings WHERE embedder = ? AND length(vector) != ?",
            (info.name, info.dim * 4),
        )
    ]
    for lo_hash, vector in conn.execute(
        "SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND length(vector) = ?",
        (info.name, info.dim * 4),
    ):
        if not np.isfinite(np.frombuffer(vector, dtype=np.float32)).all():
            bad.append(lo_hash)
    if bad:
        out.append(
            (
                Problem(
                    "vectors", f"{len(bad)} vectors are not {info.dim} finite numbers (embedder {info.name})"
                ),
                "bad-vectors:" + ",".join(bad),
            )
        )
    missing = conn.execute(
        "SELECT COUNT(*) FROM chunks c WHERE NOT EXISTS "
        "(SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = ?)",
        (info.name,),
    ).fetchone()[0]
    if missing:
        # KnowledgeBase.check embeds them again (the store has no embedder)
        out.append((Problem("vectors", f"{missing} chunks have no vector from {info.name}"), None))
    unused = conn.execute(
        "SELECT COUNT(*) FROM embeddings e WHERE e.embedder = ? AND NOT EXISTS "
        "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)",
        (info.name,),
    ).fetchone()[0]
    if unused:
        out.append((Problem("orphan", f"{unused} vectors belong to no chunk"), "vectors"))
    if not bad:
        store._dense = None
        try:
            matrix = store._dense_matrix()
        except (ValueError, sqlite3.DatabaseError) as exc:
            out.append((Problem("vector-index", f"the vector matrix cannot be built: {exc}"), None))
        else:
            if len(matrix) != chunk_rows - missing or matrix.matrix.shape[1:] != (info.dim,):
                out.append(
                    (
                        Problem(
                            "vector-index",
                            f"the vector matrix has {len(matrix)} rows of {matrix.matrix.shape[1:]} for "
                            f"{chunk_rows - missing} chunks with vectors of dimension {info.dim}",
                        ),
                        "dense",
                    )
                )
    return out


def _repair(store: SqliteStore, steps: set[str]) -> None:
    conn = store.conn
    if "reindex" in steps:
        conn.execute("REINDEX")
    if "orphans" in steps:
        for table in ("doc_tags", "doc_acl", "chunks"):
            conn.execute(
                f"DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.id = {table}.document_id)"
            )
    drop = {doc for step in steps if step.startswith("drop:") for doc in step[5:].split(",") if doc}
    hashes: list[str] = []
    for doc_id in sorted(drop):
        hashes += store._remove(doc_id)
    if hashes:
        store._gc_embeddings(hashes)
    for step in steps:
        if step.startswith("bad-vectors:"):
            conn.executemany(
                "DELETE FROM embeddings WHERE text_hash = ? AND embedder = ?",
                [(h, store.meta("embedder")) for h in step[len("bad-vectors:") :].split(",") if h],
            )
    if "vectors" in steps:
        conn.execute(
            "DELETE FROM embeddings WHERE embedder = ? AND NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.text_hash = embeddings.text_hash)",
            (store.meta("embedder"),),
        )
    if "blobs" in steps:
        conn.execute(
            "DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.content_hash = blobs.content_hash)"
        )
    # FTS5 is rebuilt from the chunks whenever anything was repaired: it costs one pass.
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    store._bump_generation()
