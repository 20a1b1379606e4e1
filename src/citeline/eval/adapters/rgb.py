"""RGB (en_fact.json): negative rejection, and the same questions over their positive snippets."""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from citeline.eval.adapters.common import AdaptedDataset, _flatten, _fresh_docs, _markdown, stratified
from citeline.eval.metrics import contains_any

_MONTHS = "january february march april may june july august september october november december".split()
_DATE_ANSWER = re.compile(r"([a-z]+)\.? (\d{1,2}),? (\d{4})")
_NAME_ANSWER = re.compile(r"[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)+")  # "Ashleigh Barty", "Niels B. Christiansen"


def _plain(text: str) -> str:
    """Lower case without accents: "Pogačar" meets "Pogacar"."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@functools.cache
def giveaways(answer: str) -> tuple[re.Pattern[str], ...]:
    """What else says ``answer`` in a news snippet: a date's month and day without its year
    ("Nov. 12", "November 21 of 1998", "September 20th") or in figures ("6/19/2020"), a money
    figure's number ("10.4" of "$10.4 billion"), a person's surname ("Barty wins the 2021
    Wimbledon"), a place's city ("Tampa, Fla." for "Tampa, Florida")."""
    date = _DATE_ANSWER.fullmatch(_plain(answer))
    if date is not None:
        month = next((m for m in _MONTHS if m[:3] == date.group(1)[:3]), None)
        if month is None:
            return ()
        name, day = rf"(?:{month}|{month[:3]}\.?)", rf"0?{date.group(2)}(?:st|nd|rd|th)?"
        m, d, y = _MONTHS.index(month) + 1, date.group(2), date.group(3)
        numeric = rf"\b0?{m}/0?{d}/(?:{y}|{y[2:]})\b|\b0?{d}/0?{m}/(?:{y}|{y[2:]})\b"  # 6/19/2020, 27/10/2017
        return (re.compile(rf"\b{name}\s+{day}\b|\b{day}\s+(?:of\s+)?{name}(?!\w)|{numeric}"),)
    money = re.fullmatch(r"[$€£]\s*(\d+(?:\.\d+)?)\s*(?:billion|million)?", answer.strip())
    if money is not None:
        return (re.compile(rf"(?<![\d.]){re.escape(money.group(1))}(?!\d|\.\d)"),)
    head = answer.split(",")[0].strip()  # "Tampa, Florida": the city
    if head != answer.strip() and len(head) >= 4:
        return (re.compile(rf"\b{re.escape(_plain(head))}\b"),)
    if _NAME_ANSWER.fullmatch(answer.strip()):
        surname = _plain(answer.split()[-1])
        return (re.compile(rf"\b{re.escape(surname)}\b"),) if len(surname) >= 3 else ()
    return ()


def gives_away(text: str, answers: list[str]) -> bool:
    """Whether a snippet states one of the answers, exactly or as :func:`giveaways` finds it."""
    if contains_any(text, answers):
        return True
    plain = _plain(text)
    return any(p.search(plain) for a in answers for p in giveaways(a))


def rgb(
    dataset_dir: str | Path, work_dir: str | Path, limit: int | None = None, seed: int = 13
) -> AdaptedDataset:
    """RGB en_fact.json, negative-rejection protocol: negative snippets only, every question refused.

    Some of RGB's negative snippets state the answer in other words ("Barty wins the 2021
    Wimbledon", "returns to ABC on Thursday, Nov. 12"): those are dropped too (:func:`gives_away`),
    since answering from them is right, not a failure to refuse."""
    records = [
        json.loads(line)
        for line in (Path(dataset_dir) / "en_fact.json").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]

    def kept(r: dict[str, Any]) -> list[tuple[int, str]]:  # negatives that do not give the answer away
        answers = _flatten(r["answer"])
        texts = ((j, " ".join(str(n).split())) for j, n in enumerate(r.get("negative") or [], 1))
        return [(j, text) for j, text in texts if text and not gives_away(text, answers)]

    negatives = {str(r["id"]): kept(r) for r in records}
    eligible = [r for r in records if negatives[str(r["id"])]]
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
        for j, text in negatives[str(r["id"])]:
            (folder / f"neg{j}.md").write_text(_markdown("Web search result", text), encoding="utf-8")
            written += 1
        dropped += sum(1 for n in r.get("negative") or [] if " ".join(str(n).split())) - len(
            negatives[str(r["id"])]
        )
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
