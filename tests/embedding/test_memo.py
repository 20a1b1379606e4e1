"""Question-time vectors are remembered per embedder: the same text is embedded once, the answer
is the embedder's own, and the oldest vectors go first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from citeline.embedding.hashing import HashingEmbedder
from citeline.embedding.memo import EmbeddingMemo, remembered


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += texts
        return super().embed(texts)


def test_each_text_is_embedded_once_and_the_vectors_are_the_embedders() -> None:
    embedder = CountingEmbedder()
    first = remembered(embedder, ["alpha queue", "beta queue", "alpha queue"])
    second = remembered(embedder, ["beta queue", "gamma queue"])
    assert embedder.embedded == ["alpha queue", "beta queue", "gamma queue"]
    np.testing.assert_array_equal(
        first, HashingEmbedder().embed(["alpha queue", "beta queue", "alpha queue"])
    )
    np.testing.assert_array_equal(second[0], first[1])
    assert remembered(embedder, []).shape == (0, embedder.dim)
    assert remembered(CountingEmbedder(), ["alpha queue"]).shape == (1, embedder.dim)  # a memo per embedder


def test_the_least_recently_used_vectors_are_dropped_first() -> None:
    embedder = CountingEmbedder()
    memo = EmbeddingMemo(size=2)
    memo.embed(embedder, ["a", "b"])
    memo.embed(embedder, ["a"])  # "a" used again: "b" is now the oldest
    memo.embed(embedder, ["c"])
    embedder.embedded.clear()
    memo.embed(embedder, ["a", "b", "c"])
    assert embedder.embedded == ["b"]
