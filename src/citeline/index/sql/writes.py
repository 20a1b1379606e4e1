"""Writing documents to a SQL store: a batch replaced in one transaction, removals, and dropping the
vectors and originals nothing uses any more. Both stores run this inside their write context.

A document replaces its old version (same id, or same collection and source) whole: the old rows
are deleted with everything they own, the new ones inserted, and the vectors and originals only
the old version used dropped. What a store derives from the chunks as they are written (FTS5 and
the change log by triggers in SQLite; tsvectors, postings and each chunk's vector in PostgreSQL)
is up to its ``insert_chunks``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np

from citeline.errors import CitelineError
from citeline.index.base import DocumentWrite, Vector
from citeline.index.sql import rows
from citeline.index.sql.dialect import Session, insert_sql, upsert_sql
from citeline.types import Chunk, Document, text_hash


@dataclass(frozen=True)
class NewChunk:
    """A chunk about to be inserted."""

    chunk: Chunk
    #: the values of rows.chunk_write_columns
    params: tuple[Any, ...]
    #: the index's embedder's vector; None for a pending chunk (progressive indexing)
    vector: Vector | None
    #: its place among the chunks of the batch, in the order of the writes (as the store's
    #: ``prepare`` saw them)
    at: int


#: the meta key naming the fast embedder while some chunks are pending (progressive indexing)
PENDING_KEY = "pending_embedder"

#: a store's insert of a batch's chunks (what it derives from them included); tokens added
InsertChunks = Callable[[Session, Sequence[NewChunk]], int]


@dataclass(frozen=True)
class Removed:
    """What deleting documents took away."""

    text_hashes: set[str]
    content_hashes: set[str]
    chunks: int
    tokens: int


def delete_documents(s: Session, ids: Sequence[str]) -> Removed:
    """Delete documents and every row they own."""
    d = s.dialect
    removed: list[tuple[Any, ...]] = []
    contents: list[tuple[Any, ...]] = []
    for part in d.batches(list(ids)):
        cond, params = d.in_list("document_id", part)
        removed += s.rows(f"DELETE FROM chunks WHERE {cond} RETURNING text_hash, {d.chunk_tokens}", params)
        for table in (*d.derived_tables, "doc_tags", "doc_acl"):
            s.execute(f"DELETE FROM {table} WHERE {cond}", params)
        cond, params = d.in_list(d.document_id, part)
        contents += s.rows(f"DELETE FROM documents WHERE {cond} RETURNING content_hash", params)
    return Removed(
        {r[0] for r in removed}, {r[0] for r in contents}, len(removed), sum(int(r[1]) for r in removed)
    )


def collect_garbage(s: Session, text_hashes: Iterable[str], content_hashes: Iterable[str]) -> None:
    """Drop the vectors of ``text_hashes`` no chunk uses any more, and the originals of
    ``content_hashes`` no document uses (after a removal or an edit)."""
    d = s.dialect
    for part in d.batches(sorted(set(text_hashes))):
        cond, params = d.in_list("text_hash", part)
        s.execute(
            f"DELETE FROM embeddings WHERE {cond} AND NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.text_hash = embeddings.text_hash)",
            params,
        )
    for part in d.batches(sorted(set(content_hashes))):
        cond, params = d.in_list("content_hash", part)
        s.execute(
            f"DELETE FROM blobs WHERE {cond} AND NOT EXISTS "
            "(SELECT 1 FROM documents d WHERE d.content_hash = blobs.content_hash)",
            params,
        )


def remove_documents(s: Session, ids: Sequence[str]) -> Removed:
    removed = delete_documents(s, ids)
    collect_garbage(s, removed.text_hashes, removed.content_hashes)
    return removed


def _old_versions(s: Session, docs: Sequence[Document]) -> list[tuple[Any, ...]]:
    """(id, collection, source, added_at) of the stored versions of ``docs``: by id, or by
    collection and source (each condition indexed)."""
    d = s.dialect
    found: list[tuple[Any, ...]] = []
    for part in d.batches(docs):
        cond, params = d.in_list(d.document_id, [doc.id for doc in part])
        for doc in part:
            cond += " OR (collection = ? AND source = ?)"
            params += [doc.collection, doc.source]
        found += s.rows(
            f"SELECT {d.document_id}, collection, source, added_at FROM documents WHERE {cond}", params
        )
    return found


def _vectors(
    s: Session, embedder: str, writes: Sequence[DocumentWrite], needed: set[str]
) -> dict[str, Vector]:
    """The writes' vectors of ``embedder``, and those of ``needed`` the store has cached already."""
    vectors: dict[str, Vector] = {}
    for w in writes:
        vectors.update((h, np.asarray(v, dtype=np.float32)) for h, v in w.vectors.items())
    return vectors | cached(s, embedder, needed - vectors.keys())


def cached(s: Session, embedder: str, text_hashes: Iterable[str]) -> dict[str, Vector]:
    """The vectors of ``embedder`` stored for ``text_hashes``."""
    d, vectors = s.dialect, dict[str, Vector]()
    for part in d.batches(sorted(text_hashes)):
        cond, params = d.in_list("text_hash", part)
        found = s.rows(
            f"SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND {cond}", [embedder, *params]
        )
        vectors.update((h, d.vector_value(v)) for h, v in found)
    return vectors


def _fast_vectors(
    s: Session, writes: Sequence[DocumentWrite], pending: set[str]
) -> tuple[dict[str, tuple[str, Vector]], str | None]:
    """For progressive writes: the fast vector of each ``pending`` text (given, else cached), by
    text hash with its embedder's name; and that embedder (the one fast embedder of the batch)."""
    found: dict[str, tuple[str, Vector]] = {}
    names = {w.vectors_from for w in writes if w.vectors_from is not None}
    if len(names) > 1:
        raise CitelineError(f"one fast embedder per write, not {sorted(names)}; nothing was changed.")
    for w in writes:
        if w.vectors_from is not None:
            found.update((h, (w.vectors_from, np.asarray(v, dtype=np.float32))) for h, v in w.vectors.items())
    name = next(iter(names), None)
    if name is not None:
        lacking = pending - found.keys()
        found.update((h, (name, v)) for h, v in cached(s, name, lacking).items())
    return {h: found[h] for h in pending if h in found}, name


def _insert_documents(s: Session, writes: Sequence[DocumentWrite], added: dict[Any, float]) -> None:
    d, now = s.dialect, time.time()
    blobs = {w.document.content_hash: w.original for w in writes if w.original is not None}
    s.many(
        insert_sql("blobs", ["content_hash", "data"], "ON CONFLICT (content_hash) DO NOTHING"), blobs.items()
    )
    params = []
    for w in writes:
        doc = w.document
        first = added.get(doc.id, added.get((doc.collection, doc.source)))
        added_at, updated_at = (doc.added_at, doc.updated_at) if w.keep_times else (first or now, now)
        params.append(rows.document_params(doc, w.text, w.page_starts, added_at, updated_at))
    s.many(insert_sql("documents", rows.document_write_columns(d)), params)
    docs = [w.document for w in writes]
    tags = [(doc.id, k, v) for doc in docs for k, v in doc.tags.items()]
    s.many(insert_sql("doc_tags", ["document_id", "key", "value"]), tags)
    s.many(
        insert_sql("doc_acl", ["document_id", "entry"]),
        [(doc.id, e) for doc in docs for e in sorted(set(doc.acl))],
    )


def write_documents(
    s: Session, embedder: str, writes: Sequence[DocumentWrite], insert_chunks: InsertChunks
) -> tuple[int, int, frozenset[str]]:
    """Replace each document of ``writes`` whole (a document given twice: the last wins); the
    change in (chunks, tokens), and the ids of the documents that were there (by id, or by
    collection and source). Raises CitelineError (the transaction rolls back) when a chunk has
    no vector, neither given nor cached for ``embedder``."""
    d = s.dialect
    latest = {w.document.id: i for i, w in enumerate(writes)}
    order = [i for i, w in enumerate(writes) if latest[w.document.id] == i]
    offsets = list(accumulate((len(w.chunks) for w in writes), initial=0))
    kept = [writes[i] for i in order]
    docs = [w.document for w in kept]
    old = _old_versions(s, docs)
    added = {r[0]: r[3] for r in old} | {(r[1], r[2]): r[3] for r in old}
    removed = delete_documents(s, sorted({r[0] for r in old}))
    _insert_documents(s, kept, added)

    hashes = {i: [text_hash(c.index_text) for c in writes[i].chunks] for i in order}
    needed = {h for i in order for h in hashes[i]}
    full_writes = [w for w in kept if w.vectors_from is None]
    vectors = _vectors(s, embedder, full_writes, needed)
    # Progressive writes: a text without the index's vector is pending, with its fast vector
    fast, fast_name = _fast_vectors(s, kept, needed - vectors.keys())
    for i in order:
        lacking = sum(1 for h in hashes[i] if h not in vectors and h not in fast)
        if lacking:
            raise CitelineError(
                f"{writes[i].document.source}: {lacking} chunks have no vector; nothing was changed."
            )
    given = {h: v for w in full_writes for h, v in w.vectors.items()}
    new_vectors = [(h, embedder, d.vector_param(v)) for h, v in sorted(given.items())]
    new_vectors += [(h, name, d.vector_param(v)) for h, (name, v) in sorted(fast.items())]
    s.many(
        insert_sql(
            "embeddings", ["text_hash", "embedder", "vector"], "ON CONFLICT (text_hash, embedder) DO NOTHING"
        ),
        new_vectors,
    )
    if fast_name is not None and fast:
        s.execute(upsert_sql("meta", "key", ["value"]), (PENDING_KEY, fast_name))
    new = [
        NewChunk(c, rows.chunk_params(c, writes[i].document.id, h), vectors.get(h), offsets[i] + j)
        for i in order
        for j, (c, h) in enumerate(zip(writes[i].chunks, hashes[i], strict=True))
    ]
    tokens = insert_chunks(s, new)
    collect_garbage(
        s, removed.text_hashes - needed, removed.content_hashes - {w.document.content_hash for w in kept}
    )
    existed = frozenset(doc.id for doc in docs if doc.id in added or (doc.collection, doc.source) in added)
    return len(new) - removed.chunks, tokens - removed.tokens, existed
