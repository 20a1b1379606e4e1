"""The learned feature reranker and its late-interaction (MaxSim) variant, at unit level."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from citeline.build_context import StaticContext
from citeline.errors import ConfigError
from citeline.registry import registry
from citeline.rerank.learned import (
    FEATURES,
    LearnedReranker,
    TokenCache,
    feature_matrix,
    maxsim_scores,
    stem,
)

from ._hits import make_hit

COL = {name: i for i, name in enumerate(FEATURES)}


class FakeTokens:
    """Token vectors from a fixed word -> one-hot table: 'alpha' and 'alpha2' point the same way."""

    DIMS: ClassVar[dict[str, int]] = {"alpha": 0, "alpha2": 0, "beta": 1, "gamma": 2}

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        self.encoded += list(texts)
        out = []
        for text in texts:
            rows = []
            for word in text.lower().split():
                v = np.zeros(4, dtype=np.float32)
                v[self.DIMS.get(word, 3)] = 1.0
                rows.append(v)
            out.append(np.stack(rows))
        return out


def test_stem_matches_simple_inflections() -> None:
    assert stem("mutations") == stem("mutation") == stem("mutated") == "mutat"
    assert stem("reduced") == stem("reduction") == "reduc" and stem("cells") == "cell"
    assert stem("class") == "class"
    assert stem("p53") == "p53" and stem("dna") == "dna"


def test_features_are_scaled_per_query() -> None:
    hits = [
        make_hit(1, "insulin resistance in liver cells", title="Liver", bm25=(8.0, 1), dense=(0.70, 2)),
        make_hit(2, "exercise and muscle", title="Insulin resistance", bm25=(4.0, 2)),
        make_hit(3, "code ABC-123 appears here", title="", dense=(0.80, 1)),
    ]
    x = feature_matrix("insulin resistance in cells ABC-123", hits)
    assert x.shape == (3, len(FEATURES))
    assert x[:, COL["rrf"]].max() == pytest.approx(1.0)
    assert x[:, COL["bm25"]].tolist() == pytest.approx([1.0, 0.5, 0.0])
    # dense: minus the best; a hit without a dense score gets the worst minus 0.05
    assert x[:, COL["dense"]].tolist() == pytest.approx([-0.1, 0.70 - 0.05 - 0.80, 0.0])
    assert x[0, COL["coverage"]] > x[1, COL["coverage"]]  # "cells" only in hit 1's text
    assert x[1, COL["title"]] == pytest.approx(2 / 4)  # insulin, resistance of 4 terms
    assert x[:, COL["exact"]].tolist() == [0.0, 0.0, 1.0]
    assert (x[:, COL["maxsim"]] == 0).all()  # no token encoder given


def test_document_rrf_pools_a_documents_chunks() -> None:
    a1 = make_hit(1, "first half", bm25=(5.0, 1))
    a2 = make_hit(2, "second half", dense=(0.9, 1))
    a2 = a2.__class__(
        chunk=a2.chunk.__class__(**{**a2.chunk.__dict__, "document_id": "d1"}),
        source=a2.source,
        title=a2.title,
        score=a2.score,
        stages=a2.stages,
    )
    b = make_hit(3, "other", bm25=(4.0, 2), dense=(0.8, 2))
    x = feature_matrix("half", [a1, a2, b])
    # d1 has bm25 rank 1 (chunk 1) and dense rank 1 (chunk 2): the best document of the three.
    assert x[0, COL["doc_rrf"]] == x[1, COL["doc_rrf"]] == 1.0 > x[2, COL["doc_rrf"]]
    assert x[2, COL["rrf"]] == 1.0  # while chunk-level fusion prefers b


def test_weights_reorder_and_rrf_alone_keeps_fused_order() -> None:
    hits = [
        make_hit(1, "nothing relevant", bm25=(9.0, 1), dense=(0.6, 1)),
        make_hit(2, "the gearbox drives the rotor", bm25=(5.0, 2), dense=(0.5, 2)),
        make_hit(3, "rotor", bm25=(1.0, 3), dense=(0.4, 3)),
    ]
    assert [h.chunk.id for h in LearnedReranker({"rrf": 1.0}).rerank("gearbox rotor", hits)] == [
        "c1",
        "c2",
        "c3",
    ]
    out = LearnedReranker({"rrf": 1.0, "coverage": 1.0}).rerank("gearbox rotor", hits)
    assert [h.chunk.id for h in out] == ["c2", "c3", "c1"]
    assert [h.stages["rerank"].rank for h in out] == [1, 2, 3] and out[0].stages["bm25"].rank == 2
    with pytest.raises(ValueError, match="Unknown features"):
        LearnedReranker({"nope": 1.0})
    assert LearnedReranker().rerank("q", []) == []


def test_maxsim_late_interaction() -> None:
    enc = FakeTokens()
    cache = TokenCache(enc, max_items=2)
    scores = maxsim_scores("alpha beta", ["alpha2 gamma", "beta alpha", "gamma"], cache)
    # per query token, the best cosine with any text token, averaged over the query tokens
    assert scores.tolist() == pytest.approx([0.5, 1.0, 0.0])
    assert len(cache._items) == 2  # least recently used dropped
    enc.encoded.clear()
    maxsim_scores("alpha", ["gamma"], cache)
    assert enc.encoded == ["alpha"]  # the text's tokens came from the cache

    reranker = LearnedReranker({"maxsim": 1.0}, encoder=enc)
    hits = [make_hit(1, "gamma"), make_hit(2, "beta alpha"), make_hit(3, "alpha2 gamma")]
    assert [h.chunk.id for h in reranker.rerank("alpha beta", hits)] == ["c2", "c3", "c1"]


def test_late_interaction_needs_token_vectors(tmp_path: Path) -> None:
    assert {"learned", "late-interaction", "cross-encoder", "llm"} <= set(registry.names("reranker"))
    from citeline.embedding.hashing import HashingEmbedder

    with pytest.raises(ConfigError, match="token vectors"):
        registry.create("reranker", "late-interaction", StaticContext(embedder_=HashingEmbedder()))
    assert isinstance(registry.create("reranker", "learned", StaticContext()), LearnedReranker)


def test_the_relevance_reranker_weighs_the_guards_signal_over_the_fused_rank() -> None:
    from citeline.rerank.learned import RELEVANCE_WEIGHTS

    reranker = registry.create("reranker", "relevance", StaticContext())
    assert isinstance(reranker, LearnedReranker) and reranker.name == "relevance"
    assert RELEVANCE_WEIGHTS == {"rrf": 1.0, "dense": 0.6, "coverage": 0.4}
    hits = [
        make_hit(1, "nothing relevant here", bm25=(9.0, 1), dense=(0.60, 1)),
        make_hit(2, "the gearbox drives the rotor", bm25=(5.0, 2), dense=(0.58, 2)),
        make_hit(3, "rotor", bm25=(1.0, 3), dense=(0.20, 3)),
    ]
    # c2 names both terms at almost the best cosine; c3 names one term at a much lower cosine
    assert [h.chunk.id for h in reranker.rerank("gearbox rotor", hits)] == ["c2", "c1", "c3"]
