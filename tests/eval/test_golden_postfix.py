"""The committed Postfix golden set (evalsets/postfix): format, counts, and a reproducible dev/test split.

Fast: no manual download, no model. Whether the evidence quotes resolve in the manual is checked by
`citeline eval answers` against the fetched manual (see evalsets/postfix/README.md).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import pytest

from citeline.eval.answers import load_golden

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "evalsets" / "postfix"
UNANSWERABLE_KINDS = {
    "absent-parameter",
    "unstated-value",
    "other-product",
    "future-or-version",
    "out-of-scope-operation",
}
ANSWERABLE_KINDS = {"lookup-value", "how-to", "what-does"}


def _split_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("postfix_split", SET / "split.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return load_golden(SET / "questions.jsonl")


@pytest.fixture(scope="module")
def splits() -> dict[str, list[dict[str, Any]]]:
    return {name: load_golden(SET / f"{name}.jsonl") for name in ("dev", "test")}


def _stratum(row: dict[str, Any]) -> tuple[bool, str]:
    return (row["answerable"], row["meta"]["kind"])


def test_counts_and_kinds(rows: list[dict[str, Any]]) -> None:
    unanswerable = [r for r in rows if not r["answerable"]]
    assert len(rows) >= 85
    assert len(unanswerable) >= 28
    kinds = Counter(r["meta"]["kind"] for r in unanswerable)
    assert set(kinds) <= UNANSWERABLE_KINDS
    assert len(kinds) >= 4
    assert all(n >= 2 for n in kinds.values()), kinds
    assert {r["meta"]["kind"] for r in rows if r["answerable"]} <= ANSWERABLE_KINDS
    assert len({r["question"].strip().lower() for r in rows}) == len(rows), "duplicate question"


def test_answerable_rows_have_answers_and_quoted_evidence(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    for r in answerable:
        assert r["answers"] and all(a.strip() for a in r["answers"]), r["id"]
        assert r["evidence"], r["id"]
        for ev in r["evidence"]:
            assert ev["quote"] and ev["quote"].strip(), r["id"]
    sources = {ev["source"] for r in answerable for ev in r["evidence"]}
    assert len(sources) >= 25
    assert sum(1 for r in answerable if r["evidence"][0]["source"] == "postconf.5.html") < len(answerable) / 3


def test_unanswerable_rows_carry_no_answer(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"] and not r["evidence"] and not r.get("reference"), r["id"]


def test_sources_are_relative_html_paths(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        for ev in r["evidence"]:
            path = PurePosixPath(ev["source"])
            assert not path.is_absolute() and ".." not in path.parts, ev["source"]
            assert "\\" not in ev["source"] and path.suffix == ".html", ev["source"]


def test_splits_are_disjoint_and_cover_the_set(
    rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]]
) -> None:
    dev = {r["id"] for r in splits["dev"]}
    test = {r["id"] for r in splits["test"]}
    assert dev.isdisjoint(test)
    assert dev | test == {r["id"] for r in rows}
    assert abs(len(dev) - len(test)) <= 1
    for name, part in splits.items():
        assert all(r["meta"]["split"] == name for r in part)
    by_id = {r["id"]: r for r in rows}
    for part in splits.values():
        for r in part:
            assert r == by_id[r["id"]], r["id"]


def test_splits_are_stratified(rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]]) -> None:
    strata = Counter(_stratum(r) for r in rows)
    for part in splits.values():
        have = Counter(_stratum(r) for r in part)
        for key, total in strata.items():
            assert abs(2 * have[key] - total) <= 1, (key, have[key], total)
        assert any(r["answerable"] for r in part)
        assert {r["meta"]["kind"] for r in part if not r["answerable"]} == {
            r["meta"]["kind"] for r in rows if not r["answerable"]
        }


def test_files_equal_what_split_py_writes() -> None:
    split = _split_module()
    assert split.SEED == 20261130
    files = split.build(split.read_rows(SET / "questions.jsonl"))
    for name, text in files.items():
        assert (SET / name).read_text(encoding="utf-8") == text, (
            f"{name}: run python evalsets/postfix/split.py"
        )


def _normalized_tokens(text: str) -> list[str]:
    from citeline.eval.metrics import normalize_answer

    return normalize_answer(text).split()


def test_the_extra_dev_questions_are_dev_only_and_new(rows: list[dict[str, Any]]) -> None:
    extra = load_golden(SET / "dev-extra.jsonl")
    assert len(extra) >= 80
    assert all(r["meta"]["split"] == "dev" for r in extra)
    ids = [r["id"] for r in extra]
    assert len(set(ids)) == len(ids) and set(ids).isdisjoint(r["id"] for r in rows)
    questions = {r["question"].strip().lower() for r in rows}
    assert all(r["question"].strip().lower() not in questions for r in extra)
    assert len({r["question"].strip().lower() for r in extra}) == len(extra)
    kinds = Counter(r["meta"]["kind"] for r in extra if not r["answerable"])
    assert set(kinds) == UNANSWERABLE_KINDS and all(n >= 2 for n in kinds.values()), kinds
    assert {r["meta"]["kind"] for r in extra if r["answerable"]} == ANSWERABLE_KINDS
    for r in extra:
        if not r["answerable"]:
            assert not r["answers"] and not r["evidence"] and r["meta"].get("note"), r["id"]
            continue
        quote = _normalized_tokens(r["evidence"][0]["quote"])
        # the quote proves the answer: some accepted answer is in it, as whole tokens
        assert any(
            any(quote[i : i + len(a)] == a for i in range(len(quote) - len(a) + 1))
            for a in (_normalized_tokens(ans) for ans in r["answers"])
            if a
        ), r["id"]
