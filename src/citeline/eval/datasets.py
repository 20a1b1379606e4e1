"""The datasets retrieval is evaluated on: BEIR folders, plus the shared PubMedQA and
Climate-FEVER sets converted on the fly into the same shape (eval/beir.py's BeirDataset)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from citeline.eval.beir import BeirDataset, BeirDoc, DatasetNotFoundError, load_beir


def load_pubmedqa(root: Path, split: str = "test") -> BeirDataset:
    """PubMedQA PQA-L as retrieval: 1,000 abstracts (contexts, no title), a question finds its own.

    ``test`` = the 500 PMIDs of test_ground_truth.json, ``train`` = the other 500, ``all`` = 1,000.
    The question is the article title rephrased, so titles are left out of the corpus. ``train``
    searches its own 500 abstracts only: what is fitted on it never reads the test half.
    """
    with gzip.open(root / "ori_pqal.json.gz", "rt", encoding="utf-8") as handle:
        data: dict[str, dict[str, Any]] = json.load(handle)
    test_ids = set(json.loads((root / "test_ground_truth.json").read_text(encoding="utf-8")))
    if split not in ("test", "train", "all"):
        raise DatasetNotFoundError(f"PubMedQA has the splits test, train and all, not '{split}'.")
    chosen = [p for p in data if split == "all" or (p in test_ids) == (split == "test")]
    searched = chosen if split == "train" else list(data)
    corpus = {pmid: BeirDoc(title="", text="\n\n".join(data[pmid]["CONTEXTS"])) for pmid in searched}
    return BeirDataset(
        corpus=corpus,
        queries={p: str(data[p]["QUESTION"]) for p in chosen},
        qrels={p: {p: 1} for p in chosen},
    )


def load_climate_fever(root: Path, split: str = "test") -> BeirDataset:
    """The Climate-FEVER sentence pool: every evidence sentence is a document (title = its article);
    a claim's SUPPORTS/REFUTES sentences are relevant. One split only (``test``)."""
    if split not in ("test", "all"):
        raise DatasetNotFoundError(f"The Climate-FEVER pool has one split, 'test', not '{split}'.")
    corpus: dict[str, BeirDoc] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    with gzip.open(root / "climate-fever.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            claim = json.loads(line)
            relevant: dict[str, int] = {}
            for ev in claim["evidences"]:
                corpus.setdefault(ev["evidence_id"], BeirDoc(title=ev["article"], text=ev["evidence"]))
                if ev["evidence_label"] in ("SUPPORTS", "REFUTES"):
                    relevant[ev["evidence_id"]] = 1
            if relevant:
                queries[str(claim["claim_id"])] = claim["claim"]
                qrels[str(claim["claim_id"])] = relevant
    return BeirDataset(corpus=corpus, queries=queries, qrels=qrels)


def load_dataset(path: str | Path, split: str = "test") -> BeirDataset:
    """A BEIR folder, or the shared PubMedQA / Climate-FEVER folders (recognised by their files)."""
    root = Path(path)
    if (root / "ori_pqal.json.gz").is_file():
        return load_pubmedqa(root, split)
    if (root / "climate-fever.jsonl.gz").is_file():
        return load_climate_fever(root, split)
    return load_beir(root, split)


def limit_queries(dataset: BeirDataset, n: int | None) -> BeirDataset:
    """The first n queries (file order), the corpus untouched."""
    if n is None or n >= len(dataset.queries):
        return dataset
    keep = list(dataset.queries)[:n]
    return BeirDataset(
        corpus=dataset.corpus,
        queries={q: dataset.queries[q] for q in keep},
        qrels={q: dataset.qrels[q] for q in keep},
    )
