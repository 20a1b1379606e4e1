"""Length-bucketed batching and one tokenization per text in the ONNX embedder."""

from __future__ import annotations

import numpy as np
import pytest

from citeline.embedding import make_embedder
from citeline.embedding.onnx import OnnxEmbedder
from citeline.inference.batching import CALL_TOKENS, length_batches

TEXTS = [
    "a long sentence about how the queue manager defers mail when the destination is down " * 3,
    "short",
    "mid length text on relay access",
    "word " * 300,  # over the model's 256 tokens: truncated as the tokenizer itself would
    "another short one",
    "postfix stores deferred mail in the deferred queue and retries it later " * 2,
]


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    e = make_embedder("minilm-int8")
    assert isinstance(e, OnnxEmbedder)
    return e


def test_batches_are_sorted_by_length_and_bounded(embedder: OnnxEmbedder) -> None:
    lengths = [50, 3, 200, 7, 256, 120, 9, 256, 256, 30] * 5
    batches = embedder._batches(lengths)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))  # every text exactly once
    assert [lengths[i] for i in flat] == sorted(lengths)  # shortest first, across batches
    for b in batches:
        assert len(b) <= embedder.batch_size
        assert len(b) * max(lengths[i] for i in b) <= embedder.batch_tokens


def test_bucketed_vectors_are_in_input_order_and_equal_to_one_at_a_time(embedder: OnnxEmbedder) -> None:
    together = embedder.embed(TEXTS)
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
    assert np.abs(together - alone).max() < 1e-5
    # reversed input: the same vectors, reversed (order comes from the input, not the buckets)
    assert np.abs(embedder.embed(TEXTS[::-1])[::-1] - together).max() < 1e-5


def test_truncation_matches_the_tokenizers_own(embedder: OnnxEmbedder) -> None:
    long = TEXTS[3]
    ids = embedder._truncating.encode(long).ids
    assert len(ids) == embedder.max_tokens
    assert np.abs(embedder.embed([long])[0] - embedder._embed_ids([ids])[0]).max() < 1e-6


def test_texts_counted_by_the_chunker_are_not_tokenized_again(embedder: OnnxEmbedder) -> None:
    texts = [f"a sentence numbered {i} that was counted first" for i in range(40)]
    before = embedder.texts_tokenized
    counts = embedder.count_tokens(texts)
    assert embedder.texts_tokenized - before == len(texts)
    embedder.embed(texts)
    assert embedder.texts_tokenized - before == len(texts)  # embed reused the encodings
    embedder.embed(["never counted"])
    assert embedder.texts_tokenized - before == len(texts) + 1
    assert counts == [len(embedder._tokenizer.encode(t).ids) for t in texts]


def test_duplicate_texts_are_tokenized_once(embedder: OnnxEmbedder) -> None:
    before = embedder.texts_tokenized
    v = embedder.embed(["the same text twice"] * 2 + ["a different text"])
    assert embedder.texts_tokenized - before == 2
    assert np.abs(v[0] - v[1]).max() == 0.0


def test_windows_of_texts_keep_input_order(embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    import citeline.embedding.onnx as onnx

    together = embedder.embed(TEXTS)
    monkeypatch.setattr(onnx, "WINDOW", 2)  # large files are tokenized a window at a time
    assert np.abs(embedder.embed(TEXTS) - together).max() < 1e-5
    assert embedder.count_tokens(TEXTS) == [len(embedder._tokenizer.encode(t).ids) for t in TEXTS]


def _padded(lengths: list[int], batches: list[list[int]]) -> int:
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def _fixed(lengths: list[int], size: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[lo : lo + size] for lo in range(0, len(order), size)]


@pytest.mark.parametrize(
    ("lengths", "max_size", "max_tokens"),
    [
        ([12, 15, 14, 90, 13, 110, 16, 128, 11, 17] * 3, 16, 2048),  # sentences and a few table rows
        ([5, 40, 7, 200, 9, 256, 30, 18], 32, 512),  # the token bound cuts before the count does
        ([64] * 40, 16, 4096),  # all alike: full batches
        ([300], 8, 256),  # one text over the token bound: alone
        ([], 8, 256),
    ],
)
def test_length_batches_cover_every_text_in_order_within_bounds(
    lengths: list[int], max_size: int, max_tokens: int
) -> None:
    batches = length_batches(lengths, max_size, max_tokens)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)
    for b in batches:
        assert len(b) <= max_size
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= max_tokens
    fixed = [b for b in _fixed(lengths, max_size) if b]
    if all(len(b) * max(lengths[i] for i in b) <= max_tokens for b in fixed):
        assert _padded(lengths, batches) + CALL_TOKENS * len(batches) <= _padded(
            lengths, fixed
        ) + CALL_TOKENS * len(fixed)


def test_length_batches_are_the_cheapest_cuts() -> None:
    """Against every way of cutting the sorted lengths (brute force over small cases)."""
    import itertools
    import random

    rng = random.Random(7)
    for _ in range(40):
        lengths = [rng.choice([8, 12, 20, 40, 90, 128]) for _ in range(rng.randint(1, 9))]
        ordered = sorted(lengths)
        cheapest = min(
            sum(len(p) * p[-1] + CALL_TOKENS for p in parts)
            for cuts in itertools.product((False, True), repeat=len(ordered) - 1)
            for parts in [_split(ordered, cuts)]
            if all(len(p) <= 4 and (len(p) == 1 or len(p) * p[-1] <= 256) for p in parts)
        )
        batches = length_batches(lengths, 4, 256)
        assert _padded(lengths, batches) + CALL_TOKENS * len(batches) == cheapest


def _split(ordered: list[int], cuts: tuple[bool, ...]) -> list[list[int]]:
    parts, current = [], [ordered[0]]
    for length, cut in zip(ordered[1:], cuts, strict=True):
        if cut:
            parts.append(current)
            current = []
        current.append(length)
    return [*parts, current]
