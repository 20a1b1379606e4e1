from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from citeline.errors import CitelineError
from citeline.eval.beir import (
    BeirDataset,
    BeirDoc,
    DatasetFormatError,
    DatasetNotFoundError,
    fixed_slice,
    load_beir,
)
from datasets import shared_dataset

CORPUS: list[dict[str, object]] = [
    {"_id": f"doc{i}", "title": f"Title {i}", "text": f"Text of document {i}.", "metadata": {}}
    for i in range(30)
]
QUERIES: list[dict[str, object]] = [
    {"_id": f"q{i}", "text": f"question {i}?", "metadata": {}} for i in range(8)
]
# q0..q5 judged in test, q6 in train, q7 in no split.
TEST_QRELS = [
    ("q0", "doc1", 1),
    ("q0", "doc2", 2),
    ("q1", "doc3", 1),
    ("q2", "doc4", 1),
    ("q3", "doc5", 1),
    ("q3", "doc6", 0),
    ("q4", "doc7", 1),
    ("q5", "doc8", 1),
]


def _write_jsonl(path: Path, records: list[dict[str, object]], gz: bool = False) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(lines)
    else:
        path.write_text(lines, encoding="utf-8")


def _write_qrels(path: Path, rows: list[tuple[str, str, int]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)
    path.write_text("query-id\tcorpus-id\tscore\n" + body, encoding="utf-8")


def make_beir(root: Path, gz: bool) -> Path:
    root.mkdir(parents=True)
    _write_jsonl(root / ("corpus.jsonl.gz" if gz else "corpus.jsonl"), CORPUS, gz=gz)
    _write_jsonl(root / "queries.jsonl", QUERIES)
    _write_qrels(root / "qrels" / "test.tsv", TEST_QRELS)
    _write_qrels(root / "qrels" / "train.tsv", [("q6", "doc9", 1)])
    return root


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_load_tiny_dataset(tmp_path: Path, gz: bool) -> None:
    ds = load_beir(make_beir(tmp_path / "tiny", gz), split="test")
    assert len(ds.corpus) == 30
    assert ds.corpus["doc3"] == BeirDoc(title="Title 3", text="Text of document 3.")
    assert list(ds.queries) == ["q0", "q1", "q2", "q3", "q4", "q5"]  # only judged, qrels order
    assert ds.queries["q1"] == "question 1?"
    assert ds.qrels["q0"] == {"doc1": 1, "doc2": 2}
    assert ds.qrels["q3"] == {"doc5": 1, "doc6": 0}  # grade 0 kept as a judgment

    train = load_beir(tmp_path / "tiny", split="train")
    assert train.queries == {"q6": "question 6?"}


def test_dataset_is_frozen(tmp_path: Path) -> None:
    ds = load_beir(make_beir(tmp_path / "tiny", gz=False))
    with pytest.raises(AttributeError):
        ds.queries = {}  # type: ignore[misc]


def test_missing_title_reads_as_empty(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "tiny", gz=False)
    _write_jsonl(root / "corpus.jsonl", [{"_id": 1, "text": "no title"}])  # numeric _id too
    ds = load_beir(root)
    assert ds.corpus == {"1": BeirDoc(title="", text="no title")}


def test_missing_folder_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"No BEIR dataset folder at .*corpus\.jsonl") as info:
        load_beir(tmp_path / "nope")
    assert isinstance(info.value, CitelineError)


def test_missing_split_lists_the_available_ones(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "tiny", gz=False)
    with pytest.raises(DatasetNotFoundError, match=r"no split 'dev'.*Available splits: test, train"):
        load_beir(root, split="dev")


def test_missing_corpus_or_queries(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "tiny", gz=False)
    (root / "queries.jsonl").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"no queries\.jsonl"):
        load_beir(root)
    _write_jsonl(root / "queries.jsonl", QUERIES)
    (root / "corpus.jsonl").unlink()
    with pytest.raises(DatasetNotFoundError, match=r"no corpus\.jsonl or corpus\.jsonl\.gz"):
        load_beir(root)


def test_malformed_files_name_the_line(tmp_path: Path) -> None:
    root = make_beir(tmp_path / "tiny", gz=False)
    (root / "corpus.jsonl").write_text('{"_id": "a", "text": "ok"}\n{broken\n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"corpus\.jsonl:2: not valid JSON"):
        load_beir(root)

    root = make_beir(tmp_path / "tiny2", gz=False)
    _write_qrels(root / "qrels" / "test.tsv", [("q0", "doc1", 1)])
    with (root / "qrels" / "test.tsv").open("a", encoding="utf-8") as handle:
        handle.write("q1\tdoc2\thigh\n")
    with pytest.raises(DatasetFormatError, match=r"test\.tsv:3: score 'high'"):
        load_beir(root)

    root = make_beir(tmp_path / "tiny3", gz=False)
    _write_qrels(root / "qrels" / "test.tsv", [("q99", "doc1", 1)])
    missing_query = r"judges 1 query id\(s\) missing from .*queries\.jsonl \(q99\)"
    with pytest.raises(DatasetFormatError, match=missing_query):
        load_beir(root)


def test_fixed_slice_is_deterministic_and_keeps_qrels_docs(tmp_path: Path) -> None:
    ds = load_beir(make_beir(tmp_path / "tiny", gz=True))
    a = fixed_slice(ds, n_queries=3, n_distractors=5, seed=13)
    b = fixed_slice(ds, n_queries=3, n_distractors=5, seed=13)
    assert a == b
    assert len(a.queries) == 3
    assert set(a.queries) == set(a.qrels) <= set(ds.qrels)
    judged = {doc_id for judgments in a.qrels.values() for doc_id in judgments}
    assert judged <= set(a.corpus)
    assert len(a.corpus) == len(judged) + 5
    assert all(a.corpus[d] == ds.corpus[d] for d in a.corpus)
    assert all(a.qrels[q] == ds.qrels[q] for q in a.qrels)

    # Independent of the order the dataset was read in.
    shuffled = BeirDataset(
        corpus=dict(reversed(list(ds.corpus.items()))),
        queries=dict(reversed(list(ds.queries.items()))),
        qrels=dict(reversed(list(ds.qrels.items()))),
    )
    c = fixed_slice(shuffled, n_queries=3, n_distractors=5, seed=13)
    assert list(c.queries) == list(a.queries)
    assert set(c.corpus) == set(a.corpus)

    # Another seed picks differently; asking for more than there is takes everything.
    assert fixed_slice(ds, 3, 5, seed=14) != a
    everything = fixed_slice(ds, n_queries=100, n_distractors=100)
    assert set(everything.queries) == set(ds.queries)
    assert set(everything.corpus) == set(ds.corpus)
    with pytest.raises(ValueError):
        fixed_slice(ds, n_queries=-1)


def test_fixed_slice_is_pinned(tmp_path: Path) -> None:
    """Pins the exact picks (same on Python 3.10-3.13): if this changes, so does every slice result."""
    ds = load_beir(make_beir(tmp_path / "tiny", gz=False))
    s = fixed_slice(ds, n_queries=2, n_distractors=3, seed=13)
    assert list(s.queries) == ["q1", "q4"]
    assert sorted(s.corpus) == ["doc14", "doc26", "doc3", "doc4", "doc7"]


@pytest.mark.dataset
def test_scifact_test_split() -> None:
    ds = load_beir(shared_dataset("scifact"), split="test")
    assert len(ds.queries) == 300
    assert len(ds.corpus) == 5183
    assert sum(len(j) for j in ds.qrels.values()) == 339
    judged = {doc_id for judgments in ds.qrels.values() for doc_id in judgments}
    assert judged <= set(ds.corpus)

    s = fixed_slice(ds)  # 50 queries, 1000 distractors, seed 13
    assert len(s.queries) == 50
    judged_in_slice = {doc_id for judgments in s.qrels.values() for doc_id in judgments}
    assert judged_in_slice <= set(s.corpus)
    assert len(s.corpus) == len(judged_in_slice) + 1000
    assert fixed_slice(ds) == s
    assert list(s.queries)[:5] == ["1316", "575", "100", "793", "127"]  # pinned, see above


def test_shared_dataset_skips_locally_and_fails_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="shared dataset 'no-such-dataset' not found"):
        shared_dataset("no-such-dataset")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        shared_dataset("no-such-dataset")
