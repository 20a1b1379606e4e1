"""Load BEIR-format retrieval datasets and cut small, reproducible slices of them.

A BEIR dataset folder holds::

    corpus.jsonl  (or corpus.jsonl.gz)   {"_id", "title", "text", ...} per line
    queries.jsonl                        {"_id", "text", ...} per line
    qrels/<split>.tsv                    header "query-id<TAB>corpus-id<TAB>score", then one row each
"""

from __future__ import annotations

import csv
import gzip
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from citeline.errors import CitelineError

T = TypeVar("T")

_LAYOUT = "corpus.jsonl (or corpus.jsonl.gz), queries.jsonl and qrels/<split>.tsv"


class DatasetError(CitelineError):
    """A BEIR dataset folder is missing or malformed."""


class DatasetNotFoundError(DatasetError):
    pass


class DatasetFormatError(DatasetError):
    pass


@dataclass(frozen=True, slots=True)
class BeirDoc:
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """corpus: doc id -> BeirDoc; queries: query id -> text; qrels: query id -> {doc id: grade}.

    `queries` holds exactly the queries that have qrels in the loaded split, in qrels file order.
    """

    corpus: dict[str, BeirDoc]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def _open_text(path: Path) -> TextIO:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with _open_text(path) as handle:
            for line_no, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetFormatError(f"{path}:{line_no}: not valid JSON ({exc.msg}).") from exc
                if not isinstance(record, dict) or "_id" not in record:
                    raise DatasetFormatError(f"{path}:{line_no}: expected a JSON object with an '_id' field.")
                yield line_no, record
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DatasetFormatError(f"{path}: cannot be read ({exc}). Is the file complete?") from exc


def _text_field(path: Path, line_no: int, record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DatasetFormatError(f"{path}:{line_no}: field '{field}' should be a string.")
    return value


def _corpus_path(root: Path) -> Path:
    for name in ("corpus.jsonl", "corpus.jsonl.gz"):
        if (root / name).is_file():
            return root / name
    raise DatasetNotFoundError(
        f"{root} has no corpus.jsonl or corpus.jsonl.gz. A BEIR dataset folder holds {_LAYOUT}."
    )


def _available_splits(root: Path) -> list[str]:
    qrels_dir = root / "qrels"
    if not qrels_dir.is_dir():
        return []
    return sorted(p.name[: -len(".tsv")] for p in qrels_dir.glob("*.tsv"))


def _load_qrels(path: Path) -> dict[str, dict[str, int]]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return _parse_qrels(path, handle)
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetFormatError(f"{path}: cannot be read ({exc}).") from exc


def _parse_score(path: Path, line_no: int, raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        as_float = float(raw)
    except ValueError:
        as_float = float("nan")
    if not as_float.is_integer():
        raise DatasetFormatError(f"{path}:{line_no}: score '{raw}' is not an integer relevance grade.")
    return int(as_float)


def _parse_qrels(path: Path, handle: TextIO) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line_no, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE), 1):
        if not row or all(not cell.strip() for cell in row):
            continue
        if line_no == 1 and row[0].strip().lower() in {"query-id", "query_id", "qid"}:
            continue  # header
        if len(row) < 3:
            raise DatasetFormatError(
                f"{path}:{line_no}: expected 3 tab-separated columns (query-id, corpus-id, score), "
                f"got {len(row)}."
            )
        query_id, doc_id = row[0].strip(), row[1].strip()
        qrels.setdefault(query_id, {})[doc_id] = _parse_score(path, line_no, row[2].strip())
    return qrels


def load_beir(path: str | Path, split: str = "test") -> BeirDataset:
    """Read the BEIR dataset in folder `path`, keeping the queries judged in qrels/<split>.tsv.

    Raises DatasetNotFoundError for a missing folder, file or split, and DatasetFormatError for
    unreadable records; each message says what to fix.
    """
    root = Path(path)
    if not root.is_dir():
        raise DatasetNotFoundError(
            f"No BEIR dataset folder at {root}. Pass a folder that holds {_LAYOUT} "
            "(e.g. ../shared/datasets/scifact)."
        )
    qrels_path = root / "qrels" / f"{split}.tsv"
    if not qrels_path.is_file():
        splits = _available_splits(root)
        hint = (
            f"Available splits: {', '.join(splits)}; pass one of them as the split."
            if splits
            else f"The folder has no qrels/*.tsv at all; a BEIR dataset folder holds {_LAYOUT}."
        )
        raise DatasetNotFoundError(f"{root} has no split '{split}' ({qrels_path} is missing). {hint}")
    queries_path = root / "queries.jsonl"
    if not queries_path.is_file():
        raise DatasetNotFoundError(f"{root} has no queries.jsonl. A BEIR dataset folder holds {_LAYOUT}.")
    corpus_path = _corpus_path(root)

    qrels = _load_qrels(qrels_path)

    all_queries: dict[str, str] = {}
    for line_no, record in _read_jsonl(queries_path):
        all_queries[str(record["_id"])] = _text_field(queries_path, line_no, record, "text")
    missing = [qid for qid in qrels if qid not in all_queries]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise DatasetFormatError(
            f"{qrels_path} judges {len(missing)} query id(s) missing from {queries_path} ({shown}). "
            "The qrels and queries files must come from the same dataset."
        )
    queries = {qid: all_queries[qid] for qid in qrels}

    corpus: dict[str, BeirDoc] = {}
    for line_no, record in _read_jsonl(corpus_path):
        corpus[str(record["_id"])] = BeirDoc(
            title=_text_field(corpus_path, line_no, record, "title"),
            text=_text_field(corpus_path, line_no, record, "text"),
        )
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)


def _seeded_prefix(items: Sequence[T], n: int, rng: random.Random) -> list[T]:
    """The first n items of a Fisher-Yates shuffle of `items` driven by rng.random() only.

    Random.random() is the one stream Python promises to keep identical across versions for a
    given seed (shuffle/sample/randrange have no such promise), so slices stay reproducible.
    """
    pool = list(items)
    count = min(n, len(pool))
    for i in range(count):
        j = i + min(int(rng.random() * (len(pool) - i)), len(pool) - i - 1)
        pool[i], pool[j] = pool[j], pool[i]
    return pool[:count]


def fixed_slice(
    dataset: BeirDataset, n_queries: int = 50, n_distractors: int = 1000, seed: int = 13
) -> BeirDataset:
    """A small reproducible sub-dataset for quick evaluations.

    Takes the first `n_queries` judged queries in a seeded random order, every corpus document
    their qrels name, and `n_distractors` seeded random other corpus documents (fewer if the
    corpus runs out). Ids are sorted before shuffling, so the slice depends only on the ids and
    the seed, not on file order, machine or Python version. Queries and qrels keep the seeded
    order; the corpus keeps the dataset's order. Qrels documents absent from the corpus are
    left out of the corpus (their judgments are kept).
    """
    if n_queries < 0 or n_distractors < 0:
        raise ValueError(f"n_queries and n_distractors must be >= 0, got {n_queries}, {n_distractors}")
    rng = random.Random(seed)
    chosen = _seeded_prefix(sorted(dataset.qrels), n_queries, rng)
    qrels = {qid: dict(dataset.qrels[qid]) for qid in chosen}
    judged = {doc_id for judgments in qrels.values() for doc_id in judgments if doc_id in dataset.corpus}
    others = sorted(doc_id for doc_id in dataset.corpus if doc_id not in judged)
    keep = judged | set(_seeded_prefix(others, n_distractors, rng))
    corpus = {doc_id: doc for doc_id, doc in dataset.corpus.items() if doc_id in keep}
    queries = {qid: dataset.queries[qid] for qid in chosen}
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)
