"""The reader's span head (answer/span.py) as shipped: the pure span arithmetic, the branch on the
packaged model's hidden states, and what it changes for a user: a sentence that restates the
question without the value no longer reads as its answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from citeline.answer.reader import PACKAGED, Reader, packaged_model
from citeline.answer.span import best_minus_null

from ._passages import make_passages

NEG = -1e4


def _logits(start: list[float], end: list[float]) -> np.ndarray:
    return np.array([list(zip(start, end, strict=True))], dtype=np.float32)


@pytest.mark.parametrize(
    ("start", "end", "max_span", "want"),
    [
        # [CLS] (position 0) is the null answer: 1 + 1; the best span 3..3 gives 5 + 4
        ([1, 0, 5, NEG], [1, 0, 0, 4], 30, (5 + 4) - 2),
        # the null wins: nothing beats [CLS]
        ([6, 0, 1], [6, 1, 0], 30, 1 - 12),
        # an end before its start is no span
        ([0, 0, 9], [0, 9, 0], 30, 9 + 0),
        # a span longer than max_span is cut: 1..3 would give 9 + 9 but is 3 tokens long
        ([0, 9, 0, 0], [0, 0, 0, 9], 2, 9 + 0),
    ],
)
def test_best_span_minus_null(start: list[float], end: list[float], max_span: int, want: float) -> None:
    assert best_minus_null(_logits(start, end), max_span)[0] == pytest.approx(want)


def test_the_packaged_model_ships_a_span_head() -> None:
    model = packaged_model()
    assert model.span is not None and (PACKAGED / "span.onnx").is_file()
    assert model.span.weight > 0


QUESTION = "What is the default compression of borg create?"
ANSWER = "Borg > compression: If compression is not given, the default is lz4."
ECHO = "Borg > compression: The default compression of borg create."


def test_a_restated_question_loses_to_the_value_with_the_span_head_only() -> None:
    model = packaged_model()
    alone = model.reader_scores(QUESTION, [ANSWER, ECHO], span_weight=0.0)
    both = model.reader_scores(QUESTION, [ANSWER, ECHO])
    assert alone[1] > 0.9  # the pair classifier reads the topic: the echo scores as an answer
    assert both[1] < 0.2 < 0.8 < both[0]


def test_weight_zero_is_the_pair_classifier_alone() -> None:
    model = packaged_model()
    question = "Which compression does borg create use when none is given?"  # not in the memo
    logits = model.pairs.logits([("question: " + question, ANSWER)])
    alone = model.reader_scores(question, [ANSWER], span_weight=0.0)
    assert alone[0] == pytest.approx(1 / (1 + np.exp(-logits[0, 0])), abs=1e-6)


def test_the_checker_does_not_run_the_span_head() -> None:
    model = packaged_model()
    assert model.pairs.logits([("claim: x", "y")]).shape == (1, 1)
    assert model.pairs.logits([("question: x", "y")], head=model.span).shape == (1, 2)


def test_with_the_span_head_on_the_reader_leads_with_the_unit_that_states_the_value() -> None:
    page = (
        "The maximum queue lifetime setting controls how long a message may stay queued. "
        "Postfix returns undeliverable mail after this time. It is five days unless changed."
    )
    reading = Reader(packaged_model(), span_weight=0.5).read(
        "How long may a message stay queued by default?", make_passages((page,))
    )
    assert "five days" in reading.scored[0].candidate.unit.text


def test_the_guard_reads_the_pair_classifier_and_the_order_reads_both() -> None:
    from citeline.answer.reader import Candidate, Reading, Scored, reading_json
    from citeline.answer.units import Unit

    def cand(text: str) -> Candidate:
        unit = Unit(0, len(text), text, "sentence")
        return Candidate(1, unit, (unit,), "")

    reading = Reading(
        (Scored(cand("It is lz4."), 0.95, 0.40), Scored(cand("The default compression."), 0.02, 0.99))
    )
    assert reading.best == 0.95  # what leads the answer
    assert reading.guard == 0.99  # what the refusal threshold was chosen on
    trace = reading_json(reading, 0.12)
    top = trace["top"]
    assert trace["best"] == 0.99 and isinstance(top, list)
    assert (top[0]["score"], top[0]["pair"]) == (0.95, 0.4)


def test_the_span_weight_setting_reaches_the_reader(tmp_path: Path) -> None:
    import citeline

    with citeline.open(tmp_path / "on", reader_span_weight=0.5) as kb:
        reader = kb.components.answerer().reader
        assert reader is not None and reader.span_weight == 0.5
    with citeline.open(tmp_path / "default") as kb:  # off: measured, it did not help the answers
        reader = kb.components.answerer().reader
        assert reader is not None and reader.span_weight == 0.0
