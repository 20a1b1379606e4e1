"""Answer metrics on tiny handmade answers, with every expectation computed by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from citeline.eval.answers import (
    NO_JUDGE,
    SAME_JUDGE,
    CitationCounts,
    Correctness,
    GoldenFormatError,
    GoldEvidence,
    Observation,
    QuestionRow,
    Retrieved,
    answer_text,
    deltas,
    load_golden,
    regressions,
    score_question,
    summarize,
    validate_row,
)
from citeline.types import REFUSAL, Answer, AnswerSentence, Citation

# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------


def cit(n: int, doc: str, qs: int, qe: int, start: int = 0, end: int = 1000) -> Citation:
    return Citation(
        n=n,
        document_id=doc,
        source=f"{doc}.md",
        title=doc,
        page=None,
        page_end=None,
        heading="",
        start=start,
        end=end,
        quote="x" * (end - start),
        chunk_id=f"{doc}-c",
        quote_start=qs,
        quote_end=qe,
    )


def answered(
    text: str, citations: tuple[Citation, ...] = (), supported: tuple[bool, ...] = (True,)
) -> Answer:
    sentences = tuple(
        AnswerSentence(f"s{i}", (1,), ok, removed=not ok, support_score=0.9 if ok else 0.1)
        for i, ok in enumerate(supported)
    )
    return Answer("q", text, False, citations, sentences)


def refused(sentences: tuple[AnswerSentence, ...] = ()) -> Answer:
    return Answer("q", REFUSAL, True, (), sentences, refusal_reason="relevance below threshold")


def gold(doc: str, *spans: tuple[int, int]) -> GoldEvidence:
    return GoldEvidence(f"{doc}.md", None, "quote", doc, tuple(spans))


def golden(qid: str, answerable: bool = True, answers: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": qid,
        "question": f"question {qid}?",
        "answerable": answerable,
        "answers": answers,
        "evidence": [],
    }


def ret(doc: str, start: int, end: int) -> Retrieved:
    return Retrieved(doc, f"{doc}.md", start, end)


# Retrieval that finds and passes on every gold span used below.
EVERYTHING = (ret("A", 0, 1000), ret("B", 0, 1000))


def score(
    g: dict[str, Any],
    a: Answer | None,
    evidence: tuple[GoldEvidence, ...] = (),
    candidates: tuple[Retrieved, ...] = EVERYTHING,
    context: tuple[Retrieved, ...] = EVERYTHING,
    **kw: Any,
) -> QuestionRow:
    return score_question(Observation(g, a, evidence, candidates, context, **kw), k=2)


# --------------------------------------------------------------------------------------------
# citations: precision and recall by span overlap
# --------------------------------------------------------------------------------------------

E1, E2, E3 = gold("A", (100, 150)), gold("A", (300, 340)), gold("B", (0, 50))


def test_citation_precision_recall_by_span_overlap() -> None:
    a = answered(
        "Answer. [1] [2] [3] [4]",
        (
            cit(1, "A", 120, 130),  # inside E1: correct
            cit(2, "A", 150, 160),  # only touches E1's end (half-open spans): wrong
            cit(3, "B", 40, 60),  # overlaps E3: correct
            cit(4, "C", 100, 150),  # E1's offsets, but another document: wrong
        ),
    )
    row = score(golden("q1"), a, (E1, E2, E3))
    assert row.citation_counts == CitationCounts(
        citations=4, correct_citations=2, evidence=3, covered_evidence=2
    )
    assert row.citation_precision == pytest.approx(2 / 4)
    assert row.citation_recall == pytest.approx(2 / 3)  # E1 and E3 covered, E2 not
    assert [c.correct for c in row.citations] == [True, False, True, False]
    assert row.stage is None  # at least one right citation: not "cited wrongly"


def test_empty_quote_span_falls_back_to_the_passage_span() -> None:
    # quote_start == quote_end: the citation's span is [start, end) = [90, 110), which overlaps E1.
    row = score(golden("q1"), answered("A. [1]", (cit(1, "A", 5, 5, start=90, end=110),)), (E1,))
    assert row.citations[0].span == (90, 110)
    assert row.citation_precision == 1.0 and row.citation_recall == 1.0


def test_citation_metrics_pool_over_questions_and_refusals_miss_all_evidence() -> None:
    q1 = score(golden("q1"), answered("x [1]", (cit(1, "A", 120, 130), cit(2, "A", 150, 160))), (E1, E2))
    q2 = score(golden("q2"), answered("y [1]", (cit(1, "B", 0, 10),)), (E3,))
    q3 = score(golden("q3"), refused(), (gold("A", (500, 520)),))
    unanswerable = score(golden("u1", answerable=False), answered("z [1]", (cit(1, "A", 0, 5),)))
    m = summarize([q1, q2, q3, unanswerable], k=2)["metrics"]
    # citations on answerable questions: q1 2 (1 right), q2 1 (1 right); the unanswerable one is not counted
    assert m["citation_precision"] == pytest.approx(2 / 3)
    # evidence: q1 2 (1 covered), q2 1 (1 covered), q3 1 (refused: 0 covered)
    assert m["citation_recall"] == pytest.approx(2 / 4)
    assert m["citation_f1"] == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert q3.citation_precision is None and q3.citation_recall == 0.0


# --------------------------------------------------------------------------------------------
# refusals
# --------------------------------------------------------------------------------------------


def test_refusal_precision_recall_and_false_refusal_rate() -> None:
    rows = [
        score(golden("a1"), answered("ok [1]", (cit(1, "A", 120, 130),)), (E1,)),
        score(golden("a2"), answered("ok [1]", (cit(1, "A", 120, 130),)), (E1,)),
        score(golden("a3"), answered("ok [1]", (cit(1, "A", 120, 130),)), (E1,)),
        score(golden("a4"), refused(), (E1,)),  # false refusal
        score(golden("u1", False), refused()),
        score(golden("u2", False), refused()),
        score(golden("u3", False), refused()),
        score(golden("u4", False), answered("made up [1]", (cit(1, "A", 0, 5),))),  # should have refused
    ]
    s = summarize(rows, k=2)
    m = s["metrics"]
    # refused: a4, u1, u2, u3 -> TP 3, FP 1; unanswerable answered: u4 -> FN 1
    assert m["refusal_precision"] == pytest.approx(3 / 4)
    assert m["refusal_recall"] == pytest.approx(3 / 4)
    assert m["refusal_f1"] == pytest.approx(3 / 4)
    assert m["false_refusal_rate"] == pytest.approx(1 / 4)
    assert s["counts"]["answered"] == 4 and s["counts"]["refused"] == 4
    assert s["n"]["refusal_precision"] == 4 and s["n"]["refusal_recall"] == 4


def test_reader_separation_is_the_auroc_of_the_readers_best_score() -> None:
    ok = answered("ok [1]", (cit(1, "A", 120, 130),))
    rows = [
        score(golden("a1"), ok, (E1,), extra={"reader_score": 0.9}),
        score(golden("a2"), ok, (E1,), extra={"reader_score": 0.4}),
        score(golden("a3"), refused(), (E1,), extra={"reader_score": None}),  # refused before the reader
        score(golden("u1", False), refused(), extra={"reader_score": 0.5}),
        score(golden("u2", False), ok, extra={"reader_score": 0.2}),
    ]
    s = summarize(rows, k=2)
    # pairs (answerable, unanswerable): 0.9 > 0.5, 0.9 > 0.2, 0.4 < 0.5, 0.4 > 0.2 -> 3 of 4
    assert s["metrics"]["reader_separation"] == pytest.approx(0.75)
    assert s["n"]["reader_separation"] == 4
    assert summarize(rows[:3], k=2)["metrics"]["reader_separation"] is None  # one kind of question only


def test_relevance_separation_is_the_auroc_of_the_guards_score() -> None:
    ok = answered("ok [1]", (cit(1, "A", 120, 130),))
    rows = [
        score(golden("a1"), ok, (E1,), extra={"relevance": 0.8}),
        score(golden("a2"), refused(), (E1,), extra={"relevance": 0.3}),  # refused by the guard: still scored
        score(golden("u1", False), refused(), extra={"relevance": 0.4}),
        score(golden("u2", False), ok, extra={"relevance": 0.9}),
        score(golden("u3", False), refused()),  # a report written before relevance was recorded
    ]
    s = summarize(rows, k=2)
    # pairs (answerable, unanswerable): 0.8 > 0.4, 0.8 < 0.9, 0.3 < 0.4, 0.3 < 0.9 -> 1 of 4
    assert s["metrics"]["relevance_separation"] == pytest.approx(0.25)
    assert s["n"]["relevance_separation"] == 4
    assert summarize(rows[4:], k=2)["metrics"]["relevance_separation"] is None


def test_refusal_metrics_are_undefined_without_a_denominator() -> None:
    rows = [score(golden("u1", False), answered("x [1]", (cit(1, "A", 0, 5),)))]
    m = summarize(rows, k=2)["metrics"]
    assert m["refusal_precision"] is None  # nothing was refused
    assert m["refusal_recall"] == 0.0
    assert m["false_refusal_rate"] is None  # no answerable question
    assert m["citation_precision"] is None and m["hit_rate@2"] is None


def test_refusal_text_must_be_exact() -> None:
    wrong = Answer("q", "Sorry, no idea.", True, ())
    row = score(golden("u1", False), wrong)
    assert row.refusal_text_ok is False
    assert summarize([row], k=2)["counts"]["refusal_text_errors"] == 1
    assert score(golden("u2", False), refused()).refusal_text_ok is True


# --------------------------------------------------------------------------------------------
# failure stages
# --------------------------------------------------------------------------------------------


def test_failure_stage_classification() -> None:
    far = (ret("A", 600, 700),)  # a chunk of the right document that holds no gold span
    near = (ret("A", 90, 200),)  # overlaps E1
    good = answered("ok [1]", (cit(1, "A", 120, 130),))
    bad = answered("off [1]", (cit(1, "A", 610, 620),))
    assert score(golden("1"), good, (E1,), candidates=far, context=far).stage == "not_retrieved"
    assert score(golden("2"), refused(), (E1,), candidates=far, context=far).stage == "not_retrieved"
    assert score(golden("3"), refused(), (E1,), candidates=far + near, context=far).stage == "not_in_context"
    assert score(golden("4"), refused(), (E1,), candidates=near, context=near).stage == "refused_wrongly"
    assert score(golden("5"), bad, (E1,), candidates=far + near, context=far + near).stage == "cited_wrongly"
    assert score(golden("6"), good, (E1,), candidates=near, context=near).stage is None
    assert score(golden("7", False), bad).stage == "answered_should_refuse"
    assert score(golden("8", False), refused()).stage is None
    assert score(golden("9"), None, (E1,), error="question too long").stage == "error"
    # No gold evidence at all: a refusal is still wrong, an answer cannot be checked.
    assert score(golden("10"), refused()).stage == "refused_wrongly"
    assert score(golden("11"), good).stage is None


def test_stage_falls_back_to_documents_when_the_quote_was_not_found() -> None:
    unlocated = GoldEvidence("A.md", None, "a quote not in the text", "A", ())
    assert not unlocated.resolved
    row = score(golden("1"), refused(), (unlocated,), candidates=(ret("B", 0, 9),), context=(ret("B", 0, 9),))
    assert row.stage == "not_retrieved"
    row = score(golden("2"), refused(), (unlocated,), candidates=(ret("A", 0, 9),), context=(ret("B", 0, 9),))
    assert row.stage == "not_in_context"
    assert row.citation_counts is None  # nothing resolved to check citations against


def test_failure_counts_by_stage() -> None:
    rows = [
        score(golden("1"), refused(), (E1,)),
        score(golden("2"), refused(), (E1,)),
        score(golden("3", False), answered("x [1]", (cit(1, "A", 0, 5),))),
    ]
    s = summarize(rows, k=2)
    assert s["failures"]["refused_wrongly"] == 2 and s["failures"]["answered_should_refuse"] == 1
    assert s["counts"]["failures"] == 3


# --------------------------------------------------------------------------------------------
# retrieval, correctness, faithfulness, judge, latency, cost
# --------------------------------------------------------------------------------------------


def test_hit_rate_and_recall_at_k_over_documents() -> None:
    # chunk ranking X, A, A, Y, B -> documents X, A, Y, B; k = 2 -> {X, A}
    ranking = (ret("X", 0, 9), ret("A", 0, 9), ret("A", 10, 19), ret("Y", 0, 9), ret("B", 0, 9))
    row = score(golden("1"), refused(), (gold("A", (0, 5)), gold("B", (0, 5))), candidates=ranking)
    assert row.retrieval is not None  # candidates given: retrieval is scored
    assert row.retrieval.hit_at_k == 1.0
    assert row.retrieval.recall_at_k == 0.5
    miss = score(golden("2"), refused(), (gold("B", (0, 5)),), candidates=ranking)
    m = summarize([row, miss], k=2)["metrics"]
    assert m["hit_rate@2"] == pytest.approx(0.5) and m["recall@2"] == pytest.approx(0.25)


def test_answer_correctness_on_answer_text_without_markers() -> None:
    a = answered("The queue holds 900 jobs. [1] (unverified)", (cit(1, "A", 120, 130),))
    assert answer_text(a) == "The queue holds 900 jobs."
    row = score(golden("1", answers=["900 jobs"]), a, (E1,))
    # prediction tokens: queue holds 900 jobs (article dropped); gold: 900 jobs
    assert row.correctness == Correctness(
        exact_match=0.0,
        token_f1=pytest.approx(2 / 3),  # type: ignore[arg-type]  # equal to any float near 2/3
        contains=1.0,
        first_contains=0.0,
    )
    exact = score(
        golden("2", answers=["900 jobs"]), answered("900 jobs. [1]", (cit(1, "A", 120, 130),)), (E1,)
    )
    assert exact.correctness is not None and exact.correctness.exact_match == 1.0
    none = score(golden("3", answers=["900 jobs"]), refused(), (E1,))
    assert none.correctness == Correctness(exact_match=0.0, token_f1=0.0, contains=0.0, first_contains=0.0)
    ref = score({**golden("4"), "reference": "It holds 900 jobs."}, a, (E1,))
    assert ref.correctness is not None  # a reference is scored, by token F1 only
    assert ref.correctness.exact_match is None and ref.correctness.contains is None
    m = summarize([row, exact, none, ref], k=2)["metrics"]
    assert m["exact_match"] == pytest.approx(1 / 3)  # rows with answers: 0, 1, 0
    assert m["answer_contains"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("sentences", "contains", "first_contains"),
    [
        ((("The queue holds 900 jobs.", False),), 1.0, 1.0),
        ((("The queue has a limit.", False), ("It holds 900 jobs.", False)), 1.0, 0.0),  # gold second
        ((("900 jobs was the old limit.", True), ("It holds 900 jobs.", False)), 1.0, 1.0),  # removed
        ((("900 jobs was the old limit.", True), ("The queue has a limit.", False)), 0.0, 0.0),
    ],
)
def test_first_sentence_contains_reads_the_first_sentence_the_answer_shows(
    sentences: tuple[tuple[str, bool], ...], contains: float, first_contains: float
) -> None:
    kept = tuple(
        AnswerSentence(text, (1,), not removed, removed=removed, support_score=0.9)
        for text, removed in sentences
    )
    text = " ".join(f"{t} [1]" for t, removed in sentences if not removed)
    a = Answer("q", text, False, (cit(1, "A", 120, 130),), kept)
    row = score(golden("1", answers=["900 jobs"]), a, (E1,))
    assert row.correctness is not None
    assert row.correctness.contains == contains and row.correctness.first_contains == first_contains
    assert summarize([row], k=2)["metrics"]["first_sentence_contains"] == first_contains
    assert Correctness.from_json(row.correctness.to_json()) == row.correctness


def test_faithfulness_counts_every_generated_sentence_of_answered_questions() -> None:
    one = answered("a [1]", (cit(1, "A", 120, 130),), supported=(True, True, False))
    two = answered("b [1]", (cit(1, "A", 120, 130),), supported=(True,))
    gone = refused((AnswerSentence("s", (1,), False, True),))  # refused: not counted
    rows = [score(golden("1"), one, (E1,)), score(golden("2"), two, (E1,)), score(golden("3"), gone, (E1,))]
    s = summarize(rows, k=2)
    assert s["metrics"]["faithfulness"] == pytest.approx(3 / 4)
    assert s["n"]["faithfulness"] == 4


def test_judge_support_needs_an_independent_judge() -> None:
    row = score(golden("1"), answered("a [1]", (cit(1, "A", 120, 130),)), (E1,), judge_supported=(1, 2))
    s = summarize([row], k=2, judge_name=None, pipeline_verifier="heuristic")
    assert s["metrics"]["judge_support"] is None and s["judge"]["reason"] == NO_JUDGE
    assert s["judge"]["pipeline_verifier"] == "heuristic"
    same = summarize([row], k=2, judge_name="heuristic", pipeline_verifier="heuristic")
    assert same["metrics"]["judge_support"] is None and same["judge"]["reason"] == SAME_JUDGE
    other = summarize([row], k=2, judge_name="nli-judge", pipeline_verifier="heuristic")
    assert other["metrics"]["judge_support"] == pytest.approx(0.5) and other["judge"]["reason"] is None


def test_latency_percentiles_and_token_cost() -> None:
    rows = [
        score(golden(str(i)), refused(), latency_ms=ms, tokens={"prompt": 100 * i, "completion": 10 * i})
        for i, ms in enumerate([10.0, 20.0, 30.0, 40.0], 1)
    ]
    s = summarize(rows, k=2)
    assert s["latency_ms"]["p50"] == pytest.approx(25.0)
    assert s["latency_ms"]["p95"] == pytest.approx(38.5)  # 30 + 0.85 * 10
    assert s["cost"]["prompt_tokens"] == 1000 and s["cost"]["completion_tokens"] == 100
    assert s["cost"]["prompt_tokens_per_question"] == pytest.approx(250.0)


# --------------------------------------------------------------------------------------------
# golden rows, quotes, baselines
# --------------------------------------------------------------------------------------------


def test_golden_rows_are_validated(tmp_path: Path) -> None:
    ok = validate_row({"id": 7, "question": "Why?", "answerable": False})
    assert ok["id"] == "7" and ok["evidence"] == [] and ok["answers"] is None
    with pytest.raises(GoldenFormatError, match="chunk ids are not accepted"):
        validate_row(
            {
                "id": 1,
                "question": "Q?",
                "answerable": True,
                "evidence": [{"source": "a.md", "chunk_id": "c1"}],
            }
        )
    with pytest.raises(GoldenFormatError, match="answerable"):
        validate_row({"id": 1, "question": "Q?", "answerable": "yes"})
    with pytest.raises(GoldenFormatError, match="source"):
        validate_row({"id": 1, "question": "Q?", "answerable": True, "evidence": [{"quote": "x"}]})
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps(ok) + "\n" + json.dumps(ok) + "\n", encoding="utf-8")
    with pytest.raises(GoldenFormatError, match="more than once"):
        load_golden(path)


def test_regressions_respect_each_metric_direction() -> None:
    base = {
        "metrics": {
            "citation_precision": 0.80,
            "false_refusal_rate": 0.10,
            "hit_rate@5": 0.9,
            "token_f1": None,
        }
    }
    cur = {
        "metrics": {
            "citation_precision": 0.77,
            "false_refusal_rate": 0.13,
            "hit_rate@5": 0.89,
            "token_f1": 0.5,
        }
    }
    worse = {w["metric"]: w for w in regressions(cur, base, max_drop=0.02)}
    assert set(worse) == {"citation_precision", "false_refusal_rate"}  # hit rate dropped only 0.01
    assert worse["false_refusal_rate"]["drop"] == pytest.approx(0.03)
    assert regressions(cur, base, max_drop=0.05) == []
    d = {x["metric"]: x for x in deltas(base, cur)}
    assert d["false_refusal_rate"]["better"] is False and d["token_f1"]["delta"] is None


# --------------------------------------------------------------------------------------------
# the per-question row and its JSON (format citeline-answers/1)
# --------------------------------------------------------------------------------------------

# Rows of a report written before the row was typed (paths shortened, one question shortened).
ROWS_V1 = Path(__file__).resolve().parents[1] / "data" / "answers_rows_v1.jsonl"


def test_rows_of_an_earlier_report_load_and_write_back_unchanged() -> None:
    lines = ROWS_V1.read_text(encoding="utf-8").splitlines()
    for line in lines:
        assert json.dumps(QuestionRow.from_json(json.loads(line)).to_json(), ensure_ascii=False) == line
    answered_row, refused_row, error_row = (QuestionRow.from_json(json.loads(line)) for line in lines)
    assert answered_row.expected == "Beta replicates tables." and answered_row.trace_id == "T"
    assert [e.resolved for e in answered_row.gold_evidence] == [True, False, False]
    assert answered_row.citation_counts == CitationCounts(2, 1, 1, 1)
    assert answered_row.citation_precision == 0.5 and answered_row.citation_recall == 1.0
    assert [c.correct for c in answered_row.citations] == [True, False]
    assert refused_row.refused and refused_row.retrieval is None and refused_row.stage is None
    assert error_row.stage == "error" and error_row.error and error_row.meta == {"m": 1}
    assert error_row.trace_id is None


def test_scored_rows_round_trip_through_json() -> None:
    unresolved = GoldEvidence("A.md", 2, None, None, (), "document not in the index")
    rows = [
        score(golden("q1"), answered("x [1]", (cit(1, "A", 120, 130), cit(2, "A", 150, 160))), (E1, E2)),
        score(golden("q2"), refused(), (E1,), judge_supported=(0, 0), tokens={"prompt": 3, "completion": 1}),
        score(golden("u1", False), answered("z [1]", (cit(1, "A", 0, 5),)), extra={"trace_id": "t1"}),
        score({**golden("r1"), "reference": "ref", "meta": {"k": [1]}}, None, (E1,), error="boom"),
        score(golden("x1", answers=["a", "b"]), refused(), (unresolved,), latency_ms=12.345),
    ]
    for row in rows:
        text = json.dumps(row.to_json())
        back = QuestionRow.from_json(json.loads(text))
        assert back == row and json.dumps(back.to_json()) == text
    error = rows[3].to_json()
    assert error["stage"] == "error" and "judge" not in error and "citation_precision" not in error
    assert rows[4].expected == ("a", "b") and rows[4].to_json()["expected"] == ["a", "b"]
