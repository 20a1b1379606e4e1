"""The reader as a passage reranker (answer/reader.py: ReaderReranker), with the shipped model."""

from __future__ import annotations

import itertools

from citeline.answer.reader import ReaderReranker, packaged_model

from ._hits import make_hit

FILLER = (
    "The queue manager schedules deliveries in parallel. It keeps a small in-memory queue of "
    "messages. Each transport has its own concurrency window. Deliveries that fail are deferred."
)
ANSWER = (
    "The SMTP server has many limits. The default recipient limit is 1000 recipients per message "
    "delivery request. Lower it on servers that receive mail from untrusted clients."
)


def test_a_passage_scores_its_best_unit_and_the_order_fuses_both_ranks() -> None:
    """The answering sentence sits in the middle of the third hit: the passage rises on its best
    unit (its whole text, read as one, is not what the model was trained on), but not past the
    retrieval's first hit alone: reciprocal ranks of both orders."""
    hits = [make_hit(1, FILLER), make_hit(2, FILLER.replace("queue", "spool")), make_hit(3, ANSWER)]
    reranker = ReaderReranker(packaged_model())
    out = reranker.rerank("How many recipients does the SMTP server accept per message by default?", hits)
    assert [h.chunk.id for h in out] == ["c1", "c3", "c2"]
    best = {h.chunk.id: h.stages["rerank"].score for h in out}
    assert best["c3"] > 0.5 > best["c1"]
    assert [h.stages["rerank"].rank for h in out] == [1, 2, 3]
    assert all(a.score >= b.score for a, b in itertools.pairwise(out))
    assert reranker.rerank("anything", []) == []


def test_the_reader_scores_a_pair_once() -> None:
    """The reranker and the reader read the same units of one question: the second read is free."""
    model = packaged_model()
    units = ["The default recipient limit is 1000.", "Deliveries that fail are deferred."]
    first = model.reader_scores("What is the recipient limit?", units)
    calls: list[int] = []
    original = model.pairs.logits

    def counted(pairs, head=None):
        calls.append(len(pairs))
        return original(pairs, head)

    model.pairs.logits = counted  # type: ignore[method-assign]
    try:
        again = model.reader_scores("What is the recipient limit?", [units[1], units[0], "A new unit."])
    finally:
        model.pairs.logits = original  # type: ignore[method-assign]
    assert calls == [1]
    assert list(again[:2]) == [first[1], first[0]]
