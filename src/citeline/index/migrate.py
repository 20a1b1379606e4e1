"""Copy an index from one store to another without re-embedding (`citeline migrate`).

Everything goes across through the Store contract, so any pair of stores works (an embedded
folder to PostgreSQL and back): documents with their text, pages, original bytes and timestamps,
chunks with their ids and spans, the vectors, settings, API keys with the per-index secret (so
the keys stay valid) and traces. Documents are copied oldest write first, so ties in ranking
(broken by insertion order) fall the same way. Re-running after an interruption skips what was
already copied.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from citeline.errors import CitelineError
from citeline.filters import Filter
from citeline.index.base import DocumentWrite, Store
from citeline.types import Document, text_hash

Progress = Callable[[str, int], None]


@dataclass
class MigrationReport:
    documents: int = 0
    skipped: int = 0
    chunks: int = 0
    vectors: int = 0
    traces: int = 0
    api_keys: int = 0
    settings: int = 0

    def summary(self) -> str:
        return (
            f"{self.documents} documents ({self.chunks} chunks, {self.vectors} vectors) copied, "
            f"{self.skipped} already there; {self.traces} traces, {self.api_keys} API keys, "
            f"{self.settings} settings"
        )


def migrate(
    source: Store, target: Store, progress: Progress | None = None, batch: int = 32, *, traces: bool = True
) -> MigrationReport:
    """Copy ``source`` into ``target``; ``traces=False`` leaves the traces behind (a scratch copy)."""
    info = source.embedder_info()
    if info is None:
        raise CitelineError(f"{source.location} holds no index to copy (no embedder bound yet).")
    if source.pending_embedder() is not None:  # only the index's embedder's vectors are copied
        raise CitelineError(
            f"{source.location} has chunks still waiting for their full vectors (progressive indexing): "
            "run `citeline embed` on it first, then copy it."
        )
    report = MigrationReport()
    target.bind_embedder(info.name, info.version, info.dim)  # EmbedderMismatchError for another one
    if target.api_keys() and target.secret() != source.secret():
        raise CitelineError(
            f"{target.location} already has API keys under another secret; copy into a new index instead."
        )
    target.adopt_secret(source.secret())
    settings = source.stored_settings()
    if settings:
        target.save_settings(settings)
    report.settings = len(settings)

    admin = Filter.admin()
    there = {d.id: d.content_hash for d in target.documents(admin)}
    docs = sorted(source.documents(admin), key=lambda d: (d.updated_at, d.collection, d.source))
    pending = [d for d in docs if there.get(d.id) != d.content_hash]
    report.skipped = len(docs) - len(pending)
    # Into an empty store that supports it: build the vector index once, after loading.
    bulk = getattr(target, "bulk_load", None) if not there and len(pending) > batch else None
    with bulk() if bulk is not None else nullcontext():
        for lo in range(0, len(pending), batch):
            writes = [_write_of(source, doc) for doc in pending[lo : lo + batch]]
            target.replace_documents(writes)
            report.documents += len(writes)
            report.chunks += sum(len(w.chunks) for w in writes)
            report.vectors += sum(len(w.vectors) for w in writes)
            if progress:
                progress("file", len(writes))

    for key in source.api_keys():
        if target.find_api_key(key.key_hash) is None:
            target.add_api_key(key)
            report.api_keys += 1
    for summary in reversed(source.list_traces(limit=2**31 - 1) if traces else []):  # oldest first
        trace = source.get_trace(summary.id)
        if trace is not None and target.get_trace(trace.id) is None:
            target.save_trace(trace)
            report.traces += 1
    return report


def _write_of(source: Store, doc: Document) -> DocumentWrite:
    """A document as stored, ready to write elsewhere (its vectors as they are: no re-embedding)."""
    found = source.chunks(source.document_chunks(doc.id))
    chunks = sorted((c for c, _ in found.values()), key=lambda c: c.ordinal)
    return DocumentWrite(
        doc,
        source.document_text(doc.id),
        chunks,
        source.cached_vectors(text_hash(c.index_text) for c in chunks),
        source.page_starts(doc.id),
        source.original(doc.id),
        keep_times=True,
    )
