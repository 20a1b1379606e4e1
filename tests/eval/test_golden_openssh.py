"""The committed OpenSSH golden set (evalsets/openssh): format, counts per split, kinds, attributes, and
a reproducible dev/test split.

Fast: no manual download, no model. Whether the evidence quotes resolve in the rendered man pages is
checked by `citeline eval answers` against the fetched manual (see evalsets/openssh/README.md).
"""

from __future__ import annotations

import importlib.util
import re
from collections import Counter
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import pytest

from citeline.eval.answers import load_golden
from citeline.eval.metrics import normalize_answer

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "evalsets" / "openssh"
UNANSWERABLE_KINDS = {
    "absent-parameter",
    "unstated-value",
    "other-product",
    "future-or-version",
    "out-of-scope-operation",
}
ANSWERABLE_KINDS = {"lookup-value", "how-to", "what-does"}
ATTRIBUTES = {"default", "maximum", "quantity", "meaning", "which", "version", "procedure", "reason", "yesno"}
CONCRETE = {"default", "maximum", "quantity", "which", "version"}
# a rendered man page as fetch.sh writes it: <page>.<section>.txt
PAGE = re.compile(r"^[a-z][a-z0-9_-]*\.[158]\.txt$")


def _split_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("openssh_split", SET / "split.py")
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


def test_ids_are_numbered_and_questions_unique(rows: list[dict[str, Any]]) -> None:
    assert all(re.fullmatch(r"ossh-\d{3}", r["id"]) for r in rows)
    assert len({r["question"].strip().lower() for r in rows}) == len(rows), "duplicate question"


def test_counts_per_split(splits: dict[str, list[dict[str, Any]]]) -> None:
    for name, part in splits.items():
        unanswerable = [r for r in part if not r["answerable"]]
        assert len(part) >= 40, name
        assert len(unanswerable) >= 12, name


def test_kinds(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 84
    kinds = Counter(r["meta"]["kind"] for r in rows if not r["answerable"])
    assert set(kinds) == UNANSWERABLE_KINDS, kinds
    # the hard kinds (a real-sounding option, a value never given) are the larger share
    assert kinds["absent-parameter"] + kinds["unstated-value"] > sum(kinds.values()) / 2, kinds
    assert {r["meta"]["kind"] for r in rows if r["answerable"]} == ANSWERABLE_KINDS


def test_attributes(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    attributes = Counter(r["meta"].get("attribute") for r in answerable)
    assert set(attributes) == ATTRIBUTES, attributes
    concrete = sum(n for a, n in attributes.items() if a in CONCRETE)
    assert concrete >= len(answerable) / 2, attributes
    assert all("attribute" not in r["meta"] for r in rows if not r["answerable"])


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def _contains(haystack: list[str], needle: list[str]) -> bool:
    return any(haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def test_answerable_rows_have_answers_and_a_quote_that_holds_one(rows: list[dict[str, Any]]) -> None:
    for r in (r for r in rows if r["answerable"]):
        assert r["answers"] and all(a.strip() for a in r["answers"]), r["id"]
        assert not {a.strip().lower() for a in r["answers"]} & {"yes", "no", "none"}, r["id"]
        assert len(r["evidence"]) == 1 and r["evidence"][0]["quote"].strip(), r["id"]
        quote = _tokens(r["evidence"][0]["quote"])
        assert any(_contains(quote, _tokens(a)) for a in r["answers"] if _tokens(a)), r["id"]


def test_sources_are_rendered_page_names(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    for r in answerable:
        source = r["evidence"][0]["source"]
        path = PurePosixPath(source)
        assert not path.is_absolute() and len(path.parts) == 1 and PAGE.match(source), source
    sources = Counter(r["evidence"][0]["source"] for r in answerable)
    assert len(sources) >= 12
    assert max(sources.values()) < len(answerable) / 3, sources


def test_unanswerable_rows_carry_no_answer_and_record_the_grep(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"] and not r["evidence"] and not r.get("reference"), r["id"]
            assert r["meta"]["note"].startswith("grep -ci over the 17 rendered pages:"), r["id"]


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
    split = _split_module()
    strata = Counter(split.stratum(r) for r in rows)
    for part in splits.values():
        have = Counter(split.stratum(r) for r in part)
        for key, total in strata.items():
            assert abs(2 * have[key] - total) <= 1, (key, have[key], total)
        assert {r["meta"]["kind"] for r in part if not r["answerable"]} == UNANSWERABLE_KINDS
        assert {r["meta"]["attribute"] for r in part if r["answerable"]} == ATTRIBUTES


def test_files_equal_what_split_py_writes() -> None:
    split = _split_module()
    assert split.SEED == 20261203
    files = split.build(split.read_rows(SET / "questions.jsonl"))
    for name, text in files.items():
        assert (SET / name).read_text(encoding="utf-8") == text, (
            f"{name}: run python evalsets/openssh/split.py"
        )
