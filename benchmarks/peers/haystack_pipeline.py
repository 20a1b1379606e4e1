"""Haystack's documented hybrid setup, with citeline's embedder and citeline's chunks.

Query side (Haystack tutorial "Creating a Hybrid Retrieval Pipeline", joiner in RRF mode):
one InMemoryDocumentStore (defaults: BM25L, dot product on our normalised vectors), a text
embedder feeding an InMemoryEmbeddingRetriever, an InMemoryBM25Retriever beside it, and a
DocumentJoiner(join_mode="reciprocal_rank_fusion"). Every stage keeps TOP_K documents.

Indexing side: the documented way to avoid re-indexing what is already stored is the
CacheChecker component (haystack.components.caching): each chunk carries its file's content hash
in ``meta.file_hash``, and the files whose hash is found are skipped before embedding. A file
whose hash is missing (new or edited) has its old chunks deleted (filter on ``meta.source``),
then its chunks go through the document embedder into a DocumentWriter with
DuplicatePolicy.SKIP. Chunk ids are the shared "<beir id>#<ordinal>" keys.
"""

from __future__ import annotations

from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline, component
from haystack.components.caching import CacheChecker
from haystack.components.joiners import DocumentJoiner
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever
from haystack.components.writers import DocumentWriter
from haystack.document_stores.in_memory import InMemoryDocumentStore
from haystack.document_stores.types import DuplicatePolicy
from shared import TOP_K, SourceDoc

NAME = "haystack"


def versions() -> dict[str, str]:
    return {"haystack-ai": version("haystack-ai")}


@component
class OnnxDocumentEmbedder:
    """citeline's ONNX embedder as a Haystack document embedder (embeds ``content``)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        vectors = self.embedder.embed([d.content or "" for d in documents])
        return {
            "documents": [replace(d, embedding=v.tolist()) for d, v in zip(documents, vectors, strict=True)]
        }


@component
class OnnxTextEmbedder:
    """citeline's ONNX embedder as a Haystack text embedder (the query)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, Any]:
        return {"embedding": self.embedder.embed([text])[0].tolist()}


class HaystackPeer:
    def __init__(self, embedder: Any, store: InMemoryDocumentStore | None = None) -> None:
        self.store = store if store is not None else InMemoryDocumentStore()
        self.checker = CacheChecker(document_store=self.store, cache_field="file_hash")
        self.indexing = Pipeline()
        self.indexing.add_component("embedder", OnnxDocumentEmbedder(embedder))
        self.indexing.add_component(
            "writer", DocumentWriter(document_store=self.store, policy=DuplicatePolicy.SKIP)
        )
        self.indexing.connect("embedder.documents", "writer.documents")

        self.query = Pipeline()
        self.query.add_component("text_embedder", OnnxTextEmbedder(embedder))
        self.query.add_component("embedding_retriever", InMemoryEmbeddingRetriever(self.store, top_k=TOP_K))
        self.query.add_component("bm25_retriever", InMemoryBM25Retriever(self.store, top_k=TOP_K))
        self.query.add_component(
            "document_joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=TOP_K)
        )
        self.query.connect("text_embedder.embedding", "embedding_retriever.query_embedding")
        self.query.connect("bm25_retriever", "document_joiner")
        self.query.connect("embedding_retriever", "document_joiner")

    def ingest(self, docs: list[SourceDoc]) -> dict[str, int]:
        """Add or update ``docs``; returns how many chunks were embedded and files skipped."""
        misses = set(self.checker.run(items=[d.file_hash for d in docs])["misses"])
        changed = [d for d in docs if d.file_hash in misses]
        stale: list[str] = []
        for d in changed:
            old = self.store.filter_documents({"field": "meta.source", "operator": "==", "value": d.source})
            stale += [o.id for o in old]
        if stale:
            self.store.delete_documents(stale)
        fresh = [
            Document(
                id=c.key,
                content=c.text,
                meta={"source": d.source, "beir_id": d.beir_id, "file_hash": d.file_hash},
            )
            for d in changed
            for c in d.chunks
        ]
        if fresh:
            self.indexing.run({"embedder": {"documents": fresh}})
        return {"chunks_embedded": len(fresh), "files_skipped": len(docs) - len(changed)}

    def count_chunks(self) -> int:
        return int(self.store.count_documents())

    def search(self, query: str) -> list[str]:
        out = self.query.run({"text_embedder": {"text": query}, "bm25_retriever": {"query": query}})
        return [d.id for d in out["document_joiner"]["documents"]]


def save(peer: HaystackPeer, folder: str) -> None:
    """The in-memory store's documented way to keep its documents: ``save_to_disk`` (JSON)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    peer.store.save_to_disk(str(Path(folder) / "store.json"))


def update_saved(embedder: Any, folder: str, docs: list[SourceDoc]) -> dict[str, int]:
    """A new run of a user's re-index script: ``load_from_disk``, the same indexing as
    :meth:`HaystackPeer.ingest`, ``save_to_disk`` again when something changed."""
    store = InMemoryDocumentStore.load_from_disk(str(Path(folder) / "store.json"))
    loaded = HaystackPeer(embedder, store)
    stats = loaded.ingest(docs)
    if stats["files_skipped"] < len(docs):
        save(loaded, folder)
    return stats


def load_prebuilt(peer: HaystackPeer, items: list[tuple[str, str, list[float]]]) -> None:
    """For the query-latency-at-scale run (scale.py): documents that already carry their embedding,
    written by a DocumentWriter; the query pipeline is the same."""
    writer = DocumentWriter(document_store=peer.store, policy=DuplicatePolicy.SKIP)
    writer.run(documents=[Document(id=key, content=text, embedding=vector) for key, text, vector in items])
