"""Public datasets as answer-evaluation sets: a folder of documents plus golden rows.

Each adapter reads a shared dataset folder (never copied into the repository), writes the
documents it needs under ``work_dir/docs`` and returns golden rows in the format of
:mod:`citeline.eval.answers` with ``source`` paths relative to that folder. ``limit`` and
``seed`` pick a fixed, stratified slice: strata (e.g. answerable / unanswerable) are shuffled with
a seeded ``random.random()`` stream over sorted ids and each gets its share of the limit, so the
same (limit, seed) always gives the same questions and the same sub-corpus.

* **rgb**: RGB ``en_fact.json``, negative-rejection protocol. Only the ``negative`` snippets are
  written, one Markdown file per snippet in a folder per question (``q019/neg1.md``); every
  question expects the refusal and is asked over its own folder only (the row's ``scope``), as
  RGB gives each question its own snippets. A "negative" snippet that contains the question's
  own gold answer (RGB has a few) is left out, and so is a question left with no snippet (it
  would be refused for free); both are counted in ``notes``.
* **conditionalqa**: ConditionalQA ships no page text (``documents.json`` is missing). Each
  gov.uk page of the split is rebuilt from the evidence sentences that the split's questions
  cite (HTML turned into Markdown: headings, paragraphs, list items, table rows as ``a | b``),
  in an order merged from the questions' evidence lists. Answerable questions cite those
  sentences; ``not_answerable`` questions expect a refusal (their page is in the corpus but does
  not answer them); and ``test_no_answer`` questions, whose pages (disjoint from dev/train) are
  not in the corpus at all, expect a refusal too (stratum ``page_absent``). The question asked is
  the user's scenario followed by the question.
* **scifact**: claims from ``original/claims_dev.jsonl``; each abstract becomes a document (title
  in the front matter, sentences joined by one space, as BEIR does). Rationale sentences are the
  gold evidence quotes and also the ``reference`` answer; claims with no evidence (NEI) are
  unanswerable. The corpus is the abstracts the chosen claims cite plus ``distractors`` seeded
  random others (``None`` = the whole corpus).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from citeline.eval.adapters.common import AdaptedDataset, stratified
from citeline.eval.adapters.conditionalqa import conditionalqa, evidence_markdown
from citeline.eval.adapters.rgb import rgb, rgb_positive
from citeline.eval.adapters.scifact import scifact
from citeline.filters import Filter

ADAPTERS: dict[str, Callable[..., AdaptedDataset]] = {
    "rgb": rgb,
    "rgb-positive": rgb_positive,
    "conditionalqa": conditionalqa,
    "scifact": scifact,
}


def adapt(
    name: str,
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    **options: Any,
) -> AdaptedDataset:
    """Run the adapter `name` (one of ADAPTERS)."""
    try:
        adapter = ADAPTERS[name]
    except KeyError:
        raise ValueError(f"Unknown dataset '{name}'; choose one of {', '.join(ADAPTERS)}.") from None
    return adapter(dataset_dir, work_dir, limit=limit, seed=seed, **options)


def evaluate_dataset(
    name: str,
    dataset_dir: str | Path,
    work_dir: str | Path,
    limit: int | None = None,
    seed: int = 13,
    k: int = 5,
    generator: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    reuse_index: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Adapt dataset `name` into work_dir, index its documents, evaluate the answers.

    The adapter owns ``work_dir/docs`` and the index lives in ``work_dir/index``: fresh each time,
    or with ``reuse_index`` kept across runs (unchanged documents are not embedded again and
    documents no longer in the slice are removed). The report carries the adapter's notes and
    the indexing time under ``"dataset_notes"``.
    """
    import time

    from citeline.eval.answers import evaluate_answers
    from citeline.kb import open_kb

    adapted = adapt(name, dataset_dir, work_dir, limit=limit, seed=seed, **options)
    index = Path(work_dir) / "index"
    if index.exists() and not reuse_index:
        shutil.rmtree(index)
    with open_kb(index, generator=generator) as kb:
        started = time.perf_counter()
        report = kb.add([adapted.docs_dir], root=adapted.docs_dir)
        if report.failed:
            raise RuntimeError(f"{name}: could not index {report.failed[:3]}")
        # Documents of an earlier slice go after the add, so their cached vectors could be reused.
        current = {
            Path(os.path.relpath(p, adapted.docs_dir)).as_posix() for p in adapted.docs_dir.rglob("*.md")
        }
        for doc in kb.store.documents(Filter.admin()):
            if doc.source not in current:  # another slice's, or indexed under an older identity
                kb.store.remove_document(doc.id)
        indexing_s = time.perf_counter() - started
        result = evaluate_answers(
            kb, adapted.rows, k, docs_root=adapted.docs_dir, dataset=name, progress=progress
        )
        chunks = kb.store.stats()["chunks"]
    result["dataset_notes"] = {
        **adapted.notes,
        "limit": limit,
        "seed": seed,
        "indexing_s": round(indexing_s, 2),
        "chunks": chunks,
        "chunks_embedded": report.chunks_embedded,
    }
    return result


__all__ = [
    "ADAPTERS",
    "AdaptedDataset",
    "adapt",
    "conditionalqa",
    "evaluate_dataset",
    "evidence_markdown",
    "rgb",
    "rgb_positive",
    "scifact",
    "stratified",
]
