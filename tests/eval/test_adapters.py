"""Dataset adapters: fixed stratified slices, and each one end to end through a real index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citeline.eval.adapters import (
    conditionalqa,
    evaluate_dataset,
    evidence_markdown,
    rgb,
    rgb_positive,
    scifact,
    stratified,
)
from citeline.eval.adapters.rgb import gives_away
from citeline.eval.answers import locate_quote, validate_row
from citeline.eval.metrics import contains_any
from datasets import shared_dataset

# --------------------------------------------------------------------------------------------
# slicing and conversion (no index)
# --------------------------------------------------------------------------------------------


def test_stratified_slices_are_fixed_and_proportional() -> None:
    strata = {"yes": [f"y{i:02d}" for i in range(30)], "no": [f"n{i:02d}" for i in range(10)]}
    a = stratified(strata, 8, seed=3, key=str)
    assert {k: len(v) for k, v in a.items()} == {"yes": 6, "no": 2}
    assert a == stratified(
        {k: list(reversed(v)) for k, v in strata.items()}, 8, seed=3, key=str
    )  # order-free
    assert a != stratified(strata, 8, seed=4, key=str)
    # explicit shares; a short stratum hands its quota on; every stratum gets at least one
    b = stratified(
        {"x": ["x1"], "y": [f"y{i}" for i in range(9)]}, 6, seed=1, key=str, shares={"x": 0.5, "y": 0.5}
    )
    assert {k: len(v) for k, v in b.items()} == {"x": 1, "y": 5}
    c = stratified({"big": [str(i) for i in range(100)], "tiny": ["t"]}, 4, seed=1, key=str)
    assert len(c["tiny"]) == 1 and len(c["big"]) == 3
    assert sum(len(v) for v in stratified(strata, None, seed=1, key=str).values()) == 40


def test_evidence_html_becomes_markdown_and_a_quote() -> None:
    assert evidence_markdown("<p>You must apply within 10 days.</p>") == (
        "You must apply within 10 days.",
        "You must apply within 10 days.",
    )
    assert evidence_markdown("<li>children &amp; grandchildren</li>") == (
        "- children & grandchildren",
        "children & grandchildren",
    )
    assert evidence_markdown("<h2>Eligibility</h2>") == ("### Eligibility", "Eligibility")
    assert evidence_markdown("<tr><td>Band A</td><td>£100</td></tr>") == ("Band A | £100", "Band A | £100")


@pytest.mark.parametrize(
    ("snippet", "answer", "gives"),
    [
        ("Barty wins the 2021 Wimbledon.", "Ashleigh Barty", True),  # the surname
        ("Tadej Pogacar takes the yellow jersey", "Tadej Pogačar", True),  # without its accent
        ("returns to ABC on Thursday, Nov. 12 at 9 p.m.", "November 12 2020", True),  # no year
        ("released on November 21 of 1998 in Japan", "Nov. 21, 1998", True),
        ("was released on September 20th.", "September 20 2019", True),
        ("on 15 May in Europe", "May 15 2012", True),
        ("Platform: PS4 ; Release: 6/19/2020 ;", "June 19 2020", True),
        ("Release date: 27/10/2017.", "October 27 2017", True),
        ("Release date: 10/27/17.", "October 27 2017", True),
        ("Version 6/19 notes", "June 19 2020", False),
        ("Raymond James Stadium (Tampa, Fla.)", "Tampa, Florida", True),  # the city
        ("revenue came in at 10.4 billion", "$10.4 billion", True),
        ("revenue came in at 110.4 billion", "$10.4 billion", False),
        ("Diablo 3 was released in May 2012", "May 15 2012", False),  # the month alone does not
        ("Mayday 15 was a hit", "May 15 2012", False),
        ("Toy Story was released in 1995", "Toy Story 4", False),  # a title is only found whole
        ("Toy Story 4 won", "Toy Story 4", True),
    ],
)
def test_rgb_negative_snippet_gives_away_its_answer(snippet: str, answer: str, gives: bool) -> None:
    assert gives_away(snippet, [answer]) is gives


@pytest.mark.dataset
def test_rgb_writes_only_negative_snippets_without_any_answer(tmp_path: Path) -> None:
    data = rgb(shared_dataset("rgb"), tmp_path, limit=8, seed=13)
    assert len(data.rows) == 8 and not any(r["answerable"] for r in data.rows)
    files = sorted(data.docs_dir.glob("*/*.md"))
    assert len(files) == data.notes["documents"] > 0
    for row in data.rows:  # each question has its own folder of snippets, none holding its answer
        own = list((data.docs_dir / row["scope"]).glob("*.md"))
        assert own and not any(
            gives_away(f.read_text(encoding="utf-8"), row["meta"]["rgb_answer"]) for f in own
        )
    again = rgb(shared_dataset("rgb"), tmp_path / "again", limit=8, seed=13)
    assert [r["id"] for r in again.rows] == [r["id"] for r in data.rows]


@pytest.mark.dataset
def test_rgb_positive_gives_each_question_only_snippets_that_hold_its_answer(tmp_path: Path) -> None:
    data = rgb_positive(shared_dataset("rgb"), tmp_path, limit=8, seed=13)
    assert len(data.rows) == 8 and all(r["answerable"] and r["answers"] for r in data.rows)
    for row in data.rows:
        validate_row(row)
        own = list((data.docs_dir / row["scope"]).glob("*.md"))
        assert own and all(contains_any(f.read_text(encoding="utf-8"), row["answers"]) for f in own)
        for e in row["evidence"]:
            assert locate_quote((data.docs_dir / e["source"]).read_text(encoding="utf-8"), e["quote"])


@pytest.mark.dataset
def test_conditionalqa_and_scifact_quotes_are_in_their_documents(tmp_path: Path) -> None:
    for data in (
        conditionalqa(shared_dataset("conditionalqa"), tmp_path / "cqa", limit=10, seed=5),
        scifact(shared_dataset("scifact"), tmp_path / "sf", limit=10, seed=5, distractors=3),
    ):
        assert any(r["answerable"] for r in data.rows) and any(not r["answerable"] for r in data.rows)
        for row in data.rows:
            validate_row(row)
            for e in row["evidence"]:
                text = (data.docs_dir / e["source"]).read_text(encoding="utf-8")
                assert locate_quote(text, e["quote"]), (row["id"], e["quote"])
    cqa = conditionalqa(shared_dataset("conditionalqa"), tmp_path / "cqa2", limit=10, seed=5)
    assert cqa.notes["strata"] == {"answerable": 6, "not_answerable": 2, "page_absent": 2}
    # the train split (tuning) is asked apart from dev (reported): `eval answers --split train`
    train = conditionalqa(shared_dataset("conditionalqa"), tmp_path / "cqa3", limit=10, seed=5, split="train")
    asked = [r for r in train.rows if r["meta"]["stratum"] != "page_absent"]  # those come from test_no_answer
    assert train.notes["split"] == "train" and asked and all(r["id"].startswith("cqa-train-") for r in asked)
    pages = {p.name for p in cqa.docs_dir.glob("*.md")}
    for row in cqa.rows:  # an absent page's question has no document; the others have theirs
        name = row["meta"]["url"].rstrip("/").rsplit("/", 1)[-1] + ".md"
        assert (name in pages) == (row["meta"]["stratum"] != "page_absent")


# --------------------------------------------------------------------------------------------
# end to end through a real index (the MiniLM embedder, the offline default generator)
# --------------------------------------------------------------------------------------------


def _check(report: dict[str, object]) -> dict[str, float | None]:
    metrics = report["metrics"]
    assert isinstance(metrics, dict)
    for name, value in metrics.items():
        assert value is None or 0.0 <= value <= 1.0, (name, value)
    counts = report["counts"]
    assert isinstance(counts, dict)
    assert counts["questions"] == 8 and counts["errors"] == 0
    assert counts["refusal_text_errors"] == 0
    assert report["warnings"] == []  # every gold quote was found in the stored text
    rows = report["rows"]
    assert isinstance(rows, list)
    assert all(r["latency_ms"] > 0 for r in rows)
    json.dumps(report)
    return metrics


@pytest.mark.dataset
def test_rgb_negative_rejection_end_to_end(tmp_path: Path) -> None:
    report = evaluate_dataset("rgb", shared_dataset("rgb"), tmp_path, limit=8, seed=13)
    m = _check(report)
    assert report["counts"]["unanswerable"] == 8
    # Every question is unanswerable: no answer-side metric applies, refusal recall does.
    assert m["citation_precision"] is None and m["false_refusal_rate"] is None
    assert m["refusal_recall"] is not None
    # Floor: the offline default refuses 3 of these 8 (0.375; 0.13 over all 99 questions), one
    # question of slack because int8 kernels differ slightly across CPUs. RGB's "negative"
    # snippets often carry a near-answer ("released May 2012"), which the extractive generator
    # quotes; raise this floor when the refusal guard gets better.
    assert m["refusal_recall"] >= 0.25
    assert m["refusal_precision"] == 1.0  # nothing answerable to refuse wrongly


@pytest.mark.dataset
def test_conditionalqa_end_to_end(tmp_path: Path) -> None:
    report = evaluate_dataset("conditionalqa", shared_dataset("conditionalqa"), tmp_path, limit=8, seed=13)
    m = _check(report)
    assert report["counts"]["answerable"] == 5 and report["counts"]["unanswerable"] == 3
    for name in ("hit_rate@5", "context_hit_rate", "citation_precision", "citation_recall", "refusal_recall"):
        assert m[name] is not None, name
    assert (
        m["hit_rate@5"] is not None and m["hit_rate@5"] >= 0.8
    )  # the sub-corpus is small: the page is nearly always found
    assert m["refusal_recall"] is not None and m["refusal_recall"] >= 0.5


@pytest.mark.dataset
def test_scifact_end_to_end(tmp_path: Path) -> None:
    report = evaluate_dataset(
        "scifact", shared_dataset("scifact"), tmp_path, limit=8, seed=13, distractors=10
    )
    m = _check(report)
    assert report["counts"]["answerable"] == 5 and report["counts"]["unanswerable"] == 3
    for name in ("hit_rate@5", "token_f1", "citation_precision", "citation_recall", "refusal_recall"):
        assert m[name] is not None, name
    assert m["hit_rate@5"] is not None and m["hit_rate@5"] >= 0.8
    assert m["exact_match"] is None  # SciFact gives a reference (the rationale), not answer strings
