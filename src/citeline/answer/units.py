"""Quotable units of a passage: sentences, table rows, list items, code blocks, with exact spans."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citeline.answer.prompt import near_refusal
from citeline.chunking import sentence_spans

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A separator row (| --- | :-: |): only pipes, colons, dashes and spaces. Written without nested
# repetition: "^\s*\|?[\s:|-]+\|?\s*$" took cubic time on a line of spaces ending otherwise.
_TABLE_SEP = re.compile(r"^[\s:|-]+$")
_MARKUP = re.compile(r"(\*\*|__|^>\s?|^#+\s+)", re.MULTILINE)
# A paragraph that opens with an option's or a parameter's name and a colon: "-i: Incremental
# mode.", "-i queue_id: Schedule ...", "maximal_backoff_time (4000s): The maximal time ..."
# Possessive, and not starting inside a word: linear time on "a_a_a_..." (tests/reliability).
_LABEL = re.compile(
    r"(?<![\w.-])(?:--?[^\W_][\w-]*+(?: [\w<>\[\].=-]++)?|[a-z][^\W_]*+(?:[._][^\W_]++)++)(?: \([^)]*+\))?: "
)

# "See IGNORE for a silent alternative.", "(See also postconf(5).)": a short pointer to another
# place says where an answer is, never what it is
_POINTER = re.compile(r"\s*\(?see\s", re.IGNORECASE)
POINTER_WORDS = 12
# A sentence that opens by pointing back ("This command can be used to rebuild ...", "Otherwise,
# the exit status is ...") says what it is about only with the sentence before it
_ANAPHORA = re.compile(
    r"(?:this|these|that|those|such|it|its|they|their|otherwise|instead|therefore|thus|hence|"
    r"likewise|similarly)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Unit:
    """``start``/``end`` are offsets into the document text; ``text`` is readable answer text."""

    start: int
    end: int
    text: str
    kind: str


_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def _cells(row: str) -> list[str]:
    """A | a | b | row's cells; an escaped \\| stays in its cell as |."""
    inner = row.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(inner)]


def readable(text: str) -> str:
    """Answer text for a span: Markdown emphasis and bullets dropped, whitespace collapsed."""
    text = _BULLET.sub("", text)
    text = _MARKUP.sub("", text)
    return " ".join(text.split())


def passage_units(text: str, offset: int = 0) -> list[Unit]:
    """Split a passage into units; spans are exact, trimmed, and shifted by ``offset``
    (the passage's start in its document) so they index the document text."""
    units = _units(text)
    return [Unit(u.start + offset, u.end + offset, u.text, u.kind) for u in units]


def _units(doc_text: str) -> list[Unit]:
    start, end = 0, len(doc_text)
    units: list[Unit] = []
    pos = start
    header: list[str] | None = None
    in_code = False
    code_start = 0
    lines = doc_text[start:end].split("\n")
    for i, line in enumerate(lines):
        a, b = pos, pos + len(line)
        pos = b + 1
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            if in_code:
                units.append(Unit(code_start, b, doc_text[code_start:b], "code"))
            else:
                code_start = a + (len(line) - len(line.lstrip()))
            in_code = not in_code
            continue
        if in_code or not stripped:
            if not stripped:
                header = None
            continue
        lead = len(line) - len(line.lstrip())
        a, b = a + lead, a + len(line.rstrip())
        if stripped.startswith("|"):
            if _TABLE_SEP.match(stripped):
                continue
            cells = _cells(stripped)
            if header is None:
                following = lines[i + 1].strip() if i + 1 < len(lines) else ""
                if _TABLE_SEP.match(following) and following.startswith("|"):
                    header = cells  # a header row is followed by its | --- | rule
                    continue
                header = []  # a table without a header: each row reads on its own
            if header:
                text = "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=False) if c)
            else:
                filled = [c for c in cells if c]
                label_first = len(filled) > 1 and filled[0].endswith(":")
                text = f"{filled[0]} {'; '.join(filled[1:])}" if label_first else "; ".join(filled)
            if text:
                units.append(Unit(a, b, text.rstrip(".") + ".", "row"))
            continue
        header = None
        if _BULLET.match(line):
            units.append(Unit(a, b, readable(stripped), "item"))
            continue
        for sa, sb in sentence_spans(doc_text, a, b):
            units.append(Unit(sa, sb, readable(doc_text[sa:sb]), "sentence"))
    if in_code:
        units.append(Unit(code_start, end, doc_text[code_start:end], "code"))
    # Sentences of one paragraph split across lines: merge pieces that are not sentence ends.
    merged: list[Unit] = []
    for unit in units:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and prev.kind == unit.kind == "sentence"
            and not prev.text.endswith((".", "!", "?", ":", ";"))
            and "\n\n" not in doc_text[prev.end : unit.start]
        ):
            merged[-1] = Unit(prev.start, unit.end, readable(doc_text[prev.start : unit.end]), "sentence")
        else:
            merged.append(unit)
    return [u for u in merged if u.text]


def heading_context(trail: Sequence[str], title: str = "") -> str:
    """What the trained models read before a unit: its last two headings ("Sync Options >
    Retries"), led by the document's title when fewer than two headings are left and the title is
    not among them ("postconf(1) > Description"). A question names the program or page ("which
    postconf option shows master.cf?"): without the title, a one-heading unit did not name it and
    the reader scored the right unit 0.02 instead of 0.96 (golden dev answers: 0.612 -> 0.673)."""
    parts = [" ".join(t.split()) for t in trail if t.strip()][-2:]
    title = " ".join(title.split())
    if title and len(parts) < 2 and not any(title in p or p in title for p in parts):
        parts = [title, *parts]
    return " > ".join(parts)


def definition_term(units: Sequence[Unit], trail: Sequence[str]) -> Unit | None:
    """The passage's first unit when it is the term its heading trail ends with: a definition
    list's entry ("smtpd_recipient_limit (default: 1000)"), whose sentences describe the term
    without naming it (or the value it defaults to)."""
    if units and trail and units[0].text == " ".join(trail[-1].split()):
        return units[0]
    return None


def leads(units: Sequence[Unit], text: str, offset: int, trail: Sequence[str]) -> list[tuple[Unit, ...]]:
    """What each unit is quoted after, in order: its passage's definition term
    (:func:`definition_term`); the first sentence of its paragraph when that opens with an
    option's or a parameter's name and a colon ("-i: Incremental mode." before "Read entries from
    standard input and do not truncate an existing database."): the sentences after it describe
    the option without naming it; and the sentence before it in its paragraph when it opens by
    pointing back ("The result status is 75 (EX_TEMPFAIL) when ..." before "Otherwise, the exit
    status is the exit status from the command."). ``text`` is the passage's text, which starts
    at ``offset``."""
    term = definition_term(units, trail)
    out: list[tuple[Unit, ...]] = []
    label: Unit | None = None
    for i, unit in enumerate(units):
        prev = units[i - 1] if i else None
        same_paragraph = (
            prev is not None
            and prev.kind == unit.kind == "sentence"
            and "\n\n" not in text[prev.end - offset : unit.start - offset]
        )
        if not same_paragraph:
            label = unit if unit.kind == "sentence" and _LABEL.match(unit.text) else None
        antecedent = prev if same_paragraph and _ANAPHORA.match(unit.text) else None
        out.append(
            tuple(dict.fromkeys(u for u in (term, label, antecedent) if u is not None and u is not unit))
        )
    return out


def never_an_answer(text: str) -> bool:
    """Units no answer quotes, however well they match the question: the refusal sentence or a
    paraphrase of it (a document that says it must not turn into an unrefused refusal), a question
    (an FAQ's question is not its own answer) and a short pointer elsewhere ("See IGNORE for a
    silent alternative.")."""
    if near_refusal(text) or text.rstrip().endswith("?"):
        return True
    return _POINTER.match(text) is not None and len(text.split()) <= POINTER_WORDS
