"""Offline rerankers: a linear combination of per-chunk features.

``relevance`` adds to the fused rank the refusal guard's own weights for the dense
cosine and the term coverage (0.6 / 0.4; answer/relevance.py): nothing fitted, microseconds.
``learned`` uses only what retrieval already computed (the BM25, dense and fused scores and ranks
of each hit) and the query and chunk text: no model run, microseconds. ``late-interaction`` adds
MaxSim over the embedder's own contextual token vectors, which costs one encoder pass over the
candidates per query. The weights of these two were fitted by coordinate ascent on nDCG@10 over
SciFact *train* (CC BY-NC: options only), then SciFact test and PubMedQA were
measured once (``benchmarks/bench_retrieval.py --tune``).

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
* ``maxsim``    late interaction (ColBERT's MaxSim) over the embedder's contextual token vectors:
                the mean over query tokens of the best cosine with any chunk token, minus the best
                candidate's. The only feature that runs the model at query time (one encoder pass
                per candidate, cached by text), so it is computed only when its weight is non-zero.

Scoring is per chunk; the evaluation collapses chunks to documents by their best chunk.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np
import numpy.typing as npt

from citeline.errors import ConfigError
from citeline.query.analysis import Query, analyze
from citeline.text.terms import is_identifier
from citeline.types import Hit, StageScore

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

FEATURES: tuple[str, ...] = ("rrf", "doc_rrf", "bm25", "dense", "coverage", "title", "exact", "maxsim")

# Fitted on all 809 SciFact train queries (nDCG@10 0.7247 -> 0.7405 in-sample; on held-out halves of
# train +0.008 and +0.003). Features that need no model: cheap, but a small gain.
DEFAULT_WEIGHTS: dict[str, float] = {
    "rrf": 1.0,
    "doc_rrf": -0.3,
    "dense": 0.75,
    "coverage": 0.5,
    "exact": 0.1,
}

# The late-interaction reranker: fused rank plus MaxSim, fitted on a seeded sample of 240 SciFact train
# queries (0.7117 -> 0.7307 in-sample; held-out halves +0.007 and +0.028). Adding the cheap features
# to it did not hold up on held-out halves, so they are left out.
LATE_INTERACTION_WEIGHTS: dict[str, float] = {"rrf": 1.0, "maxsim": 3.0}

# The fused rank plus the refusal guard's own relevance signal (0.6 dense cosine, 0.4 term coverage;
# answer/relevance.py), no weight fitted on any dataset. Golden dev: answers naming the gold 0.673 ->
# 0.694, refusal recall 0.750 -> 0.812 (the SciFact-fitted weights gave the same there; weights
# refitted on PubMedQA train 0.633). Not the default: the held-out golden test fell (README, Reranking).
RELEVANCE_WEIGHTS: dict[str, float] = {"rrf": 1.0, "dense": 0.6, "coverage": 0.4}

_WORD = re.compile(r"\w+", re.UNICODE)


def stem(word: str) -> str:
    """Truncation stemming: a plural 's' dropped, then the first five characters.

    Crude but consistent on both sides: 'mutations', 'mutation' and 'mutated' all give 'mutat',
    'reduced' and 'reduction' give 'reduc'. Words with digits stay whole.
    """
    if any(ch.isdigit() for ch in word):
        return word
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower())}


def _term_stems(term: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(term)]


class TokenEncoder(Protocol):
    def token_vectors(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]: ...


class TokenCache:
    """Token vectors of chunk texts, least recently used dropped first (fp16 to halve memory)."""

    def __init__(self, encoder: TokenEncoder, max_items: int = 2048) -> None:
        self.encoder = encoder
        self.max_items = max_items
        self._items: OrderedDict[str, npt.NDArray[np.float16]] = OrderedDict()

    def get(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        keys = [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
        todo = list(dict.fromkeys(k for k in keys if k not in self._items))
        if todo:
            first = {k: t for k, t in zip(keys, texts, strict=True)}
            for k, v in zip(todo, self.encoder.token_vectors([first[k] for k in todo]), strict=True):
                self._items[k] = v.astype(np.float16)
        out = []
        for k in keys:
            self._items.move_to_end(k)
            out.append(self._items[k].astype(np.float32))
        while len(self._items) > self.max_items:
            self._items.popitem(last=False)
        return out


def maxsim_scores(query: str, texts: Sequence[str], cache: TokenCache) -> npt.NDArray[np.float64]:
    """Mean over query tokens of the best cosine with any token of each text."""
    q = cache.encoder.token_vectors([query])[0]
    return np.array([float((q @ d.T).max(axis=1).mean()) for d in cache.get(texts)], dtype=np.float64)


def feature_matrix(
    query: Query | str, hits: Sequence[Hit], rrf_k: int = 60, tokens: TokenCache | None = None
) -> npt.NDArray[np.float64]:
    """(len(hits), len(FEATURES)) features of each hit for this query (maxsim only with ``tokens``)."""
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

    query = analyze(query)
    terms = list(query.terms)
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
    if tokens is not None:
        sims = maxsim_scores(query.text, [h.chunk.index_text for h in hits], tokens)
        out[:, col["maxsim"]] = sims - sims.max()
    return out


class LearnedReranker:
    """score = sum of weight * feature; ties keep the incoming (fused) order."""

    def __init__(
        self,
        weights: Mapping[str, float] | None = None,
        name: str = "learned",
        rrf_k: int = 60,
        encoder: TokenEncoder | None = None,
    ) -> None:
        w = dict(DEFAULT_WEIGHTS if weights is None else weights)
        unknown = set(w) - set(FEATURES)
        if unknown:
            raise ValueError(f"Unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        self.weights = np.array([w.get(f, 0.0) for f in FEATURES], dtype=np.float64)
        self.name = name
        self.rrf_k = rrf_k
        self.tokens: TokenCache | None = None
        if w.get("maxsim", 0.0):
            if encoder is None or not hasattr(encoder, "token_vectors"):
                raise ConfigError(
                    f"The '{name}' reranker needs an embedder with token vectors (an ONNX transformer "
                    "such as minilm-int8); this index's embedder has none. Use the 'learned' reranker."
                )
            self.tokens = TokenCache(encoder)

    def scores(self, query: Query | str, hits: Sequence[Hit]) -> npt.NDArray[np.float64]:
        matrix = feature_matrix(query, hits, self.rrf_k, self.tokens)
        return np.asarray(matrix @ self.weights, dtype=np.float64)

    def rerank(self, query: Query | str, hits: Sequence[Hit]) -> list[Hit]:
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


def learned_factory(context: BuildContext | None, argument: str | None) -> LearnedReranker:
    return LearnedReranker(rrf_k=_rrf_k(context))


def relevance_factory(context: BuildContext | None, argument: str | None) -> LearnedReranker:
    return LearnedReranker(RELEVANCE_WEIGHTS, name="relevance", rrf_k=_rrf_k(context))


def _rrf_k(context: BuildContext | None) -> int:
    """The settings' fusion constant (the fused rank is a feature), else the default 60."""
    return context.settings.rrf_k if context is not None else 60


def late_interaction_factory(context: BuildContext | None, argument: str | None) -> LearnedReranker:
    if context is None:
        raise ConfigError(
            "The late-interaction reranker needs the index's embedder (build it from settings)."
        )
    return LearnedReranker(
        LATE_INTERACTION_WEIGHTS,
        name="late-interaction",
        rrf_k=context.settings.rrf_k,
        encoder=cast("TokenEncoder", context.embedder),  # token vectors are checked in __init__
    )
