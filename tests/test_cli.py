"""The CLI contract other tools rely on, checked through a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from citeline.kb import KnowledgeBase
from citeline.types import REFUSAL
from conftest import ADMIN

CITATION_FIELDS = {
    "n",
    "document_id",
    "source",
    "title",
    "page",
    "page_end",
    "heading",
    "start",
    "end",
    "quote",
    "chunk_id",
    "quote_start",
    "quote_end",
}


def run(index: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITELINE_INDEX": str(index)}
    proc = subprocess.run(
        [sys.executable, "-m", "citeline", *args], capture_output=True, text=True, env=env, timeout=300
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def cli_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("cli") / "index"
    samples = Path(__file__).resolve().parents[1] / "samples"
    out = run(
        index,
        "add",
        str(samples / "error-codes.md"),
        str(samples / "configuration-reference.md"),
        "--tag",
        "team=platform",
    )
    assert "2 added, 0 updated, 0 unchanged, 0 failed" in out.stdout
    return index


def test_ask_json_contract_field_by_field(cli_index: Path) -> None:
    out = run(cli_index, "ask", "--json", "What does error LDG-4012 mean?")
    data = json.loads(out.stdout)
    assert {"question", "answer", "refused", "citations", "trace_id", "timings_ms"} <= set(data)
    assert data["question"] == "What does error LDG-4012 mean?"
    assert data["refused"] is False
    assert isinstance(data["answer"], str) and "[1]" in data["answer"]
    assert isinstance(data["trace_id"], str)
    assert all(isinstance(v, int | float) for v in data["timings_ms"].values())
    assert {"retrieve", "generate", "total"} <= set(data["timings_ms"])
    assert data["citations"], "an answer must cite"
    for c in data["citations"]:
        assert set(c) >= CITATION_FIELDS
        assert isinstance(c["n"], int) and c["n"] >= 1
        assert c["source"].endswith("error-codes.md")  # the path as given to add
        assert c["page"] is None and c["page_end"] is None  # Markdown has no pages
        assert isinstance(c["start"], int) and isinstance(c["end"], int) and c["start"] < c["end"]
        assert c["start"] <= c["quote_start"] < c["quote_end"] <= c["end"]
        assert "LDG-4012" in c["heading"]
        text = Path(c["source"]).read_text(encoding="utf-8")
        assert text[c["start"] : c["end"]] == c["quote"]  # the span quotes the file exactly
    numbers = [c["n"] for c in data["citations"]]
    assert numbers == list(range(1, len(numbers) + 1))
    by_n = {c["n"]: c for c in data["citations"]}
    for s in data["sentences"]:
        if s["removed"]:
            continue
        # one quote per citation, inside the cited passage: what supports this sentence
        assert [q["n"] for q in s["quotes"]] == s["citations"]
        for q in s["quotes"]:
            c = by_n[q["n"]]
            assert c["start"] <= q["quote_start"] < q["quote_end"] <= c["end"]


def test_refusal_is_exact_and_cites_nothing(cli_index: Path) -> None:
    data = json.loads(run(cli_index, "ask", "--json", "What is the capital of Australia?").stdout)
    assert data["refused"] is True
    assert data["answer"] == REFUSAL
    assert data["citations"] == []


def test_readable_answer_lists_sources(cli_index: Path) -> None:
    out = run(cli_index, "ask", "What is the default value of sync.batch_size?").stdout
    assert "[1]" in out and "Sources" in out and "configuration-reference.md" in out


def test_search_json_and_status(cli_index: Path) -> None:
    hits = json.loads(run(cli_index, "search", "--json", "-k", "3", "LDG-5002").stdout)["results"]
    assert len(hits) == 3 and "LDG-5002" in hits[0]["heading"]
    assert {"bm25", "dense", "fused"} <= set(hits[0]["stages"])
    status = json.loads(run(cli_index, "status", "--json").stdout)
    assert status["documents"] == 2 and status["chunks"] > 5
    assert status["embedder"]["name"] == "minilm-int8" and status["embedder"]["dim"] == 384


def test_show_marks_the_cited_span(cli_index: Path) -> None:
    c = json.loads(run(cli_index, "ask", "--json", "What does error LDG-4012 mean?").stdout)["citations"][0]
    out = run(cli_index, "show", c["source"], "--span", f"{c['quote_start']}:{c['quote_end']}").stdout
    text = Path(c["source"]).read_text(encoding="utf-8")
    assert (
        f">>> cited [{c['quote_start']}:{c['quote_end']}]: {text[c['quote_start'] : c['quote_end']]}" in out
    )


def test_trace_is_stored_and_shown(cli_index: Path) -> None:
    data = json.loads(run(cli_index, "ask", "--json", "What is the capital of Australia?").stdout)
    trace = json.loads(run(cli_index, "trace", "--json", data["trace_id"]).stdout)
    assert trace["question"] == "What is the capital of Australia?"
    assert trace["refused"] is True and trace["generator_called"] is False
    assert trace["candidates"]["fused"] and "relevance" in trace
    listed = json.loads(run(cli_index, "trace", "--failed", "--json").stdout)
    assert data["trace_id"] in {row["id"] for row in listed}


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("ask", ""), "empty"),
        (("ask", "why " * 2600), "limit"),
        (("show", "nope.md"), "No document"),
        (("trace", "0000"), "No trace"),
        (("search", "--tag", "novalue", "x"), "KEY=VALUE"),
    ],
)
def test_errors_are_one_clear_line_without_traceback(
    cli_index: Path, args: tuple[str, ...], needle: str
) -> None:
    proc = run(cli_index, *args, check=False)
    assert proc.returncode != 0
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_not_an_index_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "cat.jpg").write_bytes(b"\xff\xd8\xff")
    proc = run(folder, "status", check=False)
    assert proc.returncode != 0 and "not a citeline index" in proc.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["cat.jpg"]
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "citeline.db").write_bytes(b"this is not sqlite" * 100)
    proc = run(garbage, "status", check=False)
    assert proc.returncode != 0 and "not a citeline index" in proc.stderr
    assert (garbage / "citeline.db").read_bytes() == b"this is not sqlite" * 100


def test_add_exits_3_when_a_file_fails(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# Fine\n\nA fine document.\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_bytes(b"\x00\x00\x00")
    index = tmp_path / "idx"
    proc = run(index, "add", str(tmp_path / "ok.md"), str(tmp_path / "bad.txt"), check=False)
    assert proc.returncode == 3  # some files failed (README: exit codes); the summary is printed
    assert "bad.txt" in proc.stderr and "1 added" in proc.stdout
    strict = run(index, "add", "--strict", str(tmp_path / "bad.txt"), check=False)  # kept for scripts
    assert strict.returncode == 3


def test_python_api_matches_cli(samples_kb: KnowledgeBase) -> None:
    answer = samples_kb.ask("What does error LDG-4012 mean?", ADMIN)
    assert not answer.refused and answer.citations[0].source.endswith("error-codes.md")


def test_config_prints_values_with_their_origin_and_stores_settings(cli_index: Path, tmp_path: Path) -> None:
    env_run = subprocess.run(
        [sys.executable, "-m", "citeline", "config", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "CITELINE_INDEX": str(cli_index), "CITELINE_TOP_K": "17"},
        timeout=120,
    )
    rows = {r["key"]: r for r in json.loads(env_run.stdout)}
    assert rows["top_k"] == {"key": "top_k", "value": 17, "origin": "env CITELINE_TOP_K"}
    assert rows["fusion"]["origin"] == "default"
    assert "top_k = 17" not in run(cli_index, "config").stdout  # the environment was this run's only
    assert "index" in run(cli_index, "config", "set", "rerank_depth", "12").stdout
    assert "rerank_depth" in run(cli_index, "config").stdout
    config = {r["key"]: r for r in json.loads(run(cli_index, "config", "--json").stdout)}
    assert config["rerank_depth"] == {"key": "rerank_depth", "value": 12, "origin": "index"}
    bad = run(cli_index, "config", "set", "rerank_depth", "many", check=False)
    assert bad.returncode != 0 and "rerank_depth" in bad.stderr and "whole number" in bad.stderr
    run(cli_index, "config", "unset", "rerank_depth")
    config = {r["key"]: r for r in json.loads(run(cli_index, "config", "--json").stdout)}
    assert config["rerank_depth"]["origin"] == "default"


def test_backends_lists_every_kind(tmp_path: Path) -> None:
    rows = json.loads(run(tmp_path / "none", "backends", "--json").stdout)
    kinds = {r["kind"] for r in rows}
    assert kinds == {"embedder", "parser", "reranker", "reader", "generator", "verifier", "store"}
    openai = next(r for r in rows if r["spec"].startswith("openai"))
    assert openai["extra"] == "openai"


def test_calibrate_adds_a_folder_as_eval_answers_does(tmp_path: Path) -> None:
    """`calibrate --docs DIR` on an index that `eval answers --docs DIR` filled adds nothing again
    (it once stored absolute sources: every document twice, calibrated on duplicates)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    samples = Path(__file__).resolve().parents[1] / "samples"
    (docs / "error-codes.md").write_text((samples / "error-codes.md").read_text(encoding="utf-8"))
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "a",
            "question": "What does error LDG-4012 mean?",
            "answerable": True,
            "source": "error-codes.md",
            "answer": "Batch exceeds maximum payload",
        },
        {"id": "b", "question": "Who founded the company in 1887?", "answerable": False},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    index = tmp_path / "index"
    run(index, "eval", "answers", str(questions), "--docs", str(docs), "--index", str(index))
    out = run(index, "calibrate", str(questions), "--docs", str(docs), "--json")
    result = json.loads(out.stdout)
    assert result["questions"] == 2
    status = json.loads(run(index, "status", "--json").stdout)
    assert status["documents"] == 1, status
