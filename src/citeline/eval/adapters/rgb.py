"""RGB (en_fact.json): negative rejection, and the same questions over their positive snippets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from citeline.eval.adapters.common import AdaptedDataset, _flatten, _fresh_docs, _markdown, stratified
from citeline.eval.metrics import contains_any


def rgb(
    dataset_dir: str | Path, work_dir: str | Path, limit: int | None = None, seed: int = 13
) -> AdaptedDataset:
    """RGB en_fact.json, negative-rejection protocol: negative snippets only, every question refused."""
    records = [
        json.loads(line)
        for line in (Path(dataset_dir) / "en_fact.json").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]

    def usable(r: dict[str, Any]) -> bool:  # some negative snippet that does not give the answer away
        return any(
            " ".join(str(n).split()) and not contains_any(str(n), _flatten(r["answer"]))
            for n in r.get("negative") or []
        )

    eligible = [r for r in records if usable(r)]
    chosen = stratified({"all": eligible}, limit, seed, key=lambda r: f"{int(r['id']):06d}")["all"]
    chosen.sort(key=lambda r: int(r["id"]))
    docs = _fresh_docs(work_dir)
    written = dropped = 0
    rows = []
    for r in chosen:
        qid = int(r["id"])
        folder = docs / f"q{qid:03d}"
        folder.mkdir()
        answers = _flatten(r["answer"])
        for j, snippet in enumerate(r.get("negative") or [], 1):
            text = " ".join(str(snippet).split())
            if not text:
                continue
            if contains_any(text, answers):
                dropped += 1
                continue
            (folder / f"neg{j}.md").write_text(_markdown("Web search result", text), encoding="utf-8")
            written += 1
        rows.append(
            {
                "id": f"rgb-{qid}",
                "question": r["query"],
                "answerable": False,
                "answers": [],
                "evidence": [],
                "scope": folder.name,
                "meta": {"stratum": "negative_rejection", "rgb_answer": answers},
            }
        )
    notes = {
        "protocol": "negative rejection: each question over its own negative snippets only",
        "questions": len(rows),
        "documents": written,
        "snippets_dropped_for_containing_the_answer": dropped,
        "questions_left_out_without_a_usable_snippet": len(records) - len(eligible),
    }
    return AdaptedDataset("rgb", docs, rows, notes)


def rgb_positive(
    dataset_dir: str | Path, work_dir: str | Path, limit: int | None = None, seed: int = 13
) -> AdaptedDataset:
    """RGB en_fact.json, the same questions over their positive snippets only: every question is
    answerable, so a refusal here is a false refusal (the counterpart of negative rejection)."""
    records = [
        json.loads(line)
        for line in (Path(dataset_dir) / "en_fact.json").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]

    def holds_answer(r: dict[str, Any]) -> list[str]:
        answers = _flatten(r["answer"])
        return [" ".join(str(p).split()) for p in r.get("positive") or [] if contains_any(str(p), answers)]

    eligible = [r for r in records if holds_answer(r)]
    chosen = stratified({"all": eligible}, limit, seed, key=lambda r: f"{int(r['id']):06d}")["all"]
    chosen.sort(key=lambda r: int(r["id"]))
    docs = _fresh_docs(work_dir)
    rows, written = [], 0
    for r in chosen:
        qid = int(r["id"])
        folder = docs / f"q{qid:03d}"
        folder.mkdir()
        answers = _flatten(r["answer"])
        evidence = []
        for j, text in enumerate(holds_answer(r), 1):
            (folder / f"pos{j}.md").write_text(_markdown("Web search result", text), encoding="utf-8")
            written += 1
            found = next((a for a in answers if a.lower() in text.lower()), None)
            evidence.append({"source": f"{folder.name}/pos{j}.md", "page": None, "quote": found})
        rows.append(
            {
                "id": f"rgbpos-{qid}",
                "question": r["query"],
                "answerable": True,
                "answers": answers,
                "evidence": evidence,
                "scope": folder.name,
                "meta": {"stratum": "positive"},
            }
        )
    notes = {
        "protocol": "positive snippets only (those that contain an answer string): every question answerable",
        "questions": len(rows),
        "documents": written,
        "questions_left_out_without_an_answering_snippet": len(records) - len(eligible),
    }
    return AdaptedDataset("rgb-positive", docs, rows, notes)
