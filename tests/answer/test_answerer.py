"""The answer path: guard, citation validation, claim checks, modes, streaming, traces.

The scripted generator below stands in for an LLM (an external model) so each rule can be
exercised exactly; retrieval, verification and resolution are the real ones.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import citeline
from citeline.answer.answerer import below_threshold
from citeline.answer.context import assemble, compress, edge_order
from citeline.kb import KnowledgeBase
from citeline.query.analysis import Query
from citeline.types import REFUSAL, Draft, DraftSentence, Passage
from conftest import ADMIN


class ScriptedGenerator:
    """Replies with fixed sentences; counts calls."""

    name = "scripted"
    context_tokens = 4000

    def __init__(
        self, sentences: Sequence[tuple[str, tuple[int, ...]]], invented: tuple[int, ...] = ()
    ) -> None:
        self.sentences = sentences
        self.invented = invented
        self.calls = 0

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        self.calls += 1
        return Draft(tuple(DraftSentence(t, c) for t, c in self.sentences), invented_citations=self.invented)

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        self.calls += 1
        for text, cites in self.sentences:
            yield text + "".join(f" [{n}]" for n in cites) + " "


@pytest.fixture()
def small_kb(tmp_path: Path, docs_dir: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index")
    kb.add([docs_dir])
    yield kb
    kb.close()


QUESTION = "What does error ZX-7781 mean?"


def test_guard_refuses_without_calling_the_generator(small_kb: KnowledgeBase) -> None:
    gen = ScriptedGenerator([("Anything.", (1,))])
    small_kb.use_generator(gen)
    answer = small_kb.ask("What does error QQ-1234 mean?", ADMIN)  # an identifier no document contains
    assert answer.refused and answer.answer == REFUSAL and answer.citations == ()
    assert gen.calls == 0
    assert "qq-1234" in (answer.refusal_reason or "")
    off_topic = small_kb.ask("What is the boiling point of tungsten in kelvin?", ADMIN)
    assert off_topic.refused and gen.calls == 0


def test_invented_citation_numbers_never_reach_the_output(small_kb: KnowledgeBase) -> None:
    gen = ScriptedGenerator(
        [("Error ZX-7781 means the alpha queue is full.", (1, 9)), ("Drain it with alpha drain.", (12,))],
        invented=(42,),
    )
    small_kb.use_generator(gen)
    answer = small_kb.ask(QUESTION, ADMIN)
    data = answer.to_json()
    assert not answer.refused
    assert "[9]" not in answer.answer and "[12]" not in answer.answer
    assert set(data["dropped_citations"]) == {9, 12, 42}
    assert all(1 <= c["n"] <= len(data["citations"]) for c in data["citations"])
    # the sentence whose only citation was invented has no valid citation: it is withheld
    dropped = [s for s in answer.sentences if s.text.startswith("Drain")]
    assert dropped and dropped[0].removed and dropped[0].citations == ()


def test_unsupported_sentence_removed_by_default_and_marked_in_mark_mode(small_kb: KnowledgeBase) -> None:
    lines = [
        ("Error ZX-7781 means the alpha queue is full.", (1,)),
        ("The alpha queue is written in Rust 1.42.", (1,)),
    ]
    small_kb.use_generator(ScriptedGenerator(lines))
    removed = small_kb.ask(QUESTION, ADMIN)
    kept = [s for s in removed.sentences if not s.removed]
    assert [s.text for s in kept] == [lines[0][0]]
    rust = next(s for s in removed.sentences if "Rust" in s.text)
    assert rust.removed and not rust.supported and "Rust" not in removed.answer
    small_kb.settings = dataclasses.replace(small_kb.settings, unsupported="mark")
    marked = small_kb.ask(QUESTION, ADMIN)
    rust = next(s for s in marked.sentences if "Rust" in s.text)
    assert not rust.removed and not rust.supported
    assert "Rust 1.42. [1] (unverified)" in marked.answer


def test_a_sentence_the_model_repeats_is_said_once(small_kb: KnowledgeBase) -> None:
    line = ("Error ZX-7781 means the alpha queue is full.", (1,))
    small_kb.use_generator(
        ScriptedGenerator([line, line, ("error zx-7781  means the alpha queue is full.", (1,))])
    )
    answer = small_kb.ask(QUESTION, ADMIN)
    assert not answer.refused and answer.answer.lower().count("means the alpha queue is full") == 1
    assert [s.removed for s in answer.sentences] == [False, True, True]


def test_nothing_supported_means_refusal(small_kb: KnowledgeBase) -> None:
    # the model's own answer: no extractive answer in its place (answer/fallback.py)
    small_kb.settings = dataclasses.replace(small_kb.settings, fallback_reader_score=2.0)
    small_kb.use_generator(ScriptedGenerator([("The queue was designed in 1987 by Ada Lovelace.", (1,))]))
    answer = small_kb.ask(QUESTION, ADMIN)
    assert answer.refused and answer.answer == REFUSAL and not answer.citations
    assert answer.sentences and answer.sentences[0].removed


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ([("The queue was designed in 1987 by Ada Lovelace.", (1,))], "no answer sentence is supported"),
        ([], "the generator found no answer"),
    ],
)
def test_a_refused_model_answer_gives_way_to_the_extractive_answer(
    small_kb: KnowledgeBase, reply: list[tuple[str, tuple[int, ...]]], why: str
) -> None:
    gen = ScriptedGenerator(reply)
    small_kb.use_generator(gen)
    answer = small_kb.ask(QUESTION, ADMIN)
    assert gen.calls == 1 and answer.reader_score is not None
    assert not answer.refused and answer.generator == "extractive", answer
    assert "alpha queue is full. [1]" in answer.answer and "Lovelace" not in answer.answer
    assert answer.citations[0].source.endswith(".md")
    trace = small_kb.trace(answer.trace_id or "")
    assert trace is not None and trace.fallback is not None
    assert trace.fallback["from"] == "scripted" and trace.fallback["reason"].startswith(why)
    assert trace.verification and all(c.supported for c in trace.verification)  # the extractive checks
    assert type(trace).from_json(trace.to_json()) == trace
    # streamed, the extractive text follows the model's, and the answer is built from it
    pieces: list[str] = []
    streamed = small_kb.ask(QUESTION, ADMIN, on_text=pieces.append)
    assert streamed.answer == answer.answer
    assert all(s.text in "".join(pieces) for s in streamed.sentences if not s.removed)
    # below the reader score it asks for, the model's refusal stands
    small_kb.settings = dataclasses.replace(
        small_kb.settings, fallback_reader_score=answer.reader_score + 1e-3
    )
    refused = small_kb.ask(QUESTION, ADMIN)
    assert (
        refused.refused and refused.generator == "scripted" and (refused.refusal_reason or "").startswith(why)
    )
    assert gen.calls == 3


def test_streaming_gives_the_same_answer(small_kb: KnowledgeBase) -> None:
    pieces: list[str] = []
    streamed = small_kb.ask(QUESTION, ADMIN, on_text=pieces.append)
    plain = small_kb.ask(QUESTION, ADMIN)
    assert pieces and not plain.refused
    assert streamed.answer == plain.answer
    assert [c.to_json() for c in streamed.citations] == [c.to_json() for c in plain.citations]
    text = "".join(pieces)
    assert all(s.text in text for s in plain.sentences)


def test_streamed_invented_markers_are_never_emitted(small_kb: KnowledgeBase) -> None:
    small_kb.use_generator(ScriptedGenerator([("Error ZX-7781 means the alpha queue is full.", (1, 7))]))
    pieces: list[str] = []
    answer = small_kb.ask(QUESTION, ADMIN, on_text=pieces.append)
    assert "[7]" not in "".join(pieces) and 7 in answer.dropped_citations


def test_read_only_index_answers_without_a_trace(tmp_path: Path, docs_dir: Path) -> None:
    kb = citeline.open(tmp_path / "index")
    kb.add([docs_dir])
    kb.close()
    ro = citeline.open(tmp_path / "index", read_only=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        answer = ro.ask(QUESTION, ADMIN)
    assert not answer.refused and answer.trace_id is None
    # a read-only index is known to take no trace: nothing to warn about (issue 35)
    assert not any("trace" in str(w.message) for w in caught)


def test_trace_records_every_stage(small_kb: KnowledgeBase) -> None:
    answer = small_kb.ask(QUESTION, ADMIN)
    traced = small_kb.trace(answer.trace_id or "")
    assert traced is not None and traced.owner == "local-admin" and traced.generator_called
    trace = traced.to_json()
    assert {"candidates", "context", "relevance", "raw_completion", "verification", "timings_ms"} <= set(
        trace
    )
    assert trace["context"][0]["stages"]["fused"]["rank"] >= 1
    assert trace["verification"][0]["supported"] is True
    assert type(traced).from_json(trace) == traced  # what is stored reads back as it was


def test_edge_order_puts_strongest_at_both_ends() -> None:
    assert edge_order(5) == [0, 2, 4, 3, 1]
    assert edge_order(2) == [0, 1]


def test_compression_keeps_relevant_sentences_verbatim(small_kb: KnowledgeBase) -> None:
    text = "Cats sleep a lot. The alpha queue holds 900 jobs. Dogs bark at night. Birds sing early."
    short = compress("How many jobs does the alpha queue hold?", text, 0, 14, small_kb.embedder.count_tokens)
    assert short == "The alpha queue holds 900 jobs."
    hits = small_kb.search("alpha queue", ADMIN, k=4)
    passages = assemble("alpha queue", hits, 700 + 64 * 4, small_kb.embedder.count_tokens)
    assert [p.number for p in passages] == [1, 2, 3, 4]
    assert passages[0].hit is hits[0] and passages[-1].hit is hits[1]


@pytest.mark.parametrize(("floor", "called"), [(0.99, False), (0.0, True)])
def test_an_llm_is_called_only_where_some_unit_reaches_the_extractive_floor(
    tmp_path: Path, docs_dir: Path, floor: float, called: bool
) -> None:
    """The extractive generator refuses when no unit scores ``min_answer_score`` by similarity and
    overlap; an LLM generator is then not called at all, for the same reason."""
    kb = citeline.open(tmp_path / "index", min_answer_score=floor)
    try:
        kb.add([docs_dir])
        gen = ScriptedGenerator([("Error ZX-7781 means the sync token expired.", (1,))])
        kb.use_generator(gen)
        answer = kb.ask(QUESTION, ADMIN)
        assert (gen.calls == 1) is called
        if not called:
            assert answer.refused and answer.answer == REFUSAL
            assert (answer.refusal_reason or "").startswith("no sentence answers the question well enough")
            trace = kb.trace(answer.trace_id or "")
            assert trace is not None and not trace.generator_called
    finally:
        kb.close()


@pytest.mark.parametrize(
    ("score", "threshold", "reason"),
    [
        (0.31, 0.46, "relevance 0.31 below threshold 0.46"),
        (0.118, 0.12, "relevance 0.118 below threshold 0.120"),  # rounded alike: one more digit
        (0.11951, 0.12, "relevance 0.1195 below threshold 0.1200"),
    ],
)
def test_a_refusal_reason_tells_the_score_from_the_threshold(
    score: float, threshold: float, reason: str
) -> None:
    assert below_threshold("relevance", score, threshold) == reason


def test_the_readers_threshold_does_not_overrule_a_unit_that_states_the_asked_value(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "jobs.md").write_text(
        "# Worker settings\n\n## max_jobs\n\nSets how many jobs the worker runs at once. "
        "The default is 4 jobs.\n\n## log_dir\n\nWhere the worker writes its logs.\n",
        encoding="utf-8",
    )
    kb = citeline.open(tmp_path / "index")
    try:
        kb.add([docs])
        assert kb.components.reader is not None  # the offline default reads
        # a threshold no score reaches: the reader alone would refuse everything
        kb.settings = dataclasses.replace(kb.settings, reader_threshold=1.01)
        value = kb.ask("What is the default of max_jobs?", ADMIN)
        assert not value.refused and "4" in value.answer
        # a question for no value has no answer-bearing unit to weigh against the reader
        meaning = kb.ask("What does max_jobs do?", ADMIN)
        assert meaning.refused and (meaning.refusal_reason or "").startswith("reader score")
    finally:
        kb.close()
