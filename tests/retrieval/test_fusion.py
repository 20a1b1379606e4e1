from __future__ import annotations

import random

import pytest
from ranx import Run as RanxRun
from ranx import fuse

from citeline.retrieval.fusion import RRF_K, convex_combination, min_max, reciprocal_rank_fusion

# ranx hashes doc ids into float64 columns; numba warns about the cast on every call.
pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")


def test_rrf_by_hand() -> None:
    # lists [a, b, c] and [b, c, d], k = 60, score = sum of 1 / (k + rank):
    #   a: 1/61                = 0.0163934
    #   b: 1/62 + 1/61         = 0.0161290 + 0.0163934 = 0.0325224
    #   c: 1/63 + 1/62         = 0.0158730 + 0.0161290 = 0.0320020
    #   d: 1/63                = 0.0158730
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "c", "d"]])
    assert [key for key, _ in fused] == ["b", "c", "a", "d"]
    expected = {"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63 + 1 / 62, "d": 1 / 63}
    assert dict(fused) == pytest.approx(expected)
    assert dict(fused)["b"] == pytest.approx(0.0325224, abs=1e-7)


def test_rrf_k_and_ties() -> None:
    # k = 1: single list [x, y] -> x: 1/2, y: 1/3
    assert reciprocal_rank_fusion([["x", "y"]], k=1) == [("x", 0.5), ("y", pytest.approx(1 / 3))]
    # [a, b] and [b, a] tie at 1/61 + 1/62 each; the tie goes to first appearance (a).
    fused = reciprocal_rank_fusion([["a", "b"], ["b", "a"]])
    assert [key for key, _ in fused] == ["a", "b"]
    assert fused[0][1] == fused[1][1]
    assert reciprocal_rank_fusion([]) == []
    assert RRF_K == 60


@pytest.mark.parametrize("k", [60, 10, 1])
def test_rrf_matches_ranx(k: int) -> None:
    # ranx: fuse(runs, norm=None, method="rrf", params={"k": ...}); k defaults to 60 there too,
    # and a doc at 0-based position i scores 1 / (k + i + 1), i.e. 1 / (k + rank).
    rng = random.Random(k)
    docs = [f"d{i}" for i in range(80)]
    rankings = [rng.sample(docs, rng.randint(5, 60)) for _ in range(3)]
    ours = dict(reciprocal_rank_fusion(rankings, k=k))
    runs = [RanxRun({"q": {doc_id: float(len(r) - i) for i, doc_id in enumerate(r)}}) for r in rankings]
    theirs = fuse(runs, norm=None, method="rrf", params={"k": k})
    assert set(theirs["q"]) == set(ours)
    for doc_id, score in ours.items():
        assert float(theirs["q"][doc_id]) == pytest.approx(score, abs=1e-12)


def test_ranx_rrf_default_k_is_60() -> None:
    runs = [RanxRun({"q": {"a": 2.0, "b": 1.0}}), RanxRun({"q": {"b": 2.0}})]
    theirs = fuse(runs, norm=None, method="rrf")
    assert float(theirs["q"]["a"]) == pytest.approx(1 / 61)
    assert float(theirs["q"]["b"]) == pytest.approx(1 / 62 + 1 / 61)


def test_min_max() -> None:
    # (s - lo) / (hi - lo) with lo = 0, hi = 10
    assert min_max({"a": 10.0, "b": 5.0, "c": 0.0}) == {"a": 1.0, "b": 0.5, "c": 0.0}
    assert min_max({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}
    assert min_max({}) == {}


def test_convex_combination_by_hand() -> None:
    lexical = {"a": 10.0, "b": 5.0, "c": 0.0}  # min-max -> a 1, b 0.5, c 0
    dense = {"b": 0.9, "d": 0.5, "a": 0.1}  # min-max -> b 1, d 0.5, a 0
    # alpha = 0.5: a = .5*0 + .5*1 = .5; b = .5*1 + .5*.5 = .75; c = 0; d = .5*.5 + .5*0 = .25
    fused = convex_combination(lexical, dense, alpha=0.5)
    assert [key for key, _ in fused] == ["b", "a", "d", "c"]
    assert dict(fused) == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.25})
    # alpha = 0.25: b = .25*1 + .75*.5 = .625; a = .75; d = .125; c = 0
    assert dict(convex_combination(lexical, dense, alpha=0.25)) == pytest.approx(
        {"a": 0.75, "b": 0.625, "c": 0.0, "d": 0.125}
    )
    # alpha = 1: dense only; a and c tie at 0 and keep key order (dense keys first, then lexical)
    assert convex_combination(lexical, dense, alpha=1.0) == [("b", 1.0), ("d", 0.5), ("a", 0.0), ("c", 0.0)]
    # alpha = 0: lexical only
    assert [key for key, _ in convex_combination(lexical, dense, alpha=0.0)][:2] == ["a", "b"]


def test_convex_combination_rejects_bad_alpha() -> None:
    for alpha in (-0.1, 1.1):
        with pytest.raises(ValueError, match="alpha must be within"):
            convex_combination({"a": 1.0}, {"a": 1.0}, alpha=alpha)
