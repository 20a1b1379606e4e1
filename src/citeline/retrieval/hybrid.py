"""Hybrid retrieval: BM25 and dense top-k, each pre-filtered, merged by fusion.

With an LLM expansion (rewrites, a hypothetical passage) every extra query adds its own
BM25 and dense lists, and all lists are merged by reciprocal rank fusion.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from citeline.embedding.base import Embedder
from citeline.index.base import Store
from citeline.models import Hit, StageScore
from citeline.retrieval.filters import Filter
from citeline.retrieval.fusion import convex_combination, reciprocal_rank_fusion
from citeline.retrieval.query import Query, analyze
from citeline.retrieval.rewrite import Expansion, QueryExpander


@dataclass
class Retrieval:
    """Everything one retrieval produced, kept for traces and evaluation."""

    query: Query
    hits: list[Hit]
    lexical: list[tuple[str, float]]
    dense: list[tuple[str, float]]
    query_vector: np.ndarray
    timings_ms: dict[str, float] = field(default_factory=dict)
    expansion: Expansion | None = None


class HybridRetriever:
    def __init__(self, store: Store, embedder: Embedder, expander: QueryExpander | None = None) -> None:
        self.store = store
        self.embedder = embedder
        self.expander = expander

    def retrieve(
        self,
        query: Query | str,
        flt: Filter,
        k: int = 30,
        fusion: str = "rrf",
        rrf_k: int = 60,
        alpha: float = 0.5,
        stages: tuple[str, ...] = ("bm25", "dense"),
        expansion: Expansion | None = None,
    ) -> Retrieval:
        query = analyze(query)
        timings: dict[str, float] = {}
        if expansion is None and self.expander is not None:
            t = time.perf_counter()
            expansion = self.expander.expand(query.text)
            timings["expand_query"] = (time.perf_counter() - t) * 1000
        expansion = expansion if expansion is not None and not expansion.is_empty else None
        extra = [*expansion.queries, *([expansion.passage] if expansion.passage else [])] if expansion else []
        t = time.perf_counter()
        vectors = self.embedder.embed([query.text, *extra])
        vector = vectors[0]
        timings["embed_query"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        lexical = self.store.keyword_search(query, flt, k) if "bm25" in stages else []
        timings["bm25"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        dense = self.store.vector_search(vector, flt, k) if "dense" in stages else []
        timings["dense"] = (time.perf_counter() - t) * 1000
        lists = [[c for c, _ in lexical], [c for c, _ in dense]]
        if expansion is not None:
            t = time.perf_counter()
            for i, text in enumerate(extra, 1):
                if "bm25" in stages and i <= len(expansion.queries):  # the passage is for dense only
                    lists.append([c for c, _ in self.store.keyword_search(text, flt, k)])
                if "dense" in stages:
                    lists.append([c for c, _ in self.store.vector_search(vectors[i], flt, k)])
            timings["expansion_search"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        if fusion == "convex" and expansion is None:
            fused = convex_combination(dict(lexical), dict(dense), alpha)
        else:
            fused = reciprocal_rank_fusion(lists, k=rrf_k)
        per_stage = {
            "bm25": {c: StageScore(s, r) for r, (c, s) in enumerate(lexical, 1)},
            "dense": {c: StageScore(s, r) for r, (c, s) in enumerate(dense, 1)},
        }
        resolved = self.store.chunks([c for c, _ in fused[:k]])
        hits: list[Hit] = []
        for rank, (chunk_id, score) in enumerate(fused[:k], 1):
            if chunk_id not in resolved:
                continue  # removed between the two reads
            chunk, doc = resolved[chunk_id]
            stage_scores = {
                name: scores[chunk_id] for name, scores in per_stage.items() if chunk_id in scores
            }
            stage_scores["fused"] = StageScore(score, rank)
            hits.append(
                Hit(chunk=chunk, source=doc.source, title=doc.title, score=score, stages=stage_scores)
            )
        timings["fuse"] = (time.perf_counter() - t) * 1000
        return Retrieval(query, hits, lexical, dense, vector, timings, expansion)
