"""Hybrid retrieval: BM25 and dense top-k, each pre-filtered, merged by fusion.

With an LLM expansion (rewrites, a hypothetical passage) every extra query adds its own
BM25 and dense lists, and all lists are merged by reciprocal rank fusion.

The dense side (query embeddings and vector searches) runs behind a circuit breaker
(retrieval/breaker.py) while the keyword side runs: when it fails or exceeds its latency budget
the retrieval is keyword-only and ``Retrieval.degraded`` says why.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from citeline.embedding.base import Embedder
from citeline.errors import ConvexWithExpansionError
from citeline.filters import Filter
from citeline.index.base import Store
from citeline.query.analysis import Query, analyze
from citeline.retrieval.breaker import CircuitBreaker
from citeline.retrieval.fusion import convex_combination, lift_exact, reciprocal_rank_fusion
from citeline.retrieval.progressive import PendingSide, Rescorer, pending_side
from citeline.retrieval.rewrite import Expansion, QueryExpander
from citeline.types import Hit, StageScore


@dataclass
class Retrieval:
    """Everything one retrieval produced, kept for traces and evaluation."""

    query: Query
    hits: list[Hit]
    lexical: list[tuple[str, float]]
    dense: list[tuple[str, float]]
    #: None when the dense side did not answer (``degraded`` says why)
    query_vector: np.ndarray | None
    timings_ms: dict[str, float] = field(default_factory=dict)
    expansion: Expansion | None = None
    #: why this retrieval is keyword-only (the dense side failed, was too slow, or is switched off)
    degraded: str | None = None


_DenseLists = tuple[
    np.ndarray | None, list[tuple[str, float]], list[list[str]], dict[str, float], PendingSide
]


class HybridRetriever:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        expander: QueryExpander | None = None,
        breaker: CircuitBreaker | None = None,
        fast: Callable[[str], Embedder] | None = None,
        rescore: int = 0,
        rescore_budget_ms: float = 0.0,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.expander = expander
        #: guards the dense side; None runs it inline and lets its errors through
        self.breaker = breaker
        #: progressive indexing (retrieval/progressive.py): the fast embedder by name, and how many
        #: pending chunks are rescored with ``embedder`` at query time (0: rank fusion instead)
        self.fast = fast
        self.rescore = rescore
        self.rescore_budget_ms = rescore_budget_ms

    def _dense_side(self, texts: list[str], flt: Filter, k: int, stages: tuple[str, ...]) -> _DenseLists:
        """Query vectors, the main dense list and one dense list per extra query."""
        timings: dict[str, float] = {}
        t = time.perf_counter()
        vectors = self.embedder.embed(texts)
        timings["embed_query"] = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        dense = self.store.vector_search(vectors[0], flt, k) if "dense" in stages else []
        timings["dense"] = (time.perf_counter() - t) * 1000
        side = PendingSide()
        if "dense" in stages and self.fast is not None:
            side = pending_side(self.store, self.fast, texts[0], flt, k)
            timings.update(side.timings_ms)
        extra: list[list[str]] = []
        if "dense" in stages:
            t = time.perf_counter()
            extra = [[c for c, _ in self.store.vector_search(v, flt, k)] for v in vectors[1:]]
            timings["expansion_dense"] = (time.perf_counter() - t) * 1000
        return vectors[0], dense, extra, timings, side

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
        if fusion == "convex" and (self.expander is not None or (expansion and not expansion.is_empty)):
            raise ConvexWithExpansionError(
                f"query_expansion = {self.expander.mode if self.expander else 'given'}"
            )
        timings: dict[str, float] = {}
        if expansion is None and self.expander is not None:
            t = time.perf_counter()
            expansion = self.expander.expand(query.text)
            timings["expand_query"] = (time.perf_counter() - t) * 1000
        expansion = expansion if expansion is not None and not expansion.is_empty else None
        extra = [*expansion.queries, *([expansion.passage] if expansion.passage else [])] if expansion else []
        texts = [query.text, *extra]
        started_at = time.perf_counter()
        degraded = None
        if self.breaker is None:
            started = None
            outcome = self._dense_side(texts, flt, k, stages)
        else:
            started = self.breaker.submit(lambda: self._dense_side(texts, flt, k, stages))
        t = time.perf_counter()
        lexical = self.store.keyword_search(query, flt, k) if "bm25" in stages else []
        timings["bm25"] = (time.perf_counter() - t) * 1000
        extra_lexical: list[list[str]] = []
        if expansion is not None and "bm25" in stages:  # the passage is for dense only
            t = time.perf_counter()
            extra_lexical = [[c for c, _ in self.store.keyword_search(q, flt, k)] for q in expansion.queries]
            timings["expansion_bm25"] = (time.perf_counter() - t) * 1000
        if self.breaker is not None and started is not None:
            t = time.perf_counter()
            waited = self.breaker.result(started, started_at)
            timings["dense_wait"] = (time.perf_counter() - t) * 1000
            degraded = waited.degraded
            outcome = waited.value if waited.value is not None else (None, [], [], {}, PendingSide())
        vector, dense, extra_dense, dense_timings, side = outcome
        timings.update(dense_timings)
        if side.fast and self.rescore > 0 and vector is not None:  # retrieval/progressive.py
            rescorer = Rescorer(self.store, self.embedder, self.rescore, rrf_k, self.rescore_budget_ms)
            dense = rescorer.dense(vector, lexical, dense, side)[:k]
            timings["rescore"] = side.timings_ms["rescore"]
        lists = [[c for c, _ in lexical], [c for c, _ in dense]]
        if side.fast:  # rank fusion of the pending chunks' own list (retrieval/progressive.py)
            lists.append([c for c, _ in side.fast])
        for i in range(len(extra)):  # each extra query's lists in turn (fusion breaks ties by order)
            lists += extra_lexical[i : i + 1] + extra_dense[i : i + 1]
        t = time.perf_counter()
        if fusion == "convex" and expansion is None and degraded is None and not side.fast:
            fused = convex_combination(dict(lexical), dict(dense), alpha)
        else:
            fused = reciprocal_rank_fusion(lists, k=rrf_k)
        per_stage = {
            "bm25": {c: StageScore(s, r) for r, (c, s) in enumerate(lexical, 1)},
            "dense": {c: StageScore(s, r) for r, (c, s) in enumerate(dense, 1)},
            **side.stages(),
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
        codes = exact_codes(query)
        if codes:
            named = {id(h): any(mentions(c, h.chunk.index_text) for c in codes) for h in hits}
            by_id = {id(h): h for h in hits}
            hits = [by_id[i] for i in lift_exact([id(h) for h in hits], named)]
        timings["fuse"] = (time.perf_counter() - t) * 1000
        return Retrieval(query, hits, lexical, dense, vector, timings, expansion, degraded)


def exact_codes(query: Query) -> list[str]:
    """The question's codes that name one thing exactly: letters mixed with digits ("40P01",
    "ldg-4012", "e0425"); a snake_case setting's name is mentioned on many pages, most of them
    not about it, so it does not lift."""
    return [
        c
        for c in query.codes
        if " " not in c and any(ch.isdigit() for ch in c) and any(ch.isalpha() for ch in c)
    ]


def mentions(code: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(code)}(?![\w-])", text, re.IGNORECASE) is not None
