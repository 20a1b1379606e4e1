"""The offline default reranker: a linear combination of cheap per-chunk features.

No extra model: every feature comes from what retrieval already computed (the BM25, dense
and fused scores and ranks of each hit) or from the query and chunk text. The weights were
fitted by coordinate ascent on nDCG@10 over SciFact *train* (809 queries), then checked once on
SciFact test and on PubMedQA (see ``benchmarks/bench_retrieval.py --tune``).

Features, each scaled within the candidate list of one query so weights transfer across queries:

* ``rrf``       reciprocal-rank fusion of the BM25 and dense ranks, ``1/(60+r)`` each (a missing
                rank counts as one past the deepest rank among the candidates), divided by its maximum.
* ``doc_rrf``   the same over documents: each list's best rank among the document's candidate chunks.
* ``bm25``      BM25 score / the best BM25 score among the candidates (0 when absent).
* ``dense``     cosine of the chunk's vector with the query's, minus the best candidate's
                (absent: the worst candidate's minus 0.05).
* ``coverage``  share of the query's terms found in the chunk, each term weighted by its rarity
                among the candidates (a term every candidate has says little).
* ``title``     share of the query's terms found in the document title.
* ``exact``     share of the query's identifiers (codes, numbers, dotted names) found verbatim.

Scoring is per chunk; the evaluation collapses chunks to documents by their best chunk.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.models import Hit, StageScore
from citeline.retrieval.bm25 import is_identifier, query_terms

FEATURES: tuple[str, ...] = ("rrf", "doc_rrf", "bm25", "dense", "coverage", "title", "exact")

# Fitted on SciFact train (see the module docstring); "rrf" alone reproduces plain RRF order.
DEFAULT_WEIGHTS: dict[str, float] = {
    "rrf": 1.0,
    "doc_rrf": 0.0,
    "bm25": 0.0,
    "dense": 0.0,
    "coverage": 0.0,
    "title": 0.0,
    "exact": 0.0,
}

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = (
    "ational",
    "ization",
    "fulness",
    "ousness",
    "iveness",
    "ements",
    "ement",
    "ments",
    "ment",
    "ities",
    "ation",
    "ness",
    "ings",
    "ing",
    "ies",
    "ied",
    "ed",
    "es",
    "ly",
    "s",
)


def stem(word: str) -> str:
    """A light suffix stripper: enough to match 'mutations' with 'mutation' or 'reduced' with 'reduce'."""
    if len(word) <= 4 or any(ch.isdigit() for ch in word):
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower())}


def _term_stems(term: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(term)]


def feature_matrix(query: str, hits: Sequence[Hit], rrf_k: int = 60) -> npt.NDArray[np.float64]:
    """(len(hits), len(FEATURES)) features of each hit for this query."""
    n = len(hits)
    out = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if n == 0:
        return out
    col = {name: i for i, name in enumerate(FEATURES)}

    # A chunk missing from a list ranks just past the deepest rank seen (or the candidate count).
    missing = {
        stage: max([n, *(h.stages[stage].rank for h in hits if stage in h.stages)]) + 1
        for stage in ("bm25", "dense")
    }

    def rank(hit: Hit, stage: str) -> int:
        s = hit.stages.get(stage)
        return s.rank if s is not None else missing[stage]

    rrf = np.array([1.0 / (rrf_k + rank(h, "bm25")) + 1.0 / (rrf_k + rank(h, "dense")) for h in hits])
    out[:, col["rrf"]] = rrf / rrf.max()
    # The same fusion over documents: a chunk's document takes the best rank any of its candidate
    # chunks has in each list (one chunk may match the keywords, another the meaning).
    best: dict[str, list[int]] = {}
    for h in hits:
        b = best.setdefault(h.chunk.document_id, [missing["bm25"], missing["dense"]])
        b[0], b[1] = min(b[0], rank(h, "bm25")), min(b[1], rank(h, "dense"))
    doc_rrf = np.array(
        [
            1.0 / (rrf_k + best[h.chunk.document_id][0]) + 1.0 / (rrf_k + best[h.chunk.document_id][1])
            for h in hits
        ]
    )
    out[:, col["doc_rrf"]] = doc_rrf / doc_rrf.max()

    bm25 = np.array([h.stages["bm25"].score if "bm25" in h.stages else 0.0 for h in hits])
    top = bm25.max()
    out[:, col["bm25"]] = bm25 / top if top > 0 else 0.0

    known = [h.stages["dense"].score for h in hits if "dense" in h.stages]
    if known:
        top_cos, low_cos = max(known), min(known)
        out[:, col["dense"]] = [
            (h.stages["dense"].score if "dense" in h.stages else low_cos - 0.05) - top_cos for h in hits
        ]

    terms = query_terms(query)
    if terms:
        chunk_stems = [_stems(h.chunk.index_text) for h in hits]
        title_stems = [_stems(h.title) for h in hits]
        term_stems = [_term_stems(t) for t in terms]
        present = np.array(
            [[all(s in cs for s in ts) for ts in term_stems] for cs in chunk_stems], dtype=np.float64
        )
        df = present.sum(axis=0)
        weights = np.array([math.log(1.0 + (n + 1) / (d + 0.5)) for d in df])
        out[:, col["coverage"]] = present @ weights / weights.sum()
        out[:, col["title"]] = [
            sum(all(s in ts for s in term) for term in term_stems) / len(terms) for ts in title_stems
        ]
        identifiers = [t for t in terms if is_identifier(t)]
        if identifiers:
            out[:, col["exact"]] = [
                sum(t in h.chunk.index_text.lower() for t in identifiers) / len(identifiers) for h in hits
            ]
    return out


class LearnedReranker:
    """score = sum of weight * feature; ties keep the incoming (fused) order."""

    def __init__(
        self, weights: Mapping[str, float] | None = None, name: str = "learned", rrf_k: int = 60
    ) -> None:
        w = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = set(w) - set(FEATURES)
        if unknown:
            raise ValueError(f"Unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        self.weights = np.array([w.get(f, 0.0) for f in FEATURES], dtype=np.float64)
        self.name = name
        self.rrf_k = rrf_k

    def scores(self, query: str, hits: Sequence[Hit]) -> npt.NDArray[np.float64]:
        return np.asarray(feature_matrix(query, hits, self.rrf_k) @ self.weights, dtype=np.float64)

    def rerank(self, query: str, hits: Sequence[Hit]) -> list[Hit]:
        if not hits:
            return []
        scores = self.scores(query, hits)
        order = sorted(range(len(hits)), key=lambda i: (-float(scores[i]), i))
        return [
            replace(
                hits[i],
                score=float(scores[i]),
                stages={**hits[i].stages, "rerank": StageScore(float(scores[i]), rank)},
            )
            for rank, i in enumerate(order, 1)
        ]


def make_learned(
    settings: Any = None, weights: Mapping[str, float] | None = None, **_: Any
) -> LearnedReranker:
    rrf_k = int(getattr(settings, "rrf_k", 60)) if settings is not None else 60
    return LearnedReranker(weights, rrf_k=rrf_k)
