"""Choosing the reader threshold from observed questions (table-driven, no model needed)."""

from __future__ import annotations

from typing import Any

import pytest

from citeline.eval.calibration import choose_reader, sweep_reader


def row(answerable: bool, reader: float, relevance: float = 0.9, refused: bool = False) -> dict[str, Any]:
    return {
        "answerable": answerable,
        "reader": reader,
        "relevance": relevance,
        "refused_otherwise": refused,
        "cites_gold": answerable,
    }


@pytest.mark.parametrize(
    ("rows", "relevance_threshold", "chosen"),
    [
        # a clean gap between answerable (0.8, 0.9) and unanswerable (0.1, 0.2): the lowest threshold
        # above every unanswerable score wins
        ([row(True, 0.8), row(True, 0.9), row(False, 0.1), row(False, 0.2)], 0.0, 0.22),
        # the unanswerable 0.7 is already refused by the relevance guard, so it does not pull the
        # threshold up into the answerable scores
        ([row(True, 0.8), row(False, 0.1), row(False, 0.7, relevance=0.3)], 0.46, 0.12),
        # the same question without the guard: refusing it costs nothing answerable up to 0.8
        ([row(True, 0.8), row(False, 0.1), row(False, 0.7, relevance=0.3)], 0.0, 0.72),
        # a question refused for another reason counts as refused at every threshold (the lowest wins)
        ([row(True, 0.9), row(False, 0.95, refused=True)], 0.0, 0.0025),
    ],
)
def test_choose_reader(rows: list[dict[str, Any]], relevance_threshold: float, chosen: float) -> None:
    assert choose_reader(sweep_reader(rows, relevance_threshold)) == chosen


def test_sweep_reader_counts() -> None:
    table = sweep_reader([row(True, 0.3), row(True, 0.9), row(False, 0.4)], 0.0, thresholds=[0.5])
    (only,) = table
    assert only["refusal_recall"] == 1.0
    assert only["false_refusal_rate"] == 0.5
    assert only["refusal_precision"] == 0.5
    assert only["answered_with_gold"] == 0.5
