"""MMR context selection: near-duplicates are skipped, relevance still leads."""

from __future__ import annotations

import numpy as np
import pytest

from citeline.retrieval.diversity import NEAR_DUPLICATE, mmr
from citeline.settings import Settings


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_near_duplicates_are_skipped() -> None:
    # a and a2 are overlapping windows of one paragraph (cos ~ 0.998); b and c are other topics.
    vectors = np.stack([unit(1, 0, 0), unit(1, 0.06, 0), unit(0, 1, 0), unit(0.2, 0.2, 1)])
    assert float(vectors[0] @ vectors[1]) >= NEAR_DUPLICATE
    items = ["a", "a2", "b", "c"]
    chosen = mmr(items, [4.0, 3.9, 2.0, 1.0], vectors, n=3)
    assert [items[i] for i in chosen] == ["a", "b", "c"]


def test_duplicates_are_never_filler() -> None:
    # Only two distinct passages: asking for four returns two, not a copy.
    vectors = np.stack([unit(1, 0), unit(1, 0.01), unit(0, 1), unit(0.01, 1)])
    chosen = mmr(["a", "a-copy", "b", "b-copy"], [1.0, 0.9, 0.8, 0.7], vectors, n=4)
    assert chosen == [0, 2]


def test_relevance_leads_and_diversity_breaks_close_calls() -> None:
    # c is slightly less relevant than b but unlike a; b is similar to a (cos 0.8, no duplicate).
    vectors = np.stack([unit(1, 0, 0), unit(0.8, 0.6, 0), unit(0, 0, 1)])
    assert mmr(["a", "b", "c"], [1.0, 0.92, 0.9], vectors, n=2, lambda_=0.7) == [0, 2]
    # With lambda 1 only relevance counts (duplicates are still skipped).
    assert mmr(["a", "b", "c"], [1.0, 0.92, 0.9], vectors, n=2, lambda_=1.0) == [0, 1]


def test_by_default_a_pages_second_matching_chunk_keeps_its_place() -> None:
    # a and b: two chunks of one man page's Description (cos 0.8, both about the question);
    # c: another page, a little less relevant. Diversity (0.7) took c; the default keeps the
    # fused order (golden dev's "print only the settings I set explicitly" needs postconf's -n
    # chunk, the second of its page), and still skips a near-duplicate of a.
    vectors = np.stack([unit(1, 0, 0), unit(0.8, 0.6, 0), unit(0, 0, 1), unit(1, 0.05, 0)])
    lambda_ = Settings().mmr_lambda
    assert mmr(["a", "b", "c", "a2"], [1.0, 0.92, 0.9, 0.8], vectors, n=3, lambda_=lambda_) == [0, 1, 2]
    assert mmr(["a", "b", "c"], [1.0, 0.92, 0.9], vectors[:3], n=2, lambda_=0.7) == [0, 2]


def test_chosen_set_has_no_near_duplicate_pair() -> None:
    rng = np.random.default_rng(7)
    base = rng.normal(size=(10, 16)).astype(np.float32)
    # Each base vector twice, the copy nudged slightly: 20 items, 10 distinct.
    noisy = base + 0.01 * rng.normal(size=base.shape).astype(np.float32)
    vectors = np.concatenate([base, noisy])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    relevance = rng.random(20).tolist()
    chosen = mmr(list(range(20)), relevance, vectors, n=20)
    assert len(chosen) == 10
    sims = vectors[chosen] @ vectors[chosen].T
    assert (sims[~np.eye(len(chosen), dtype=bool)] < NEAR_DUPLICATE).all()
    assert chosen[0] == int(np.argmax(relevance))


@pytest.mark.parametrize("n", [0, -1])
def test_empty_requests(n: int) -> None:
    assert mmr([], [], np.zeros((0, 3), dtype=np.float32), 3) == []
    assert mmr(["a"], [1.0], np.ones((1, 1), dtype=np.float32), n) == []
