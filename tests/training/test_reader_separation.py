"""training.reader_separation: the reader's best score, answerable vs not, from eval reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from training.reader_separation import main, reader_bests


def _report(path: Path, rows: list[tuple[float | None, bool]]) -> Path:
    path.write_text(
        json.dumps({"rows": [{"answerable": a, "reader_score": s, "trace_id": None} for s, a in rows]}),
        encoding="utf-8",
    )
    return path


def test_rows_with_reader_scores_need_no_index(tmp_path: Path) -> None:
    report = _report(tmp_path / "r.json", [(0.9, True), (0.2, False), (None, False), (0.6, False)])
    # a question refused before the reader ran has no score and is left out
    assert reader_bests(None, report) == [(0.9, 1), (0.2, 0), (0.6, 0)]


def test_reports_pool_into_one_auroc(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # RGB's way: the same questions answerable in one report, unanswerable in the other
    pos = _report(tmp_path / "pos.json", [(0.9, True), (0.4, True)])
    neg = _report(tmp_path / "neg.json", [(0.5, False), (0.1, False)])
    assert main(["--report", str(pos), "--report", str(neg)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"answerable": 2, "unanswerable": 2, "reader_best_auroc": 0.75}


def test_without_reports_it_says_so() -> None:
    with pytest.raises(SystemExit):
        main([])
