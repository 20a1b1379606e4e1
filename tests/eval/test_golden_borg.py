"""The committed BorgBackup golden set (evalsets/borg): format, counts per split, kinds, attributes, split.

Fast: no manual download, no model. Whether the evidence quotes resolve in the manual is checked by
`citeline eval answers` against the fetched manual (see evalsets/borg/README.md).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import pytest

from citeline.eval.answers import load_golden
from citeline.eval.metrics import normalize_answer

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "evalsets" / "borg"
SPLITS = ("dev", "test")
UNANSWERABLE_KINDS = {
    "absent-parameter",
    "unstated-value",
    "other-product",
    "future-or-version",
    "out-of-scope-operation",
}
ANSWERABLE_KINDS = {"lookup-value", "how-to", "what-does"}
ATTRIBUTES = {"default", "maximum", "quantity", "meaning", "which", "version", "procedure", "reason", "yesno"}
VALUE_ATTRIBUTES = {"default", "maximum", "quantity", "which", "version"}


def _split_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("borg_split", SET / "split.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return load_golden(SET / "questions.jsonl")


@pytest.fixture(scope="module")
def splits() -> dict[str, list[dict[str, Any]]]:
    return {name: load_golden(SET / f"{name}.jsonl") for name in SPLITS}


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def _contains(haystack: list[str], needle: list[str]) -> bool:
    return bool(needle) and any(
        haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1)
    )


def test_ids_are_unique_and_named_after_the_set(rows: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("borg-") and len(i) == len("borg-000") and i[5:].isdigit() for i in ids), ids
    assert len({r["question"].strip().lower() for r in rows}) == len(rows), "duplicate question"


@pytest.mark.parametrize("name", SPLITS)
def test_each_split_is_big_enough(splits: dict[str, list[dict[str, Any]]], name: str) -> None:
    part = splits[name]
    unanswerable = [r for r in part if not r["answerable"]]
    assert len(part) >= 40
    assert len(unanswerable) >= 12
    assert {r["meta"]["kind"] for r in unanswerable} == UNANSWERABLE_KINDS
    assert {r["meta"]["kind"] for r in part if r["answerable"]} == ANSWERABLE_KINDS


def test_kinds_and_attributes(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    assert {r["meta"]["kind"] for r in answerable} == ANSWERABLE_KINDS
    attributes = Counter(r["meta"]["attribute"] for r in answerable)
    assert set(attributes) == ATTRIBUTES, attributes
    assert all(n >= 3 for n in attributes.values()), attributes
    # the set is about values: at least half of the answerable questions ask for one
    assert 2 * sum(attributes[a] for a in VALUE_ATTRIBUTES) >= len(answerable)
    unanswerable = Counter(r["meta"]["kind"] for r in rows if not r["answerable"])
    assert set(unanswerable) == UNANSWERABLE_KINDS
    # the hard kinds (a real-sounding setting, a value never given) carry the most weight
    assert unanswerable["absent-parameter"] >= 6 and unanswerable["unstated-value"] >= 6, unanswerable


def test_answerable_rows_have_answers_and_quoted_evidence(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    for r in answerable:
        assert r["answers"] and all(a.strip() for a in r["answers"]), r["id"]
        assert len(r["evidence"]) == 1, r["id"]
        quote = _tokens(r["evidence"][0]["quote"])
        # the quote proves the answer: some accepted answer is in it, as whole tokens
        assert any(_contains(quote, _tokens(a)) for a in r["answers"]), r["id"]
        for a in r["answers"]:
            assert _tokens(a) not in (["yes"], ["no"], ["borg"]), (r["id"], a)
    sources = Counter(r["evidence"][0]["source"] for r in answerable)
    assert len(sources) >= 15
    assert max(sources.values()) < len(answerable) / 4, sources.most_common(3)


def test_unanswerable_rows_carry_no_answer_and_record_the_check(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"] and not r["evidence"] and not r.get("reference"), r["id"]
            assert "grep" in r["meta"]["note"], r["id"]


def test_sources_are_relative_html_paths(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        for ev in r["evidence"]:
            path = PurePosixPath(ev["source"])
            assert not path.is_absolute() and ".." not in path.parts, ev["source"]
            assert "\\" not in ev["source"] and path.suffix == ".html", ev["source"]


def test_sources_are_in_the_fetched_include_list(rows: list[dict[str, Any]]) -> None:
    fetch = (SET / "fetch.sh").read_text(encoding="utf-8")
    include = fetch.split("INCLUDE=(", 1)[1].split(")", 1)[0].split()
    assert len(include) == len(set(include)) == 42
    for r in rows:
        for ev in r["evidence"]:
            assert ev["source"] in include, (r["id"], ev["source"])


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
    stratum = _split_module().stratum
    strata = Counter(stratum(r) for r in rows)
    assert ("answerable", "version") in strata and ("unanswerable", "unstated-value") in strata
    for part in splits.values():
        have = Counter(stratum(r) for r in part)
        for key, total in strata.items():
            assert abs(2 * have[key] - total) <= 1, (key, have[key], total)


def test_files_equal_what_split_py_writes() -> None:
    split = _split_module()
    assert split.SEED == 20261203
    files = split.build(split.read_rows(SET / "questions.jsonl"))
    for name, text in files.items():
        assert (SET / name).read_text(encoding="utf-8") == text, f"{name}: run python evalsets/borg/split.py"
