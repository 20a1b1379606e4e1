"""Length-bucketed batching and one tokenization per text in the ONNX embedder."""

from __future__ import annotations

import numpy as np
import pytest

from citeline.embedding import make_embedder
from citeline.embedding.onnx import OnnxEmbedder

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
