"""Citations as a reader sees them: only the passages that support a sentence are cited (ALCE's
citation precision), each sentence carries its own supporting quote, and the claim checks number
passages as the answer does.

Generators here stand in for an LLM that cites too much; retrieval, the trained claim checker and
the resolution of citations are the real ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

import citeline
from citeline.answer.precision import precise_citations
from citeline.answer.verify import Cited, Support
from citeline.kb import KnowledgeBase
from citeline.types import Draft, DraftSentence, Passage
from conftest import ADMIN

QUESTION = "What does error ZX-7781 mean?"
FULL = "Error ZX-7781 means the alpha queue is full."
LIMIT = "The alpha queue holds at most 900 jobs."
OLDER = "Older jobs are dropped first."
DRAIN = "Drain it with `alpha drain`."

#: a reply built from the context: (sentence, passages it cites), given the passages
Script = Callable[[Sequence[Passage]], list[tuple[str, tuple[int, ...]]]]


class ContextGenerator:
    """Writes sentences chosen from the passages it is given, like an LLM citing them."""

    name = "context-scripted"
    context_tokens = 4000

    def __init__(self, script: Script) -> None:
        self.script = script

    def generate(self, question: str, passages: Sequence[Passage]) -> Draft:
        lines = self.script(passages)
        raw = " ".join(t + "".join(f" [{n}]" for n in c) for t, c in lines)
        return Draft(tuple(DraftSentence(t, c) for t, c in lines), raw=raw)

    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        yield self.generate(question, passages).raw


def holding(passages: Sequence[Passage], text: str) -> int:
    return next(p.number for p in passages if text in p.chunk.text)


@pytest.fixture()
def kb(tmp_path: Path, docs_dir: Path) -> Iterator[KnowledgeBase]:
    opened = citeline.open(tmp_path / "index")
    opened.add([docs_dir])
    yield opened
    opened.close()


def test_a_sentence_citing_every_passage_keeps_only_the_one_that_supports_it(kb: KnowledgeBase) -> None:
    seen: list[int] = []

    def cite_all(passages: Sequence[Passage]) -> list[tuple[str, tuple[int, ...]]]:
        seen.extend(p.number for p in passages)
        return [(FULL, tuple(p.number for p in passages))]

    kb.use_generator(ContextGenerator(cite_all))  # type: ignore[arg-type]
    answer = kb.ask(QUESTION, ADMIN)
    assert len(seen) >= 3, "the context must hold passages that do not support the sentence"
    assert not answer.refused
    assert answer.answer == f"{FULL} [1]"
    assert [s.citations for s in answer.sentences] == [(1,)]
    assert [c.heading for c in answer.citations] == ["Alpha Guide > Errors"]
    data = answer.to_json()
    assert data["sentences"][0]["citations"] == [1] and len(data["citations"]) == 1
    trace = kb.trace(answer.trace_id or "")
    assert trace is not None
    check = trace.verification[0]
    assert len(check.citations) == len(seen) and check.answer_citations == (1,)
    assert set(check.unsupporting) == set(check.citations) - {c.n for c in trace.context if c.cited_as == 1}


def test_a_sentence_citing_the_wrong_passage_cites_the_one_that_supports_it(kb: KnowledgeBase) -> None:
    """The packaged 1.5B cites [3] for what [1] says; code resolves the citation, the claim is still
    checked, against the passage it now cites."""

    def cite_wrong(passages: Sequence[Passage]) -> list[tuple[str, tuple[int, ...]]]:
        wrong = next(p.number for p in passages if FULL not in p.chunk.text)
        return [(FULL, (wrong,)), ("The alpha queue was written in Rust.", (wrong,))]

    kb.use_generator(ContextGenerator(cite_wrong))  # type: ignore[arg-type]
    answer = kb.ask(QUESTION, ADMIN)
    assert not answer.refused, answer.refusal_reason
    assert answer.answer == f"{FULL} [1]"  # the invented sentence finds no passage and is removed
    assert FULL in answer.citations[0].quote
    trace = kb.trace(answer.trace_id or "")
    assert trace is not None
    moved = trace.verification[0]
    assert moved.supported and moved.reason.startswith("cited [") and "supported by" in moved.reason
    assert not trace.verification[1].supported


def test_an_unverified_sentence_keeps_only_its_best_citation(kb: KnowledgeBase) -> None:
    kb.settings = dataclasses.replace(kb.settings, unsupported="mark")
    kb.use_generator(
        ContextGenerator(
            lambda ps: [
                (FULL, (holding(ps, FULL),)),
                ("The alpha queue was written in Rust.", tuple(p.number for p in ps)),
            ]
        )  # type: ignore[arg-type]
    )
    answer = kb.ask(QUESTION, ADMIN)
    rust = next(s for s in answer.sentences if "Rust" in s.text)
    assert not rust.supported and not rust.removed and len(rust.citations) == 1


def test_two_sentences_citing_one_passage_each_have_their_own_quote(kb: KnowledgeBase) -> None:
    kb.use_generator(
        ContextGenerator(lambda ps: [(LIMIT, (holding(ps, LIMIT),)), (OLDER, (holding(ps, LIMIT),))])  # type: ignore[arg-type]
    )
    answer = kb.ask("How many jobs does the alpha queue hold?", ADMIN)
    assert not answer.refused and [s.citations for s in answer.sentences] == [(1,), (1,)]
    text = kb.store.document_text(answer.citations[0].document_id)
    quoted = [text[q.quote_start : q.quote_end] for s in answer.sentences for q in s.quotes]
    assert quoted == [LIMIT, OLDER]
    assert [q["n"] for s in answer.to_json()["sentences"] for q in s["quotes"]] == [1, 1]


def test_claim_checks_number_passages_as_the_answer_shows_them(kb: KnowledgeBase) -> None:
    def later_first(ps: Sequence[Passage]) -> list[tuple[str, tuple[int, ...]]]:
        # the later passage first: the answer renumbers it [1], the context calls it 2 or more
        lines = {holding(ps, FULL): (FULL, DRAIN), holding(ps, LIMIT): (LIMIT, OLDER)}
        first, second = sorted(lines, reverse=True)
        return [(lines[first][0], (first,)), (lines[second][0], (second,)), (lines[second][1], (second,))]

    kb.use_generator(ContextGenerator(later_first))  # type: ignore[arg-type]
    answer = kb.ask(QUESTION, ADMIN)
    trace = kb.trace(answer.trace_id or "")
    assert trace is not None and not answer.refused
    assert [s.citations for s in answer.sentences if not s.removed] == [(1,), (2,), (2,)]
    assert [c.answer_citations for c in trace.verification] == [(1,), (2,), (2,)]
    assert [c.citations for c in trace.verification] != [(1,), (2,), (2,)]  # context numbers differ
    by_context = {c.n: c.cited_as for c in trace.context}
    assert [tuple(by_context[n] for n in c.citations) for c in trace.verification] == [(1,), (2,), (2,)]


# -- the rule itself, on verdicts given by a table ------------------------------------------------------


def _cited(*numbers: int) -> list[Cited]:
    return [Cited(n, f"passage {n}", 0) for n in numbers]


def _support(supported: bool, alone: dict[int, tuple[bool, float]] | None = None) -> Support:
    return Support(supported, 0.9 if supported else 0.1, {}, alone=alone or {})


#: which sets of passages support the sentence together (a verifier that reads them jointly)
JOINT = {frozenset({1, 2}), frozenset({1, 2, 3})}


def _joint_check(some: Sequence[Cited]) -> Support:
    numbers = frozenset(c.n for c in some)
    return _support(numbers in JOINT, {})


@pytest.mark.parametrize(
    ("cited", "support", "expected"),
    [
        # one citation is never pruned
        (_cited(4), _support(True), (4,)),
        # the verifier says which passages support it alone: those stay
        (_cited(1, 2, 3), _support(True, {1: (False, 0.2), 2: (True, 0.9), 3: (True, 0.7)}), (2, 3)),
        # unverified: the best-scoring citation only
        (_cited(1, 2, 3), _support(False, {1: (False, 0.2), 2: (False, 0.4), 3: (False, 0.3)}), (2,)),
        # no passage alone, 1 and 2 together: 3 is the one the others can do without
        (_cited(1, 2, 3), _support(True), (1, 2)),
    ],
    ids=["single", "alone", "unverified", "together"],
)
def test_precise_citations(cited: list[Cited], support: Support, expected: tuple[int, ...]) -> None:
    assert precise_citations(cited, support, _joint_check, lambda _c: True) == expected


def test_a_passage_that_lacks_the_sentences_numbers_does_not_support_it_alone() -> None:
    support = _support(True, {1: (True, 0.9), 2: (True, 0.95)})
    assert precise_citations(_cited(1, 2), support, _joint_check, lambda c: c.n == 1) == (1,)
