"""The committed gnuplot golden set (evalsets/gnuplot): format, counts, kinds, attributes and a reproducible split.

Fast: no manual download, no model. Whether the evidence quotes resolve in the manual (gnuplot.pdf, one
311-page PDF) is checked by `citeline eval answers` against the fetched manual (see
evalsets/gnuplot/README.md).
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
SET = ROOT / "evalsets" / "gnuplot"
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
CONCRETE_ATTRIBUTES = {"default", "maximum", "quantity", "which", "version"}
# Answer strings that any answer could contain: they would make answer_contains meaningless. SQuAD
# normalisation makes "-p" the token "p" (in every "(p. 56)" cross-reference) and "1.0" the token "10".
TOO_GENERIC = {"yes", "no", "true", "false", "default", "none", "on", "off", "0", "1", "10", "first", "fixed"}
PDF_PAGES = 311


def _split_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gnuplot_split", SET / "split.py")
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


def _stratum(row: dict[str, Any]) -> tuple[bool, str]:
    return (row["answerable"], row["meta"]["kind"])


def _tokens(text: str) -> list[str]:
    return normalize_answer(text).split()


def _holds(haystack: list[str], needle: list[str]) -> bool:
    return bool(needle) and any(
        haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1)
    )


def test_counts_kinds_and_ids(rows: list[dict[str, Any]]) -> None:
    assert len(rows) >= 84
    assert all(r["id"] == f"gnuplot-{n:03d}" for n, r in enumerate(rows, 1))
    unanswerable = [r for r in rows if not r["answerable"]]
    kinds = Counter(r["meta"]["kind"] for r in unanswerable)
    assert set(kinds) == UNANSWERABLE_KINDS, kinds
    # the hard kinds (a real-sounding setting, a value never given) carry the most weight
    assert kinds["absent-parameter"] >= 8 and kinds["unstated-value"] >= 8, kinds
    assert {r["meta"]["kind"] for r in rows if r["answerable"]} == ANSWERABLE_KINDS
    assert len({r["question"].strip().lower() for r in rows}) == len(rows), "duplicate question"


@pytest.mark.parametrize("split", SPLITS)
def test_each_split_is_large_enough(splits: dict[str, list[dict[str, Any]]], split: str) -> None:
    part = splits[split]
    assert len(part) >= 40
    assert sum(1 for r in part if not r["answerable"]) >= 12


def test_attributes_cover_the_manual_and_lean_on_values(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    attributes = Counter(r["meta"]["attribute"] for r in answerable)
    assert set(attributes) == ATTRIBUTES, attributes
    concrete = sum(n for a, n in attributes.items() if a in CONCRETE_ATTRIBUTES)
    assert 2 * concrete >= len(answerable), attributes
    assert all("attribute" not in r["meta"] for r in rows if not r["answerable"])


def test_answerable_rows_have_answers_and_a_quote_that_proves_one(rows: list[dict[str, Any]]) -> None:
    for r in (r for r in rows if r["answerable"]):
        answers = r["answers"]
        assert answers and all(a.strip() for a in answers), r["id"]
        assert not {normalize_answer(a) for a in answers} & TOO_GENERIC, r["id"]
        assert all(len(normalize_answer(a)) > 1 for a in answers), r["id"]
        assert len(r["evidence"]) == 1, r["id"]
        quote = r["evidence"][0]["quote"]
        assert quote and quote.strip(), r["id"]
        # the quote proves the answer: some accepted answer is in it, as whole normalised tokens
        assert any(_holds(_tokens(quote), _tokens(a)) for a in answers), r["id"]


def test_evidence_names_the_pdf_and_a_page(rows: list[dict[str, Any]]) -> None:
    pages = set()
    for r in (r for r in rows if r["answerable"]):
        ev = r["evidence"][0]
        path = PurePosixPath(ev["source"])
        assert ev["source"] == "gnuplot.pdf" and not path.is_absolute(), r["id"]
        assert isinstance(ev["page"], int) and 21 <= ev["page"] <= PDF_PAGES, r["id"]  # body starts on p. 21
        pages.add(ev["page"])
    # spread over the manual: Part I (21-61), plotting styles (62-86), commands (87-236), terminals (237-302)
    assert len(pages) >= 50
    for lo, hi in ((21, 61), (62, 86), (87, 236), (237, 303)):
        assert any(lo <= p <= hi for p in pages), (lo, hi)


def test_unanswerable_rows_carry_no_answer_and_record_the_check(rows: list[dict[str, Any]]) -> None:
    unanswerable = [r for r in rows if not r["answerable"]]
    assert unanswerable
    for r in unanswerable:
        assert not r["answers"] and not r["evidence"] and not r.get("reference"), r["id"]
        assert r["meta"].get("note"), r["id"]


def test_splits_are_disjoint_and_cover_the_set(
    rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]]
) -> None:
    dev = {r["id"] for r in splits["dev"]}
    test = {r["id"] for r in splits["test"]}
    assert dev.isdisjoint(test)
    assert dev | test == {r["id"] for r in rows}
    assert abs(len(dev) - len(test)) <= 1
    by_id = {r["id"]: r for r in rows}
    for name, part in splits.items():
        for r in part:
            assert r["meta"]["split"] == name and r == by_id[r["id"]], r["id"]


def test_splits_are_stratified(rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]]) -> None:
    strata = Counter(_stratum(r) for r in rows)
    for part in splits.values():
        have = Counter(_stratum(r) for r in part)
        for key, total in strata.items():
            assert abs(2 * have[key] - total) <= 1, (key, have[key], total)


def test_files_equal_what_split_py_writes() -> None:
    split = _split_module()
    assert split.SEED == 20261203
    files = split.build(split.read_rows(SET / "questions.jsonl"))
    for name, text in files.items():
        assert (SET / name).read_text(encoding="utf-8") == text, (
            f"{name}: run python evalsets/gnuplot/split.py"
        )
