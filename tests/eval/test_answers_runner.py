"""Answer evaluation through a real index: the runner, the independent judge, the CLI and scopes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

import citeline
from citeline.answer.verify import Cited, Support
from citeline.cli.eval_answers import answers_command, compare_command
from citeline.eval.answers import NO_JUDGE, QuestionRow, evaluate_answers
from citeline.filters import Filter
from citeline.kb import KnowledgeBase

GOLDEN = [
    {
        "id": "a1",
        "question": "How many jobs can the alpha queue hold?",
        "answerable": True,
        "answers": ["900 jobs"],
        "evidence": [
            {"source": "alpha.md", "page": None, "quote": "The alpha queue holds at most 900 jobs."}
        ],
    },
    {
        "id": "a2",
        "question": "What does error ZX-7781 mean?",
        "answerable": True,
        "answers": ["the alpha queue is full"],
        "evidence": [
            {"source": "alpha.md", "page": None, "quote": "error zx-7781 means the ALPHA queue is full."}
        ],
    },
    {"id": "u1", "question": "What is the airspeed of an unladen swallow?", "answerable": False},
]


@pytest.fixture()
def docs_kb(docs_dir: Path, tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "idx")
    assert not kb.add([docs_dir]).failed
    yield kb
    kb.close()


def test_evaluate_answers_end_to_end(docs_kb: KnowledgeBase, docs_dir: Path) -> None:
    report = evaluate_answers(docs_kb, GOLDEN, k=5, docs_root=docs_dir, dataset="tiny")
    assert report["counts"]["questions"] == 3 and report["counts"]["errors"] == 0
    assert report["warnings"] == []  # both quotes located (the second one ignoring case)
    text = docs_kb.store.document_text(docs_kb.store.documents(Filter.admin())[0].id)
    for row in report["rows"]:
        for e in row["gold_evidence"]:
            (s, t), *_ = e["spans"]
            assert " ".join(text[s:t].lower().split()) == " ".join(e["quote"].lower().split())
        for c in row["citations"]:
            assert c["quote"]  # the cited span's text, from the stored document
        assert list(QuestionRow.from_json(row).to_json().items()) == list(row.items())
    assert report["metrics"]["hit_rate@5"] == 1.0
    # every question carries the relevance guard's score; the swallow scores below both answerable ones
    assert all(isinstance(row["relevance"], float) for row in report["rows"])
    assert report["metrics"]["relevance_separation"] == 1.0 and report["n"]["relevance_separation"] == 3
    assert report["generator"] == "extractive" and report["pipeline_verifier"] == "checker"
    assert report["judge"]["reason"] == NO_JUDGE
    for name, value in report["metrics"].items():
        assert value is None or 0.0 <= value <= 1.0, name
    json.dumps(report)  # the report is plain JSON


def test_without_traces_the_context_is_recomputed_the_same_way(docs_dir: Path, tmp_path: Path) -> None:
    with_trace = citeline.open(tmp_path / "t1")
    no_trace = citeline.open(tmp_path / "t2", trace=False)
    try:
        for kb in (with_trace, no_trace):
            kb.add([docs_dir])
        a = evaluate_answers(with_trace, GOLDEN, docs_root=docs_dir)
        b = evaluate_answers(no_trace, GOLDEN, docs_root=docs_dir)
    finally:
        with_trace.close()
        no_trace.close()
    assert all(r["trace_id"] is None for r in b["rows"])
    strip = ("latency_ms", "trace_id", "gold_evidence", "tokens")
    for ra, rb in zip(a["rows"], b["rows"], strict=True):
        assert {k: v for k, v in ra.items() if k not in strip} == {
            k: v for k, v in rb.items() if k not in strip
        }
    assert b["cost"]["prompt_tokens"] is None  # token counts live in the trace


class _StrictJudge:
    """An independent judge for the test: supported only if the cited text contains the sentence."""

    name = "strict-substring"

    def check(self, sentence: str, cited: Sequence[Cited]) -> Support:
        ok = any(sentence.strip() in c.text for c in cited)
        return Support(ok, 1.0 if ok else 0.0, {})


def test_an_independent_judge_is_reported_next_to_the_pipeline_verifier(
    docs_kb: KnowledgeBase, docs_dir: Path
) -> None:
    report = evaluate_answers(docs_kb, GOLDEN, docs_root=docs_dir, judge=_StrictJudge())
    assert report["judge"]["judge"] == "strict-substring" and report["judge"]["reason"] is None
    assert report["judge"]["pipeline_verifier"] == "checker"
    # The extractive generator quotes its passages verbatim, so a substring judge agrees with it.
    assert report["metrics"]["judge_support"] == 1.0 and report["n"]["judge_support"] >= 1


def test_cli_answers_writes_reports_and_gates_on_a_baseline(docs_dir: Path, tmp_path: Path) -> None:
    golden_path = tmp_path / "golden.jsonl"
    golden_path.write_text("".join(json.dumps(r) + "\n" for r in GOLDEN), encoding="utf-8")
    out, html = tmp_path / "a.json", tmp_path / "a.html"
    args = [str(golden_path), "--docs", str(docs_dir), "--index", str(tmp_path / "idx")]
    result = CliRunner().invoke(answers_command, [*args, "--json", str(out), "--html", str(html)])
    assert result.exit_code == 0, result.output
    assert "Citation precision" in result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["counts"]["questions"] == 3 and "<svg" in html.read_text(encoding="utf-8")

    better = {**report, "metrics": {**report["metrics"], "hit_rate@5": report["metrics"]["hit_rate@5"] + 0.5}}
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(better), encoding="utf-8")
    gated = CliRunner().invoke(answers_command, [*args, "--baseline", str(baseline), "--max-drop", "0.02"])
    assert gated.exit_code == 1 and "hit_rate@5" in gated.output
    same = CliRunner().invoke(answers_command, [*args, "--baseline", str(out)])
    assert same.exit_code == 0, same.output

    compared = CliRunner().invoke(compare_command, [str(out), str(baseline)])
    assert compared.exit_code == 0 and "+0.500" in compared.output and "better" in compared.output
    assert CliRunner().invoke(compare_command, [str(baseline), str(out), "--max-drop", "0.1"]).exit_code == 1


def test_cli_answers_needs_a_golden_set_or_a_dataset() -> None:
    result = CliRunner().invoke(answers_command, [])
    assert result.exit_code == 2 and "GOLDEN.jsonl" in result.output


def test_cli_split_is_for_the_dataset_that_has_splits() -> None:
    result = CliRunner().invoke(answers_command, ["--dataset", "rgb", "--split", "train"])
    assert result.exit_code == 2 and "conditionalqa only" in result.output


def test_scope_asks_over_one_folder_of_the_documents(docs_dir: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "a").mkdir(parents=True)
    (tree / "b").mkdir()
    (docs_dir / "alpha.md").rename(tree / "a" / "alpha.md")
    (docs_dir / "notes.txt").rename(tree / "b" / "notes.txt")
    question = {
        "question": "How many jobs can the alpha queue hold?",
        "answerable": True,
        "answers": ["900 jobs"],
    }
    rows = [
        {
            **question,
            "id": "in-scope",
            "scope": "a",
            "evidence": [{"source": "a/alpha.md", "quote": "900 jobs"}],
        },
        {**question, "id": "out-of-scope", "scope": "b", "answerable": False},
        {**question, "id": "empty-scope", "scope": "nowhere", "answerable": False},
    ]
    with citeline.open(tmp_path / "idx") as kb:
        kb.add([tree])
        report = evaluate_answers(kb, rows, docs_root=tree)
    inside, outside, empty = report["rows"]
    assert not inside["refused"] and all("alpha.md" in c["source"] for c in inside["citations"])
    assert outside["refused"] and empty["refused"]
    assert report["warnings"] == ["empty-scope: scope 'nowhere' holds no indexed document"]
