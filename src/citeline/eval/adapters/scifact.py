"""SciFact: dev claims over their cited abstracts and seeded distractor abstracts."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from citeline.eval.adapters.common import AdaptedDataset, _fresh_docs, _markdown, stratified
from citeline.eval.beir import _seeded_prefix


def _claim_label(claim: Mapping[str, Any]) -> str:
    labels = sorted({e["label"] for sets in claim.get("evidence", {}).values() for e in sets})
    return "/".join(labels) if labels else "NEI"


def scifact(
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    distractors: int | None = 200,
    split: str = "dev",
) -> AdaptedDataset:
    """SciFact claims (SUPPORT / CONTRADICT / NEI strata) over their abstracts and seeded distractors."""
    root = Path(dataset_dir) / "original"
    claims = [
        json.loads(line)
        for line in (root / f"claims_{split}.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        corpus = {str(d["doc_id"]): d for d in (json.loads(line) for line in handle if line.strip())}
    strata: dict[str, list[dict[str, Any]]] = {}
    for c in claims:
        strata.setdefault(_claim_label(c), []).append(c)
    picked = stratified(dict(sorted(strata.items())), limit, seed, key=lambda c: f"{int(c['id']):08d}")
    chosen = sorted((c for items in picked.values() for c in items), key=lambda c: int(c["id"]))
    needed = {str(d) for c in chosen for d in c.get("cited_doc_ids", [])}
    needed |= {str(d) for c in chosen for d in c.get("evidence", {})}
    needed &= set(corpus)
    others = sorted(d for d in corpus if d not in needed)
    if distractors is None:
        keep = set(corpus)
    else:
        keep = needed | set(_seeded_prefix(others, distractors, random.Random(seed + 1)))
    docs = _fresh_docs(work_dir)
    for doc_id in sorted(keep, key=int):
        d = corpus[doc_id]
        body = " ".join(" ".join(s.split()) for s in d["abstract"])
        (docs / f"{doc_id}.md").write_text(
            _markdown(" ".join(str(d["title"]).split()), body, scifact_id=doc_id), encoding="utf-8"
        )
    rows = []
    for c in chosen:
        evidence: list[dict[str, Any]] = []
        for doc_id, sets in sorted(c.get("evidence", {}).items()):
            sentences = corpus[str(doc_id)]["abstract"] if str(doc_id) in corpus else []
            for idx in sorted({i for e in sets for i in e["sentences"]}):
                if idx < len(sentences):
                    quote = " ".join(sentences[idx].split())
                    evidence.append({"source": f"{doc_id}.md", "page": None, "quote": quote})
        answerable = bool(evidence)
        rows.append(
            {
                "id": f"scifact-{c['id']}",
                "question": c["claim"],
                "answerable": answerable,
                "reference": " ".join(str(e["quote"]) for e in evidence) if answerable else None,
                "evidence": evidence,
                "meta": {
                    "stratum": _claim_label(c),
                    "cited_doc_ids": [str(d) for d in c.get("cited_doc_ids", [])],
                },
            }
        )
    notes = {
        "split": split,
        "documents": len(keep),
        "distractors": len(keep - needed),
        "strata": {name: len(items) for name, items in picked.items()},
    }
    return AdaptedDataset("scifact", docs, rows, notes)
