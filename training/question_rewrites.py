"""Reworded questions for the reader (fifth round: ``build_data.py --stages rewrites`` writes them,
``--rewrites`` puts them into the assembled data).

Every earlier round's questions borrow the words of their answer: the LLM writes them while
reading the unit, and the templates name the option ("What is the default value of X?"). Users do
not know those words. On golden dev the reader misses "How long may an after-queue filter command
run before Postfix kills it?" for "Postfix will terminate a command that runs longer than
command_time_limit seconds (default: 1000s)". Here the LLM gets an answered question with its
answer unit and rewrites the question in a user's own words; each kept rewrite becomes a copy of
the original group (same positives, same negatives) with the rewritten question. Measured: see
training/README.md, "The fifth round".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from training import claims as C
from training.common import Logger, check_not_reserved, read_jsonl
from training.llm import QUESTION_SCHEMA, one_question_messages, parse_question
from training.questions import question_problem
from training.units import rng_for

SYSTEM = (
    "You reword questions about a software manual the way a user who has never read the manual "
    "would ask them. You get the manual's sentence that answers the question, then the question. "
    "Keep exactly what the user wants to know, but describe it in everyday words: the effect, the "
    "situation or the goal, not the sentence's own terms. Keep a command, option or file name only "
    "if the user must already know it to ask. Never give the answer. Reply with JSON: "
    '{"question": "..."}.'
)
# a made-up product, so that no manual's text is in the prompt; its words in a reply mean a copy
EXAMPLES = [
    (
        "Answer: Snapshot tool > Options > --max-age (default: 30d): Delete snapshots older than "
        "this.\nQuestion: What is the default value of --max-age?",
        "How long are old snapshots kept before they are deleted, if I change nothing?",
    ),
    (
        "Answer: Document viewer > Keyboard: Press Ctrl+L to reload the current document from disk."
        "\nQuestion: How do I reload the current document from disk?",
        "The file changed on disk while it was open in the viewer; how do I see the new version?",
    ),
]
_EXAMPLE_WORDS = frozenset(["snapshot", "snapshots", "viewer"])
#: groups whose question has an answer unit: LLM questions, templates and answer-kind questions
PREFIXES = ("r:", "t:", "k:")
#: of the planned rewrites, the share taken from held-out test groups (to measure on), the rest train
TEST_SHARE = 0.15


def messages(unit_text: str, question: str) -> list[dict[str, str]]:
    body = f"Answer: {' '.join(unit_text.split())}\nQuestion: {' '.join(question.split())}"
    return one_question_messages(SYSTEM, EXAMPLES, body)


def answered(rows: Iterable[dict[str, Any]]) -> dict[str, tuple[str, str, str]]:
    """group -> (split, question, its first positive unit as the reader reads it)."""
    out: dict[str, tuple[str, str, str]] = {}
    for r in rows:
        if r["kind"] == "pos" and r["group"].startswith(PREFIXES) and r["group"] not in out:
            out[r["group"]] = (r["split"], r["a"], r["b"])
    return out


def plan(groups: dict[str, tuple[str, str, str]], seed: int, limit: int) -> list[str]:
    """A seeded choice of ``limit`` groups: a ``TEST_SHARE`` of held-out test groups, the rest train."""
    out: list[str] = []
    for split, share in (("train", 1 - TEST_SHARE), ("test", TEST_SHARE)):
        ids = sorted(g for g, (s, _, _) in groups.items() if s == split)
        rng_for(seed, "rewrites", split).shuffle(ids)
        out += ids[: round(limit * share)]
    rng_for(seed, "rewrites", "order").shuffle(out)
    return out


def rewrite_problem(rewrite: str, question: str, unit_text: str) -> str | None:
    """Why a rewrite is unusable (None when it is fine): the question filters, plus it must be a
    new wording, borrow no more of the unit's words than the original did, and not give a number
    of the answer away."""
    trail, sep, text = unit_text.partition(": ")
    if not sep:
        trail, text = "", unit_text
    problem = question_problem(rewrite, text, [e for _, e in EXAMPLES], trail)
    if problem:
        return problem
    if _EXAMPLE_WORDS & set(C.words(rewrite)):
        return "example_copy"
    if C.norm(rewrite) == C.norm(question) or C.jaccard(rewrite, question) >= 0.7:
        return "same_wording"
    unit_words = C.content_words(unit_text)
    if len(C.content_words(rewrite) & unit_words) > len(C.content_words(question) & unit_words):
        return "more_copied"
    if set(C.numbers(rewrite)) - set(C.numbers(question)):
        return "names_number"
    return None


def stage_rewrites(
    out: Path, limit: int, model: str, threads: int, seed: int, budget: float, log: Logger
) -> None:
    """Reword the planned groups' questions, appending to ``rewrites.jsonl`` (resumable: groups
    already asked are skipped; a STOP file or the time budget stops it). Reads the assembled
    ``reader_train.jsonl`` and ``reader_test.jsonl``, so assemble runs first."""
    from training import llm

    groups: dict[str, tuple[str, str, str]] = {}
    for split in ("train", "test"):
        rows = list(read_jsonl(out / f"reader_{split}.jsonl"))
        for package in sorted({r["source"].split("/", 1)[0] for r in rows}):
            check_not_reserved(package)  # as in stage_assemble: stale data must not smuggle one in
        groups.update(answered(rows))
    path = out / "rewrites.jsonl"
    done = {r["group"] for r in read_jsonl(path)}
    todo = [g for g in plan(groups, seed, limit) if g not in done]
    log.info(f"rewrites: {len(todo)} questions to reword ({len(done)} done before); model {model}")
    if not todo:
        return

    def ask(writer: llm.Writer, g: str) -> dict[str, Any]:
        _, question, unit_text = groups[g]
        raw, timing = writer.ask(messages(unit_text, question), QUESTION_SCHEMA, 80)
        record = {"group": g, "question": question, "rewrite": parse_question(raw)}
        return {**record, "raw": raw, "model": model, **timing}

    llm.append_replies(path, todo, ask, (model, threads, seed), budget, log)


def rewrite_groups(
    groups: Sequence[dict[str, Any]], records: Iterable[dict[str, Any]], stats: Counter[str]
) -> Iterator[dict[str, Any]]:
    """A copy of each group whose question has a kept rewrite (group ``w:<group>``, qsource
    ``rewrite_<qsource>``): the same units and labels, asked in other words. A record whose
    question is not the group's (stale data) is skipped."""
    by_group = {r["group"]: r for r in records}
    for g in groups:
        rows = g["rows"]
        r = by_group.get(rows[0]["group"]) if rows else None
        if r is None:
            continue
        positive = next((row for row in rows if row["kind"] == "pos"), None)
        if positive is None or r["question"] != positive["a"]:
            stats["rewrites:stale"] += 1
            continue
        problem = rewrite_problem(r.get("rewrite") or "", r["question"], positive["b"])
        if problem:
            stats[f"rewrites:{problem}"] += 1
            continue
        stats["rewrites:kept"] += 1
        new_rows = [
            {**row, "a": r["rewrite"], "group": f"w:{row['group']}", "qsource": f"rewrite_{row['qsource']}"}
            for row in rows
        ]
        yield {**g, "rows": new_rows}
