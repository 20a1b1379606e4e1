"""training.refusal_signals: per-signal AUROC, the in-sample combination, recall at a false-refusal cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from training.refusal_signals import SIGNALS, asked, fit_logistic, main, recall_at

from citeline.kb import KnowledgeBase
from conftest import ADMIN


@pytest.mark.parametrize(
    ("scores", "answerable", "cap", "recall"),
    [
        # refuse below a threshold: 0.1 and 0.2 (unanswerable) go first, then 0.3 (answerable)
        ([0.1, 0.2, 0.3, 0.9], [False, False, True, True], 0.0, 1.0),
        # the unanswerable 0.5 sits above an answerable 0.3: at no false refusal only 0.1 is refused
        ([0.1, 0.5, 0.3, 0.9], [False, False, True, True], 0.0, 0.5),
        # one of two answerable may be refused: 0.5 too
        ([0.1, 0.5, 0.3, 0.9], [False, False, True, True], 0.5, 1.0),
        # nothing separates: refusing any unanswerable refuses an answerable one first
        ([0.9, 0.1], [False, True], 0.0, 0.0),
    ],
)
def test_recall_at_a_false_refusal_cap(
    scores: list[float], answerable: list[bool], cap: float, recall: float
) -> None:
    assert recall_at(scores, answerable, cap) == pytest.approx(recall)


def test_the_combination_learns_which_signal_separates() -> None:
    rng = np.random.default_rng(3)
    y = np.array([1.0] * 50 + [0.0] * 50)
    x = np.c_[
        y + 0.1 * rng.normal(size=100), rng.normal(size=100)
    ]  # the first separates, the second is noise
    scores = fit_logistic(x, y)
    assert scores[y == 1].min() > scores[y == 0].max()


def test_saved_signals_are_summarised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"id": str(i), "answerable": a, **{s: v for s in SIGNALS}}
        for i, (a, v) in enumerate([(True, 0.9), (True, 0.8), (False, 0.2), (False, 0.85)])
    ]
    for r in rows:  # the missing counts: none for the answerable, one for each unanswerable
        r["missing_names"] = r["missing_codes"] = 0 if r["answerable"] else 1
    saved = tmp_path / "signals.json"
    saved.write_text(json.dumps(rows), encoding="utf-8")
    assert main(["--load", str(saved)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["questions"] == 4 and out["unanswerable"] == 2
    assert out["auroc"]["relevance"] == pytest.approx(0.75)  # 0.9, 0.8 against 0.2, 0.85: 3 of 4 pairs
    assert out["auroc"]["missing_names"] == 1.0  # fewer missing names: answerable, in every pair
    assert out["refusal_recall_at_false_refusals_0.15"]["relevance"] == 0.5
    assert out["combined_in_sample_auroc"] == 1.0


def test_without_questions_or_saved_signals_it_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([])
    with pytest.raises(SystemExit):
        main(["--load", str(tmp_path / "gone.json")])
    assert "gone.json: no such file" in capsys.readouterr().err


def test_asked_takes_each_question_as_ask_does_up_to_its_limit(
    docs_dir: Path, kb: KnowledgeBase, tmp_path: Path
) -> None:
    kb.add([docs_dir])
    questions = tmp_path / "questions.jsonl"
    rows: list[dict[str, Any]] = [
        {"id": "q1", "question": "How many  jobs does the alpha queue hold?", "answerable": True},
        {"id": "q2", "question": "What colour is the moon's umbrella?", "answerable": False},
        {"id": "q3", "question": "How do I install the alpha package?", "answerable": True},
    ]
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")

    taken = list(asked(kb, questions, limit=2))

    assert [row["id"] for row, _ in taken] == ["q1", "q2"]  # in order, the limit respected
    first = taken[0][1]
    assert first.query.text == "How many jobs does the alpha queue hold?"  # checked as ask checks it
    assert first.passages and first.passages[0].hit.source.endswith("alpha.md")
    # the signals are the ones ask decides on
    for row, prepared in taken:
        answer = kb.ask(row["question"], ADMIN)
        assert answer.relevance == pytest.approx(prepared.relevance.score), row["id"]
    assert not kb.ask(rows[0]["question"], ADMIN).refused
    assert len(list(asked(kb, questions))) == 3  # no limit: every row
