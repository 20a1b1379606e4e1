"""Stage 3 of the training-data builder (build_data.py): the non-test half of PubMedQA PQA-L.

Reader groups (a question vs its conclusion and hard negatives of its own and other abstracts) and
checker groups (conclusion sentences vs their restatements and corruptions), split by PMID.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from training import claims as C
from training import corruptions as K
from training.units import rng_for, split_of

PUBMEDQA = Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "pubmedqa"

_PUBMED_NEGATIVE_SECTIONS = re.compile(
    r"^(OBJECTIVES?|PURPOSE|AIMS?|STUDY OBJECTIVE|DESIGN|STUDY DESIGN|SETTING|METHODS?|MATERIALS? AND METHODS|PATIENTS AND METHODS|PARTICIPANTS|PATIENTS)$"
)


def pubmedqa_records(root: Path = PUBMEDQA) -> dict[str, dict[str, Any]]:
    """The non-test half of PubMedQA PQA-L (the PMIDs that test_ground_truth.json does not list)."""
    data = json.loads(gzip.decompress((root / "ori_pqal.json.gz").read_bytes()))
    test = set(json.loads((root / "test_ground_truth.json").read_text()))
    return {pmid: rec for pmid, rec in sorted(data.items()) if pmid not in test}


def _sentences(text: str) -> list[str]:
    import blingfire

    return [s.strip() for s in blingfire.text_to_sentences(text).split("\n") if s.strip()]


def pubmed_groups(
    records: dict[str, dict[str, Any]], seed: int, stats: Counter[str]
) -> Iterator[dict[str, Any]]:
    """Reader: question vs its own conclusion (positive), vs objective/method sentences of its own
    abstract and other questions' conclusions (negatives). Checker: conclusion sentences vs their
    sub-clauses and corruptions. No heading trail (the abstract's section names would give the label
    away). Split by PMID."""
    pmids = sorted(records)
    for pmid in pmids:
        rec = records[pmid]
        rng = rng_for(seed, "pubmed", pmid)
        doc = f"pubmedqa/{pmid}"
        split = split_of(doc, seed)
        same_split = [p for p in pmids if p != pmid and split_of(f"pubmedqa/{p}", seed) == split]
        conclusion = " ".join(rec["LONG_ANSWER"].split())
        q = " ".join(rec["QUESTION"].split())
        pairs = [(conclusion, 1, "pubmed_conclusion")]
        own_neg = [
            s
            for label, ctx in zip(rec["LABELS"], rec["CONTEXTS"], strict=False)
            if _PUBMED_NEGATIVE_SECTIONS.match(label.strip().upper())
            for s in _sentences(ctx)
            if len(s.split()) >= 6
        ]
        rng.shuffle(own_neg)
        pairs += [(s, 0, "pubmed_same_abstract_method") for s in own_neg[:2]]
        for other in rng.sample(same_split, min(3, len(same_split))):
            pairs.append((" ".join(records[other]["LONG_ANSWER"].split()), 0, "pubmed_other_conclusion"))
        rows = [
            {
                "a": q,
                "b": b,
                "label": label,
                "group": f"pr:{pmid}",
                "kind": kind,
                "source": doc,
                "b_source": doc,
                "unit_kind": "abstract",
                "qsource": "pubmedqa",
            }
            for b, label, kind in pairs
        ]
        for r in rows:
            if r["kind"] == "pubmed_other_conclusion":
                r["b_source"] = "pubmedqa/other"
        stats["pubmed:reader_groups"] += 1
        yield {"split": split, "task": "reader", "rows": rows}
        # checker: each conclusion sentence as premise
        for si, sentence in enumerate(_sentences(conclusion)[:3]):
            if len(sentence.split()) < 6 or sentence.startswith("Medical Subject Headings"):
                continue
            positives = [("self", sentence)]
            for kind, fn in (("subclause", C.sub_clause), ("short", C.short_restatement)):
                alt = fn(sentence)
                if alt:
                    positives.append((kind, alt))
            negatives = []
            kinds = ["number", "negation", "date", "unit"]
            rng.shuffle(kinds)
            kinds.append("added_entity")  # always applies: only when nothing else does
            for kind in kinds:
                if len(negatives) >= len(positives):
                    break
                for _, claim in positives:
                    out = K.corrupt(kind, claim, sentence, rng)
                    if out is not None:
                        negatives.append((kind, out))
                        break
            if not negatives:
                continue
            keep = positives[: len(negatives)]
            rows = [
                {
                    "a": a,
                    "b": sentence,
                    "label": label,
                    "group": f"pc:{pmid}:{si}",
                    "kind": kind,
                    "source": doc,
                    "b_source": doc,
                    "unit_kind": "sentence",
                }
                for (kind, a), label in [*((p, 1) for p in keep), *((n, 0) for n in negatives)]
            ]
            stats["pubmed:checker_groups"] += 1
            yield {"split": split, "task": "checker", "rows": rows}
