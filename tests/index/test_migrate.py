"""`citeline migrate`: the sample index copied to PostgreSQL and back answers every sample question
identically, with identical keyword and dense rankings (BM25 parity between the two engines)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from citeline.cli.main import main
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.settings import load_settings
from citeline.wiring import open_store
from conftest import ADMIN, QUESTIONS

QUESTION_TEXTS = [json.loads(line)["question"] for line in QUESTIONS.open() if line.strip()]


class _Memo:
    """The sample index's embedder with a memory: the three indexes embed the same texts, so the
    test pays for each once (what is compared is the stores, not the model)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._seen: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self._seen]
        if todo:
            self._seen.update(zip(todo, self._inner.embed(todo), strict=True))
        return np.stack([self._seen[t] for t in texts]) if texts else self._inner.embed([])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _open(location: str, embedder: Any) -> KnowledgeBase:
    store = open_store(location, create=False)
    return KnowledgeBase(load_settings(location, stored=store.stored_settings()), store, embedder=embedder)


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

    memo = _Memo(samples_kb.embedder)
    original = _open(source, memo)
    with _open(pg_url, memo) as pg, _open(str(back), memo) as copy:
        assert pg.store.stats()["chunks"] == original.store.stats()["chunks"]
        assert pg.store.stored_settings() == samples_kb.store.stored_settings()
        assert pg.store.secret() == samples_kb.store.secret() == copy.store.secret()
        for question in QUESTION_TEXTS:
            expected_keyword, expected_dense = _rankings(original, question)
            for other in (pg, copy):
                keyword, dense = _rankings(other, question)
                assert [c for c, _ in keyword] == [c for c, _ in expected_keyword], question
                assert [s for _, s in keyword] == pytest.approx([s for _, s in expected_keyword], rel=1e-9)
                assert dense == expected_dense, question
            expected = _answer(original, question)
            assert _answer(pg, question) == expected, question
            assert _answer(copy, question) == expected, question
    original.close()
