"""The committed claim-checker audits (evalsets/checker-audit): every kept sentence has one label,
given once, and the counts the audit script's docstring quotes are what the labels give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

AUDIT = Path(__file__).resolve().parents[2] / "evalsets" / "checker-audit"


def _rows(name: str) -> list[dict[str, object]]:
    return [json.loads(x) for x in (AUDIT / name).read_text(encoding="utf-8").splitlines() if x.strip()]


@pytest.mark.parametrize(
    ("kept", "labels", "supported", "total"),
    [
        ("kept-golden-dev.jsonl", "labels-golden-dev.jsonl", 28, 34),
        ("kept-golden-test.jsonl", "labels-golden-test.jsonl", 42, 48),
        ("kept-samples.jsonl", "labels-samples.jsonl", 46, 46),
    ],
)
def test_each_kept_sentence_is_labelled_once(kept: str, labels: str, supported: int, total: int) -> None:
    kept_ids = [r["id"] for r in _rows(kept)]
    labelled = _rows(labels)
    label_ids = [r["id"] for r in labelled]
    assert len(set(label_ids)) == len(label_ids)
    assert set(label_ids) <= set(kept_ids)
    assert (sum(bool(r["supported"]) for r in labelled), len(labelled)) == (supported, total)


@pytest.mark.parametrize(
    ("labels", "supported", "total"),
    [("labels-conditionalqa-dev50.jsonl", 30, 32), ("labels-rgb-positive50.jsonl", 45, 51)],
)
def test_held_out_dataset_audits_count_as_documented(labels: str, supported: int, total: int) -> None:
    """Their kept sentences quote evaluation data and are not committed (the audit script's
    ``collect --dataset`` writes them again); each label is given once and has a reason when the
    sentence is not supported."""
    labelled = _rows(labels)
    ids = [r["id"] for r in labelled]
    assert len(set(ids)) == len(ids)
    assert (sum(bool(r["supported"]) for r in labelled), len(labelled)) == (supported, total)
    assert all(r["note"] for r in labelled if not r["supported"])
