"""Writing documents to the PostgreSQL store: a batch of documents replaced in one transaction.

Called by PostgresStore (index/postgres.py) inside a transaction that holds the writer lock.
Old versions (same id, or same collection and source) are deleted with everything they own,
the new rows inserted, and vectors and originals that nothing uses any more dropped.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from citeline.errors import CitelineError
from citeline.index.base import DocumentWrite
from citeline.index.postgres.text import as_array, tsvector_literal
from citeline.index.sqlite import text_hash


def _delete(conn: Any, ids: Sequence[str]) -> tuple[set[str], set[str], int, int]:
    """Delete documents and all they own: (their text hashes, content hashes, chunks, tokens)."""
    if not ids:
        return set(), set(), 0, 0
    ids = list(ids)
    removed = conn.execute(
        "DELETE FROM chunks WHERE document_id = ANY(%s) RETURNING text_hash, n_tokens", (ids,)
    ).fetchall()
    conn.execute("DELETE FROM postings WHERE document_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM doc_tags WHERE document_id = ANY(%s)", (ids,))
    conn.execute("DELETE FROM doc_acl WHERE document_id = ANY(%s)", (ids,))
    contents = conn.execute(
        "DELETE FROM documents WHERE document_id = ANY(%s) RETURNING content_hash", (ids,)
    ).fetchall()
    return {r[0] for r in removed}, {r[0] for r in contents}, len(removed), sum(int(r[1]) for r in removed)


def _collect_garbage(conn: Any, text_hashes: set[str], content_hashes: set[str]) -> None:
    """Drop vectors no chunk uses any more, and originals no document uses (after a remove or an edit)."""
    if text_hashes:
        conn.execute(
            "DELETE FROM embeddings e WHERE e.text_hash = ANY(%s) "
            "AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)",
            (sorted(text_hashes),),
        )
    if content_hashes:
        conn.execute(
            "DELETE FROM blobs b WHERE b.content_hash = ANY(%s) "
            "AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.content_hash = b.content_hash)",
            (sorted(content_hashes),),
        )


def remove_documents(conn: Any, ids: Sequence[str]) -> tuple[int, int]:
    """Remove documents; (chunks, tokens) removed."""
    text_hashes, content_hashes, chunks, tokens = _delete(conn, ids)
    _collect_garbage(conn, text_hashes, content_hashes)
    return chunks, tokens


def write_documents(
    conn: Any,
    embedder: str,
    writes: Sequence[DocumentWrite],
    tokens: Sequence[Sequence[str]],
) -> tuple[int, int]:
    """Replace each document of ``writes`` whole; the change in (chunks, tokens).

    ``tokens``: each chunk's FTS5 tokens, in the order of the writes' chunks (stored as a tsvector
    for GIN, term frequencies for BM25, and their count). Raises CitelineError (and the caller's
    transaction rolls back) when a chunk has no vector.
    """
    now = time.time()
    latest = {w.document.id: i for i, w in enumerate(writes)}  # a document given twice: the last wins
    order = [i for i, w in enumerate(writes) if latest[w.document.id] == i]
    offsets, at = [], 0
    for w in writes:
        offsets.append(at)
        at += len(w.chunks)
    docs = [writes[i].document for i in order]
    old = conn.execute(
        "SELECT document_id, collection, source, added_at FROM documents WHERE document_id = ANY(%s) "
        "OR (collection, source) IN (SELECT * FROM unnest(%s::text[], %s::text[]))",
        ([d.id for d in docs], [d.collection for d in docs], [d.source for d in docs]),
    ).fetchall()
    added = {r[0]: r[3] for r in old} | {(r[1], r[2]): r[3] for r in old}
    old_hashes, old_contents, old_chunks, old_tokens = _delete(conn, [r[0] for r in old])

    cur = conn.cursor()
    blobs = [
        (writes[i].document.content_hash, writes[i].original) for i in order if writes[i].original is not None
    ]
    if blobs:
        cur.executemany(
            "INSERT INTO blobs (content_hash, data) VALUES (%s, %s) ON CONFLICT (content_hash) DO NOTHING",
            list(dict(blobs).items()),
        )
    rows = []
    for i in order:
        w, d = writes[i], writes[i].document
        first = added.get(d.id, added.get((d.collection, d.source)))
        added_at, updated_at = (d.added_at, d.updated_at) if w.keep_times else (first or now, now)
        rows.append(
            (
                d.id,
                d.collection,
                d.source,
                d.title,
                d.format,
                d.content_hash,
                d.size,
                d.mtime,
                d.page_count,
                json.dumps(d.metadata),
                w.text,
                json.dumps(list(w.page_starts)),
                added_at,
                updated_at,
            )
        )
    cur.executemany(
        "INSERT INTO documents (document_id, collection, source, title, format, content_hash, size, mtime, "
        "page_count, metadata, text, page_starts, added_at, updated_at) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
        rows,
    )
    tags = [(d.id, k, v) for d in docs for k, v in d.tags.items()]
    if tags:
        cur.executemany("INSERT INTO doc_tags (document_id, key, value) VALUES (%s, %s, %s)", tags)
    acl = [(d.id, e) for d in docs for e in sorted(set(d.acl))]
    if acl:
        cur.executemany("INSERT INTO doc_acl (document_id, entry) VALUES (%s, %s)", acl)

    vectors: dict[str, np.ndarray] = {}
    for i in order:
        vectors.update({h: np.asarray(v, dtype=np.float32) for h, v in writes[i].vectors.items()})
    hashes = {i: [text_hash(c.index_text) for c in writes[i].chunks] for i in order}
    needed = {h for i in order for h in hashes[i]}
    missing = sorted(needed - vectors.keys())
    if missing:
        for h, v in conn.execute(
            "SELECT text_hash, vector FROM embeddings WHERE embedder = %s AND text_hash = ANY(%s)",
            (embedder, missing),
        ).fetchall():
            vectors[h] = as_array(v)
    for i in order:
        lacking = sum(1 for h in hashes[i] if h not in vectors)
        if lacking:
            raise CitelineError(
                f"{writes[i].document.source}: {lacking} chunks have no vector; nothing was changed."
            )
    fresh = sorted(set(vectors) - set(missing))
    if fresh:
        cur.executemany(
            "INSERT INTO embeddings (text_hash, embedder, vector) VALUES (%s, %s, %s) "
            "ON CONFLICT (text_hash, embedder) DO NOTHING",
            [(h, embedder, vectors[h]) for h in fresh],
        )
    chunk_rows = []
    new_tokens = 0
    for i in order:
        w = writes[i]
        for j, c in enumerate(w.chunks):
            at = offsets[i] + j
            new_tokens += len(tokens[at])
            chunk_rows.append(
                (
                    w.document.id,
                    c.id,
                    c.ordinal,
                    c.start,
                    c.end,
                    c.page,
                    c.page_end,
                    json.dumps(list(c.heading_trail)),
                    c.kind,
                    c.index_text,
                    hashes[i][j],
                    c.token_count,
                    len(tokens[at]),
                    tsvector_literal(tokens[at]),
                    vectors[hashes[i][j]],
                )
            )
    cur.executemany(
        'INSERT INTO chunks (document_id, chunk_id, ordinal, start, "end", page, page_end, heading, kind, '
        "index_text, text_hash, token_count, n_tokens, tsv, embedding) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s::tsvector,%s)",
        chunk_rows,
    )
    # BM25's postings: one row per (chunk, lexeme) with its frequency and the chunk's length.
    seqs = dict(
        conn.execute(
            "SELECT chunk_id, seq FROM chunks WHERE document_id = ANY(%s)", ([d.id for d in docs],)
        ).fetchall()
    )
    with cur.copy("COPY postings (document_id, lexeme, seq, tf, n_tokens) FROM STDIN") as copy:
        for i in order:
            w = writes[i]
            for j, c in enumerate(w.chunks):
                chunk_tokens = tokens[offsets[i] + j]
                for lexeme, tf in Counter(chunk_tokens).items():
                    copy.write_row((w.document.id, lexeme, seqs[c.id], tf, len(chunk_tokens)))
    _collect_garbage(conn, old_hashes - needed, old_contents - {d.content_hash for d in docs})
    return len(chunk_rows) - old_chunks, new_tokens - old_tokens
