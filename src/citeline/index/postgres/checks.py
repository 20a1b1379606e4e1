"""`citeline check` for the PostgreSQL store: is the index whole, and do its derived parts match?

The documents and chunks (their text, spans and indexed text) are the source of truth. Derived
from them: the keyword side (each chunk's tsvector and token count, the postings BM25 reads, and
the corpus totals in ``counters``), the chunk's copy of its vector (from the ``embeddings``
cache) and the HNSW index. Every write is one transaction, so what this finds after a crash is a
bug, an interrupted bulk load (no HNSW index) or rows edited by hand.

Checks: rows of no document (tags, ACLs, chunks, postings); postings against their chunks (every
chunk's lexemes and frequencies, its length) and the totals against the chunks; every chunk's
vector has the embedder's dimension and is cached; no cached vector or original that nothing
uses; the HNSW index exists and is valid; every chunk's span resolves to text in its document;
every document has chunks. ``repair`` drops orphans, rebuilds the keyword side from the chunks'
indexed text with the embedded store's tokenizer, recounts the totals, caches the chunks'
vectors, rebuilds the HNSW index, and removes documents that cannot be made whole (reported:
``citeline add`` adds their files again).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from citeline.index.base import Problem
from citeline.index.postgres.schema import hnsw_index_sql
from citeline.index.postgres.text import tokenizer, tsvector_literal

if TYPE_CHECKING:
    from citeline.index.postgres.store import PostgresStore

_SHOW = 5  # examples named per problem
_BATCH = 2000  # chunks re-tokenised per statement when the keyword side is rebuilt


def _names(rows: list[tuple[Any, ...]]) -> str:
    shown = ", ".join(str(r[-1]) for r in rows[:_SHOW])
    return shown + (f" and {len(rows) - _SHOW} more" if len(rows) > _SHOW else "")


def _count(conn: Any, sql: str, params: tuple[Any, ...] = ()) -> int:
    return int(conn.execute(sql, params).fetchone()[0])


def check_store(store: PostgresStore, repair: bool = False) -> list[Problem]:
    found: list[tuple[Problem, str | None]] = []  # (problem, the repair step that fixes it)
    info = store.embedder_info()
    with store._read() as conn, conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        for table in ("doc_tags", "doc_acl", "chunks", "postings"):
            rows = _count(
                conn,
                f"SELECT count(*) FROM {table} t WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.document_id = t.document_id)",
            )
            if rows:
                found.append((Problem("orphan", f"{rows} rows of {table} belong to no document"), "orphans"))
        found += _keyword_problems(conn)
        found += _vector_problems(conn, info)
        broken = conn.execute(
            "SELECT DISTINCT d.document_id, d.source FROM chunks c JOIN documents d "
            'ON d.document_id = c.document_id WHERE c.start < 0 OR c."end" <= c.start '
            'OR c."end" > length(d.text) '
            "OR btrim(substr(d.text, c.start + 1, c.\"end\" - c.start), E' \\t\\n\\r') = '' "
            "ORDER BY d.source"
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
            "SELECT d.document_id, d.source FROM documents d WHERE NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.document_id = d.document_id) ORDER BY d.source"
        ).fetchall()
        if empty:
            found.append(
                (
                    Problem("document", f"{len(empty)} documents have no chunks: {_names(empty)}"),
                    "drop:" + ",".join(r[0] for r in empty),
                )
            )
        blobs = _count(
            conn,
            "SELECT count(*) FROM blobs b WHERE NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.content_hash = b.content_hash)",
        )
        if blobs:
            found.append((Problem("orphan", f"{blobs} original files belong to no document"), "blobs"))

    if not repair or not found:
        return [p for p, _ in found]
    steps = {step for _, step in found if step is not None}
    with store._write() as conn:
        _repair(conn, steps, info.name if info else None)
    if "hnsw" in steps and info is not None:
        with store._write() as conn:
            conn.execute("DROP INDEX IF EXISTS chunks_embedding_hnsw")
            conn.execute(hnsw_index_sql(info.dim))
    return [Problem(p.kind, p.detail, repaired=step is not None) for p, step in found]


def _keyword_problems(conn: Any) -> list[tuple[Problem, str | None]]:
    out: list[tuple[Problem, str | None]] = []
    stray = _count(
        conn,
        "SELECT count(*) FROM postings p WHERE NOT EXISTS "
        "(SELECT 1 FROM chunks c WHERE c.document_id = p.document_id AND c.seq = p.seq)",
    )
    # Each chunk: one posting per lexeme of its tsvector, frequencies summing to its length.
    mismatched = _count(
        conn,
        "SELECT count(*) FROM chunks c LEFT JOIN (SELECT document_id, seq, count(*) AS lexemes, "
        "sum(tf) AS tokens, min(n_tokens) AS lo, max(n_tokens) AS hi FROM postings "
        "GROUP BY document_id, seq) p ON p.document_id = c.document_id AND p.seq = c.seq "
        "WHERE coalesce(p.lexemes, 0) <> length(c.tsv) OR coalesce(p.tokens, 0) <> c.n_tokens "
        "OR (p.lexemes IS NOT NULL AND (p.lo <> c.n_tokens OR p.hi <> c.n_tokens))",
    )
    if stray or mismatched:
        out.append(
            (
                Problem(
                    "keyword-index",
                    f"the postings disagree with {mismatched} chunks ({stray} postings of no chunk)",
                ),
                "keyword",
            )
        )
    totals = dict(conn.execute("SELECT name, value FROM counters").fetchall())
    chunks, tokens = conn.execute("SELECT count(*), coalesce(sum(n_tokens), 0) FROM chunks").fetchone()
    if (int(totals.get("chunks", -1)), int(totals.get("tokens", -1))) != (int(chunks), int(tokens)):
        out.append(
            (
                Problem(
                    "keyword-index",
                    f"BM25's totals say {totals.get('chunks')} chunks of {totals.get('tokens')} tokens; "
                    f"the index holds {chunks} of {tokens}",
                ),
                "counters",
            )
        )
    return out


def _vector_problems(conn: Any, info: Any) -> list[tuple[Problem, str | None]]:
    out: list[tuple[Problem, str | None]] = []
    chunk_rows = _count(conn, "SELECT count(*) FROM chunks")
    if info is None:
        if chunk_rows:
            out.append((Problem("vectors", f"{chunk_rows} chunks but no embedder recorded"), None))
        return out
    wrong = conn.execute(
        "SELECT DISTINCT d.document_id, d.source FROM chunks c JOIN documents d "
        "ON d.document_id = c.document_id WHERE vector_dims(c.embedding) <> %s ORDER BY d.source",
        (info.dim,),
    ).fetchall()
    if wrong:
        out.append(
            (
                Problem(
                    "vectors",
                    f"chunks of {len(wrong)} documents have vectors that are not of dimension {info.dim} "
                    f"(embedder {info.name}): {_names(wrong)}",
                ),
                "drop:" + ",".join(r[0] for r in wrong),
            )
        )
    bad_cache = _count(
        conn,
        "SELECT count(*) FROM embeddings WHERE embedder = %s AND vector_dims(vector) <> %s",
        (info.name, info.dim),
    )
    if bad_cache:
        out.append(
            (
                Problem("vectors", f"{bad_cache} cached vectors are not of dimension {info.dim}"),
                "bad-vectors",
            )
        )
    uncached = _count(
        conn,
        "SELECT count(DISTINCT c.text_hash) FROM chunks c WHERE NOT EXISTS "
        "(SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = %s)",
        (info.name,),
    )
    if uncached:
        out.append((Problem("vectors", f"{uncached} chunk texts have no cached {info.name} vector"), "cache"))
    unused = _count(
        conn,
        "SELECT count(*) FROM embeddings e WHERE e.embedder = %s AND NOT EXISTS "
        "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)",
        (info.name,),
    )
    if unused:
        out.append((Problem("orphan", f"{unused} vectors belong to no chunk"), "vectors"))
    index = conn.execute(
        "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = 'chunks_embedding_hnsw' AND c.relnamespace = current_schema()::regnamespace"
    ).fetchone()
    if index is None or not index[0]:
        what = "missing" if index is None else "invalid"
        out.append(
            (Problem("vector-index", f"the HNSW index is {what} (dense search scans exactly)"), "hnsw")
        )
    return out


def _repair(conn: Any, steps: set[str], embedder: str | None) -> None:
    from citeline.index.postgres.write import remove_documents

    if "orphans" in steps:
        for table in ("doc_tags", "doc_acl", "chunks", "postings"):
            conn.execute(
                f"DELETE FROM {table} t WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.document_id = t.document_id)"
            )
    drop = sorted({doc for step in steps if step.startswith("drop:") for doc in step[5:].split(",") if doc})
    if drop:
        remove_documents(conn, drop)
    if embedder is not None:
        if "bad-vectors" in steps:
            conn.execute(
                "DELETE FROM embeddings WHERE embedder = %s AND vector_dims(vector) <> "
                "(SELECT value::int FROM meta WHERE key = 'embedder_dim')",
                (embedder,),
            )
        if "cache" in steps or "bad-vectors" in steps:
            conn.execute(
                "INSERT INTO embeddings (text_hash, embedder, vector) SELECT DISTINCT ON (c.text_hash) "
                "c.text_hash, %s, c.embedding FROM chunks c WHERE vector_dims(c.embedding) = "
                "(SELECT value::int FROM meta WHERE key = 'embedder_dim') "
                "ORDER BY c.text_hash ON CONFLICT (text_hash, embedder) DO NOTHING",
                (embedder,),
            )
        if "vectors" in steps:
            conn.execute(
                "DELETE FROM embeddings e WHERE e.embedder = %s AND NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)",
                (embedder,),
            )
    if "blobs" in steps:
        conn.execute(
            "DELETE FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.content_hash = b.content_hash)"
        )
    if "keyword" in steps:
        _rebuild_keyword(conn)
    # The totals are recounted whenever anything was repaired (one pass), and the generation moves.
    conn.execute(
        "UPDATE counters SET value = CASE name WHEN 'chunks' THEN (SELECT count(*) FROM chunks) "
        "WHEN 'tokens' THEN (SELECT coalesce(sum(n_tokens), 0) FROM chunks) ELSE value + 1 END"
    )


def _rebuild_keyword(conn: Any) -> None:
    """Every chunk's tsvector, length and postings again from its indexed text."""
    conn.execute("DELETE FROM postings")
    last = -1
    while True:
        rows = conn.execute(
            "SELECT document_id, seq, index_text FROM chunks WHERE seq > %s ORDER BY seq LIMIT %s",
            (last, _BATCH),
        ).fetchall()
        if not rows:
            return
        token_lists = tokenizer().tokenize([r[2] for r in rows])
        cur = conn.cursor()
        cur.executemany(
            "UPDATE chunks SET tsv = %s::tsvector, n_tokens = %s WHERE document_id = %s AND seq = %s",
            [(tsvector_literal(t), len(t), r[0], r[1]) for r, t in zip(rows, token_lists, strict=True)],
        )
        with cur.copy("COPY postings (document_id, lexeme, seq, tf, n_tokens) FROM STDIN") as copy:
            for r, tokens in zip(rows, token_lists, strict=True):
                for lexeme, tf in Counter(tokens).items():
                    copy.write_row((r[0], lexeme, r[1], tf, len(tokens)))
        last = int(rows[-1][1])
