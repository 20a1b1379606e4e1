"""The committed aptitude golden set (evalsets/aptitude, a DOCX manual): format, counts per split,
kinds, attributes, and a reproducible dev/test split.

Fast: no manual download, no model. Whether the evidence quotes resolve in the converted documents is
checked by `citeline eval answers` against the fetched manual (see evalsets/aptitude/README.md).
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
SET = ROOT / "evalsets" / "aptitude"
DOCUMENTS = {
    "introduction.docx",
    "getting-started.docx",
    "reference-guide.docx",
    "faq.docx",
    "credits.docx",
    "command-line-reference.docx",
}
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


def _split_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("aptitude_split", SET / "split.py")
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


def test_ids_are_unique_and_named_after_the_set(rows: list[dict[str, Any]]) -> None:
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("apt-") and i[4:].isdigit() and len(i) == 7 for i in ids), ids
    assert len({r["question"].strip().lower() for r in rows}) == len(rows), "duplicate question"


@pytest.mark.parametrize("split", ["dev", "test"])
def test_each_split_is_large_enough(splits: dict[str, list[dict[str, Any]]], split: str) -> None:
    part = splits[split]
    unanswerable = [r for r in part if not r["answerable"]]
    assert len(part) >= 40
    assert len(unanswerable) >= 12
    assert {r["meta"]["kind"] for r in unanswerable} == UNANSWERABLE_KINDS


def test_kinds_and_attributes(rows: list[dict[str, Any]]) -> None:
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    assert {r["meta"]["kind"] for r in answerable} == ANSWERABLE_KINDS
    kinds = Counter(r["meta"]["kind"] for r in unanswerable)
    assert set(kinds) == UNANSWERABLE_KINDS and all(n >= 2 for n in kinds.values()), kinds
    # the hard kinds (a real-sounding setting, a value never given) are the larger part
    assert kinds["absent-parameter"] + kinds["unstated-value"] >= len(unanswerable) / 2
    attributes = Counter(r["meta"]["attribute"] for r in answerable)
    assert set(attributes) == ATTRIBUTES, attributes
    assert sum(attributes[a] for a in CONCRETE_ATTRIBUTES) >= len(answerable) / 2
    assert all("attribute" not in r["meta"] for r in unanswerable)


def test_answerable_rows_have_answers_and_quoted_evidence(rows: list[dict[str, Any]]) -> None:
    for r in (r for r in rows if r["answerable"]):
        assert r["answers"] and all(a.strip() for a in r["answers"]), r["id"]
        assert len(r["evidence"]) == 1, r["id"]
        ev = r["evidence"][0]
        assert ev["quote"] and ev["quote"].strip() and ev["page"] is None, r["id"]
        # the quote proves the answer: some accepted answer is in it, as whole normalised tokens
        quote = f" {normalize_answer(ev['quote'])} "
        assert any(normalize_answer(a) and f" {normalize_answer(a)} " in quote for a in r["answers"]), r["id"]


def test_unanswerable_rows_carry_no_answer_and_record_the_check(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        if not r["answerable"]:
            assert not r["answers"] and not r["evidence"] and not r.get("reference"), r["id"]
            assert "grep -i" in r["meta"]["note"], r["id"]


def test_sources_are_the_converted_documents(rows: list[dict[str, Any]]) -> None:
    sources = Counter(ev["source"] for r in rows for ev in r["evidence"])
    for source in sources:
        path = PurePosixPath(source)
        assert not path.is_absolute() and ".." not in path.parts and "\\" not in source, source
        assert source in DOCUMENTS, source
    assert len(sources) >= 4
    assert sources["reference-guide.docx"] < sum(sources.values()) * 0.75


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


def test_splits_are_stratified_by_kind_and_attribute(
    rows: list[dict[str, Any]], splits: dict[str, list[dict[str, Any]]]
) -> None:
    stratum = _split_module().stratum
    strata = Counter(stratum(r) for r in rows)
    for part in splits.values():
        have = Counter(stratum(r) for r in part)
        for key, total in strata.items():
            assert abs(2 * have[key] - total) <= 1, (key, have[key], total)


def test_files_equal_what_split_py_writes() -> None:
    split = _split_module()
    assert split.SEED == 20261203
    files = split.build(split.read_rows(SET / "questions.jsonl"))
    for name, text in files.items():
        assert (SET / name).read_text(encoding="utf-8") == text, (
            f"{name}: run python evalsets/aptitude/split.py"
        )


def test_fetch_script_pins_the_package_and_the_converter() -> None:
    script = (SET / "fetch.sh").read_text(encoding="utf-8")
    assert "PACKAGE=aptitude-doc-en" in script and "VERSION=0.8.13-5" in script
    assert "PANDOC_VERSION=2.17.1.1" in script and "SOURCE_DATE_EPOCH" in script
    pinned = [line for line in script.splitlines() if line.strip().startswith("[") and "]=" in line]
    assert {line.strip()[1:].split("]", 1)[0] + ".docx" for line in pinned} == DOCUMENTS
    assert all(len(line.split("]=", 1)[1].strip()) == 64 for line in pinned)
    # listed as never to be used as training data (evalsets/RESERVED)
    reserved = [
        ln
        for ln in (ROOT / "evalsets" / "RESERVED").read_text(encoding="utf-8").splitlines()
        if ln[:1] != "#"
    ]
    assert any(PurePosixPath("aptitude-doc-en").match(glob) for glob in reserved)
    # never the reader's training data either
    assert 'package = "aptitude-doc-en"' not in (ROOT / "training" / "manuals.toml").read_text(
        encoding="utf-8"
    )
