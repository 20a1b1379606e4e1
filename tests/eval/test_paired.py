"""Paired comparison of two answers reports: flips per question and the exact sign test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from citeline.cli.eval_answers import compare_command
from citeline.eval.answers.paired import paired_outcomes, sign_test


@pytest.mark.parametrize(
    ("wins", "losses", "p"),
    [
        (0, 0, 1.0),  # nothing flipped
        (1, 0, 1.0),  # one flip is a coin toss either way
        (3, 0, 0.25),  # golden dev, relevance + both: 3 better, 0 worse
        (1, 4, 0.375),  # golden test, the same change: 1 better, 4 worse
        (5, 0, 0.0625),
        (6, 0, 0.03125),
        (10, 10, 1.0),
    ],
)
def test_sign_test_table(wins: int, losses: int, p: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(p)
    assert sign_test(losses, wins) == pytest.approx(p)


def test_sign_test_matches_scipys_exact_binomial_test() -> None:
    stats = pytest.importorskip("scipy.stats")
    for n in range(1, 41):
        for k in range(n + 1):
            expected = stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue
            assert sign_test(k, n - k) == pytest.approx(expected, abs=1e-12), (k, n)


def _row(
    qid: str, answerable: bool, refused: bool, contains: float = 0.0, ctx: bool | None = None
) -> dict[str, object]:
    return {
        "id": qid,
        "answerable": answerable,
        "refused": refused,
        "correctness": {"contains": contains, "first_contains": contains} if answerable else {},
        "retrieval": {"evidence_in_context": ctx},
    }


A_ROWS = [
    _row("q1", True, False, 1.0, True),
    _row("q2", True, False, 0.0, False),
    _row("q3", True, False, 1.0, True),
    _row("u1", False, False),
    _row("u2", False, True),
    _row("only-a", True, False, 1.0),
]
B_ROWS = [
    _row("q1", True, False, 0.0, True),  # lost its answer
    _row("q2", True, False, 1.0, True),  # gained its answer and its evidence
    _row("q3", True, True, 0.0, None),  # refused: an answerable question lost, no evidence figure
    _row("u1", False, True),  # now refused, as it should be
    _row("u2", False, True),
    _row("only-b", False, True),
]


def test_outcomes_flip_per_question_over_the_questions_both_reports_hold() -> None:
    got = {o.outcome: (o.paired, o.b_better, o.b_worse) for o in paired_outcomes(A_ROWS, B_ROWS)}
    assert got == {
        "answer_contains": (3, 1, 2),
        "first_sentence_contains": (3, 1, 2),
        "refused_unanswerable": (2, 1, 0),
        "answered_answerable": (3, 0, 1),
        "evidence_in_context": (2, 1, 0),
    }


def test_compare_prints_the_paired_table(tmp_path: Path) -> None:
    reports = []
    for name, rows in (("a", A_ROWS), ("b", B_ROWS)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"metrics": {}, "counts": {}, "rows": rows}), encoding="utf-8")
        reports.append(str(path))
    result = CliRunner().invoke(compare_command, reports, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if "answer_contains" in line)
    assert [cell.strip() for cell in line.split("│")[2:6]] == ["3", "1", "2", "1.000"]
