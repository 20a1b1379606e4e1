"""LlamaIndex's documented hybrid setup, with citeline's embedder and citeline's chunks.

Query side (LlamaIndex "Reciprocal Rerank Fusion Retriever" example): a VectorStoreIndex
(default in-memory SimpleVectorStore) and a BM25Retriever (llama-index-retrievers-bm25, bm25s,
English stemmer and stopwords, built from the index's docstore), fused by a
QueryFusionRetriever in mode "reciprocal_rerank". num_queries=1: no LLM writes extra queries
(a MockLLM is passed so nothing resolves an OpenAI default); use_async=False: both retrievers
are in-process and CPU-bound. Every stage keeps TOP_K nodes.

Indexing side: each corpus file is one Document (id = its path, text = the file), turned into
citeline's chunks of that file by a transformation (so chunking is not what differs), embedded
by citeline's ONNX embedder wrapped as a BaseEmbedding (embed_batch_size 256 so that the
embedder's length-sorted batching works as in citeline). Cold ingest is
VectorStoreIndex.from_documents; re-adding uses the index's documented document management,
``refresh_ref_docs``: a Document whose hash is stored unchanged is skipped, a changed one is
deleted and inserted again (re-embedded). The IngestionPipeline's docstore upserts were not
usable here: they need a vector store that stores text, and the in-memory one does not. BM25
is rebuilt from the docstore whenever a refresh changed anything (BM25Retriever has no
incremental add).
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

import Stemmer
from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import BaseNode, NodeRelationship, TextNode, TransformComponent
from llama_index.retrievers.bm25 import BM25Retriever
from pydantic import PrivateAttr
from shared import TOP_K, SourceDoc

NAME = "llamaindex"
META_KEYS = ["beir_id", "source"]


def versions() -> dict[str, str]:
    return {
        "llama-index-core": version("llama-index-core"),
        "llama-index-retrievers-bm25": version("llama-index-retrievers-bm25"),
        "bm25s": version("bm25s"),
    }


class OnnxEmbedding(BaseEmbedding):
    """citeline's ONNX embedder as a LlamaIndex embedding model."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any, **kwargs: Any) -> None:
        super().__init__(model_name="minilm-int8", embed_batch_size=256, **kwargs)
        self._embedder = embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._embedder.embed([query])[0]]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder.embed([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed(texts)]


class CitelineChunks(TransformComponent):
    """A node parser that returns citeline's chunks of each Document (looked up by its id)."""

    _chunks: dict[str, SourceDoc] = PrivateAttr(default_factory=dict)

    def set_docs(self, docs: list[SourceDoc]) -> None:
        self._chunks = {d.source: d for d in docs}

    def __call__(self, nodes: Any, **kwargs: Any) -> list[BaseNode]:
        out: list[BaseNode] = []
        for doc in nodes:
            src = self._chunks[doc.id_]
            for c in src.chunks:
                out.append(
                    TextNode(
                        id_=c.key,
                        text=c.text,
                        metadata={"beir_id": src.beir_id, "source": src.source},
                        excluded_embed_metadata_keys=META_KEYS,
                        excluded_llm_metadata_keys=META_KEYS,
                        relationships={NodeRelationship.SOURCE: doc.as_related_node_info()},
                    )
                )
        return out


def to_documents(docs: list[SourceDoc]) -> list[Document]:
    return [
        Document(
            id_=d.source,
            text=d.text,
            metadata={"source": d.source},
            excluded_embed_metadata_keys=META_KEYS,
            excluded_llm_metadata_keys=META_KEYS,
        )
        for d in docs
    ]


class LlamaIndexPeer:
    def __init__(self, embedder: Any) -> None:
        self.embed_model = OnnxEmbedding(embedder)
        self.chunker = CitelineChunks()
        self.index: VectorStoreIndex | None = None
        self.retriever: QueryFusionRetriever | None = None

    def _build_retriever(self) -> None:
        assert self.index is not None
        bm25 = BM25Retriever.from_defaults(
            docstore=self.index.docstore,
            similarity_top_k=TOP_K,
            stemmer=Stemmer.Stemmer("english"),
            language="english",
        )
        self.retriever = QueryFusionRetriever(
            [self.index.as_retriever(similarity_top_k=TOP_K), bm25],
            llm=MockLLM(),
            similarity_top_k=TOP_K,
            num_queries=1,
            mode="reciprocal_rerank",
            use_async=False,
        )

    def ingest(self, docs: list[SourceDoc]) -> dict[str, int]:
        """Add or update ``docs``; returns how many chunks were embedded and files skipped."""
        self.chunker.set_docs(docs)
        documents = to_documents(docs)
        if self.index is None:
            self.index = VectorStoreIndex.from_documents(
                documents, transformations=[self.chunker], embed_model=self.embed_model
            )
            changed = list(docs)
        else:
            refreshed = self.index.refresh_ref_docs(documents)
            changed = [d for d, r in zip(docs, refreshed, strict=True) if r]
        if changed or self.retriever is None:
            self._build_retriever()
        return {
            "chunks_embedded": sum(len(d.chunks) for d in changed),
            "files_skipped": len(docs) - len(changed),
        }

    def count_chunks(self) -> int:
        assert self.index is not None
        return len(self.index.docstore.docs)

    def search(self, query: str) -> list[str]:
        assert self.retriever is not None
        return [n.node.node_id for n in self.retriever.retrieve(query)]


def save(peer: LlamaIndexPeer, folder: str) -> None:
    """The documented way to keep an index: its storage context persisted to a folder (docstore,
    index store and the in-memory vector store, as JSON)."""
    assert peer.index is not None
    peer.index.storage_context.persist(persist_dir=folder)


def update_saved(embedder: Any, folder: str, docs: list[SourceDoc]) -> dict[str, int]:
    """A new run of a user's re-index script: load the persisted index, ``refresh_ref_docs``,
    persist again when something changed. BM25 is not rebuilt here (a query process builds it from
    the docstore when it loads the index), which spares this peer that cost."""
    peer = LlamaIndexPeer(embedder)
    peer.chunker.set_docs(docs)
    peer.index = load_index_from_storage(
        StorageContext.from_defaults(persist_dir=folder),
        embed_model=peer.embed_model,
        transformations=[peer.chunker],
    )
    refreshed = peer.index.refresh_ref_docs(to_documents(docs))
    changed = [d for d, r in zip(docs, refreshed, strict=True) if r]
    if changed:
        save(peer, folder)
    return {"chunks_embedded": sum(len(d.chunks) for d in changed), "files_skipped": len(docs) - len(changed)}


def load_prebuilt(peer: LlamaIndexPeer, items: list[tuple[str, str, list[float]]]) -> None:
    """For the query-latency-at-scale run (scale.py): nodes that already carry their embedding
    (VectorStoreIndex embeds only nodes without one), then the same hybrid retriever."""
    nodes = [TextNode(id_=key, text=text, embedding=vector) for key, text, vector in items]
    peer.index = VectorStoreIndex(nodes, embed_model=peer.embed_model)
    peer._build_retriever()
