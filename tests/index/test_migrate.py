"""`citeline migrate`: the sample index copied to PostgreSQL and back answers every sample question
identically, with identical keyword and dense rankings (BM25 parity between the two engines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from citeline.cli import main
from citeline.kb import KnowledgeBase, open_kb
from citeline.retrieval.filters import Filter
from conftest import ADMIN, QUESTIONS

QUESTION_TEXTS = [json.loads(line)["question"] for line in QUESTIONS.open() if line.strip()]


def _answer(kb: KnowledgeBase, question: str) -> dict[str, Any]:
    data = kb.ask(question, ADMIN).to_json()
    data.pop("trace_id", None)
    data.pop("timings_ms", None)
    return data


def _rankings(kb: KnowledgeBase, question: str) -> tuple[list[tuple[str, float]], list[str]]:
    keyword = kb.store.keyword_search(question, Filter.admin(), 30)
    vector = kb.embedder.embed([question])[0]
    return keyword, [c for c, _ in kb.store.vector_search(vector, Filter.admin(), 30)]


def test_migrate_to_postgresql_and_back_answers_identically(
    samples_kb: KnowledgeBase, pg_url: str, tmp_path: Path
) -> None:
    source = str(samples_kb.settings.index)
    samples_kb.save_settings({"top_k": 30})  # a stored setting, copied along
    runner = CliRunner()
    result = runner.invoke(main, ["migrate", "--from", source, "--to", pg_url])
    assert result.exit_code == 0, result.output
    password = pg_url.split(":")[2].split("@")[0]
    assert password not in result.output and "***" in result.output
    back = tmp_path / "back"
    result = runner.invoke(main, ["migrate", "--from", pg_url, "--to", str(back)])
    assert result.exit_code == 0, result.output
    # re-running copies nothing twice
    result = runner.invoke(main, ["migrate", "--from", source, "--to", pg_url])
    assert result.exit_code == 0 and "0 documents" in result.output, result.output

    with open_kb(pg_url) as pg, open_kb(back) as copy:
        assert pg.store.stats()["chunks"] == samples_kb.store.stats()["chunks"]
        assert pg.store.stored_settings() == samples_kb.store.stored_settings()
        assert pg.store.secret() == samples_kb.store.secret() == copy.store.secret()
        for question in QUESTION_TEXTS:
            expected_keyword, expected_dense = _rankings(samples_kb, question)
            for other in (pg, copy):
                keyword, dense = _rankings(other, question)
                assert [c for c, _ in keyword] == [c for c, _ in expected_keyword], question
                assert [s for _, s in keyword] == pytest.approx([s for _, s in expected_keyword], rel=1e-9)
                assert dense == expected_dense, question
            expected = _answer(samples_kb, question)
            assert _answer(pg, question) == expected, question
            assert _answer(copy, question) == expected, question
