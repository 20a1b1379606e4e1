"""Answer-kind questions for the reader (fourth round: ``build_data.py --stages kinds`` writes them,
``--kinds`` puts them into the assembled data).

The third round showed that the reader scores topic, not answers: of its LLM questions 1,230 of
1,607 begin with "what" and none with "who", so an on-topic passage that names no city, date or
person scored like the answer ("Which city hosted the Olympic games in 2004?" -> a passage on the
costs of the 2004 games, 0.97). Here the LLM gets a sentence with one value marked (a quantity, a
date, a version or a person) and asks for exactly that value, so the question wants an answer of a
kind; its negatives are on-topic units that hold no value of that kind at all, which cannot answer
it whatever else they share with it. Measured and not shipped: training/README.md, "The fourth
round".
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from training import claims as C
from training.common import Logger, check_not_reserved, read_jsonl
from training.llm import QUESTION_SCHEMA, one_question_messages, parse_question
from training.questions import informativeness, question_problem, repeated_texts
from training.reader_pairs import Corpus, _distinct, _group, reader_pairs
from training.units import Unit, prefix_of, rng_for

_MONTH = r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
_UNIT_WORDS = (
    r"%|percent|per cent|ms|milliseconds?|seconds?|secs?|minutes?|mins?|hours?|days?|weeks?|months?|years?|"
    r"bytes?|bits?|[KMGT]i?B|[KMGT]|kilobytes?|megabytes?|gigabytes?|characters?|chars?|lines?|times|"
    r"entries|connections|processes|threads|levels?|digits?|columns?|rows?|items?|files?|arguments?|"
    r"retries|attempts|requests|messages|pages?"
)
#: what each kind of value looks like; the first kind that matches a unit is its kind
PATTERNS: dict[str, re.Pattern[str]] = {
    "person": re.compile(
        r"\b(?:written|maintained|developed|created|designed|invented|contributed|founded|started|"
        r"originally written|authored) by ((?:Dr\.? )?[A-Z][a-z]+(?: [A-Z]\.)?(?: [A-Z][a-z'-]+){1,2})"
    ),
    # a year needs a month, a full ISO date or a word that makes it a time ("port 2000" is no date)
    "date": re.compile(
        rf"((?:{_MONTH}\.? (?:\d{{1,2}}, )?|(?<=\bin )|(?<=\bsince )|(?<=\buntil )|(?<=\bbefore )|"
        rf"(?<=\bafter )|(?<=\bfrom )|(?<=\byear ))(?:19[5-9]\d|20[0-3]\d)|(?:19|20)\d\d-\d\d-\d\d)"
        rf"(?![\w:/-]|\.\w)"
    ),
    "version": re.compile(
        r"\b(?:[Vv]ersions?|[Rr]eleases?|since|[Ss]ince|as of|[Aa]s of) v?(\d+\.\d+(?:\.\d+)*[a-z]?)\b"
    ),
    "quantity": re.compile(rf"(?<![\w.\-/])(\d[\d,]*(?:\.\d+)?\s?(?:{_UNIT_WORDS}))(?![\w-])"),
}
# a unit that holds any of these cannot answer a question of that kind: kind negatives must hold none
_ANY = {
    "person": re.compile(r"\b[A-Z][a-z]+(?: [A-Z]\.)? [A-Z][a-z'-]{2,}\b"),
    "date": re.compile(rf"\b(?:19\d\d|20\d\d|{_MONTH}\b)"),
    "version": re.compile(r"\d+\.\d+"),
    "quantity": re.compile(r"\d"),
}
KINDS = tuple(PATTERNS)
# how many of each kind the plan takes, as shares of its limit (quantities are by far the most common)
SHARES = {"person": 0.1, "date": 0.25, "version": 0.25, "quantity": 0.4}

SYSTEM = (
    "You write the questions that users of a software product type into the search box of its "
    "documentation. You get one sentence of the documentation in which one value is marked like "
    "[[this]]. Write one question that this sentence answers and whose answer is exactly the marked "
    "value: ask how many, how long, how big, which version, when or who, as the value requires. Ask it "
    "the way a user would: a complete question ending with '?', naming the option, command or feature "
    "it is about (the section title tells you which), in your own words. Never write the marked value "
    'in the question. Reply with JSON: {"question": ...}.'
)
EXAMPLES = (
    (
        "Section: Camera settings > Power saving\nThe auto_off setting turns the camera off after a "
        "period without use; the default is [[3 minutes]].",
        "How long does the camera stay idle before auto_off switches it off?",
    ),
    (
        "Section: Camera firmware > History\nFace detection came with firmware [[2.1]], which also "
        "added a silent shutter mode.",
        "Which firmware version added face detection to the camera?",
    ),
    (
        "Section: About the camera\nThe original viewfinder was designed by [[Anna Berg]] for the first "
        "model.",
        "Who designed the camera's original viewfinder?",
    ),
    (
        "Section: Camera firmware > Support\nUpdates for the first model ended in [[March 2019]].",
        "When did the first camera model stop getting firmware updates?",
    ),
)


def value_of(text: str) -> tuple[str, str] | None:
    """(kind, the value as written) for the first kind whose pattern matches, or None."""
    for kind, pattern in PATTERNS.items():
        m = pattern.search(text)
        if m:
            return kind, m.group(1)
    return None


def lacks(kind: str, text: str) -> bool:
    """True when ``text`` holds nothing that could be a value of ``kind``."""
    return _ANY[kind].search(text) is None


def mark(text: str, value: str) -> str:
    return text.replace(value, f"[[{value}]]", 1)


def messages(trail: str, text: str, value: str) -> list[dict[str, str]]:
    body = " ".join(mark(text, value).split())
    return one_question_messages(SYSTEM, EXAMPLES, f"Section: {trail or '(untitled)'}\n{body}")


# what a question asking for a value of each kind says (the LLM sometimes asks about something else)
ASKS = {
    "quantity": re.compile(
        r"\bhow (many|much|long|often|big|large|far|frequently|high|low)\b|\b(maximum|minimum|max|min|"
        r"default|size|limit|length|number|amount|interval|timeout|duration|frequency|width|capacity)\b",
        re.IGNORECASE,
    ),
    "date": re.compile(r"\bwhen\b|\b(what|which) (year|date|day|month)\b", re.IGNORECASE),
    "version": re.compile(r"\b(version|release)s?\b", re.IGNORECASE),
    "person": re.compile(
        r"^(who|whom|whose)\b|\b(which|what) (company|person|organi[sz]ation|developer|author|team|group)\b",
        re.IGNORECASE,
    ),
}


def kind_problem(question: str, kind: str, value: str) -> str | None:
    """Why a question is no answer-kind question for ``value`` (None when it is one): it gives the
    value away, or it does not ask for a value of its kind."""
    if C.norm(value) in C.norm(question) or set(C.numbers(value)) & set(C.numbers(question)):
        return "names_value"
    if not ASKS[kind].search(question):
        return "asks_another_kind"
    return None


def plan(units: Sequence[Unit], seed: int, limit: int) -> list[tuple[Unit, str, str]]:
    """Up to ``limit`` (unit, kind, value), spread over manuals and kinds by SHARES, seeded."""
    repeated = repeated_texts([u for u in units if u.kind != "window"])
    by_kind: dict[str, list[tuple[Unit, str, str]]] = {k: [] for k in KINDS}
    for u in units:
        if u.kind == "window" or informativeness(u.text, u.kind) < 0 or C.norm(u.text) in repeated:
            continue
        found = value_of(u.text)
        if found:
            by_kind[found[0]].append((u, *found))
    out: list[tuple[Unit, str, str]] = []
    for kind, items in by_kind.items():
        rng = rng_for(seed, "kinds", kind)
        rng.shuffle(items)
        # round-robin over manuals, so that no manual fills a kind on its own
        per_manual: dict[str, list[tuple[Unit, str, str]]] = {}
        for item in items:
            per_manual.setdefault(item[0].manual, []).append(item)
        queues = [per_manual[m] for m in sorted(per_manual)]
        take = round(limit * SHARES[kind])
        picked: list[tuple[Unit, str, str]] = []
        while len(picked) < take and any(queues):
            for q in queues:
                if q and len(picked) < take:
                    picked.append(q.pop())
        out += picked
    rng_for(seed, "kinds", "order").shuffle(out)
    return out


def stage_kinds(
    out: Path,
    units: Sequence[Unit],
    limit: int,
    model: str,
    threads: int,
    seed: int,
    budget: float,
    log: Logger,
) -> None:
    """Ask the LLM one answer-kind question per planned unit, appending to ``kinds.jsonl``
    (resumable: units already asked are skipped; a STOP file or the time budget stops it)."""
    from training import llm

    for package in sorted({u.manual for u in units}):
        check_not_reserved(package)  # as in stage_assemble: a stale units.jsonl must not smuggle one in
    path = out / "kinds.jsonl"
    done = {r["unit"] for r in read_jsonl(path)}
    todo = [p for p in plan(units, seed, limit) if p[0].id not in done]
    log.info(f"kinds: {len(todo)} units to ask ({len(done)} done before); model {model}")
    if not todo:
        return

    def ask(writer: llm.Writer, item: tuple[Unit, str, str]) -> dict[str, Any]:
        u, kind, value = item
        raw, timing = writer.ask(messages(prefix_of(u.title, u.trail), u.text, value), QUESTION_SCHEMA, 80)
        record = {"unit": u.id, "kind": kind, "value": value, "question": parse_question(raw)}
        return {**record, "raw": raw, "model": model, **timing}

    llm.append_replies(path, todo, ask, (model, threads, seed), budget, log)


def kind_negatives(
    q: str, unit: Unit, kind: str, positives: Sequence[Unit], corpus: Corpus, rng: random.Random, k: int = 2
) -> list[tuple[Unit, int, str]]:
    """Up to ``k`` on-topic units (the topical index's, else the section's) that hold no value of
    ``kind``: whatever they share with the question, they cannot answer it."""
    pool: list[Unit] = []
    if corpus.topical_index is not None:
        pool += corpus.topical_index.negatives(q, unit, positives, rng, 12)
    section = list(corpus.by_section.get((unit.doc, unit.section), []))
    rng.shuffle(section)
    pool += section
    out: list[tuple[Unit, int, str]] = []
    seen: set[str] = set()
    for u in pool:
        if u.id in seen or u.id == unit.id or not lacks(kind, u.text) or not _distinct(u, positives):
            continue
        seen.add(u.id)
        out.append((u, 0, f"kind_{kind}"))
        if len(out) >= k:
            break
    return out


def kind_groups(
    records: Iterable[dict[str, Any]], corpus: Corpus, seed: int, stats: Counter[str]
) -> Iterator[dict[str, Any]]:
    """A reader group per kept answer-kind question: the usual pairs of ``reader_pairs`` plus its
    kind negatives (kind ``kind_<kind>``); a question without a kind negative is dropped."""
    for r in {r["unit"]: r for r in records}.values():
        unit = corpus.by_id.get(r["unit"])
        if unit is None:
            continue
        q = r.get("question") or ""
        problem = question_problem(q, unit.text, [q for _, q in EXAMPLES], prefix_of(unit.title, unit.trail))
        problem = problem or kind_problem(q, r["kind"], r["value"])
        if problem:
            stats[f"kinds:{problem}"] += 1
            continue
        rng = rng_for(seed, "kind-pairs", unit.id)
        pairs, _ = reader_pairs(q, unit, corpus, rng)
        positives = [u for u, label, _ in pairs if label == 1]
        extra = kind_negatives(q, unit, r["kind"], positives, corpus, rng)
        if not extra:
            stats["kinds:no_kind_negative"] += 1
            continue
        stats[f"kinds:kept_{r['kind']}"] += 1
        # kind negatives before the others: a sibling drawn twice keeps the kind label
        ordered = [p for p in pairs if p[1] == 1] + extra + [p for p in pairs if p[1] == 0]
        yield _group(f"k:{unit.id}", q, ordered, corpus.split[unit.doc], unit, "reader", f"kind_{r['kind']}")
