"""Quotable units of a passage: sentences, table rows, list items, code blocks, with exact spans."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from citeline.answer.prompt import near_refusal
from citeline.text.sentences import sentence_spans
from citeline.types import Chunk

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A separator row (| --- | :-: |): only pipes, colons, dashes and spaces. Written without nested
# repetition: "^\s*\|?[\s:|-]+\|?\s*$" took cubic time on a line of spaces ending otherwise.
_TABLE_SEP = re.compile(r"^[\s:|-]+$")
_MARKUP = re.compile(r"(\*\*|__|^>\s?|^#+\s+)", re.MULTILINE)
# A Markdown link or image, "[text](target)" or "![alt](target)": its text is what a reader sees
_LINK = re.compile(r"!?\[([^\[\]\n]+)\]\([^()\s]*\)")
# A paragraph that opens with an option's or a parameter's name and a colon: "-i: Incremental
# mode.", "-i queue_id: Schedule ...", "maximal_backoff_time (4000s): The maximal time ..."
# Possessive, and not starting inside a word: linear time on "a_a_a_..." (tests/reliability).
_LABEL = re.compile(
    r"(?<![\w.-])(?:--?[^\W_][\w-]*+(?: [\w<>\[\].=-]++)?|[a-z][^\W_]*+(?:[._][^\W_]++)++)(?: \([^)]*+\))?: "
)

# "See IGNORE for a silent alternative.", "(See also postconf(5).)": a short pointer to another
# place says where an answer is, never what it is
_POINTER = re.compile(r"(?<!\s)\s*+\(?see\s", re.IGNORECASE)
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
    """Answer text for a span: Markdown emphasis, bullets and link targets dropped ("[v1.13.0](https://...)"
    reads "v1.13.0"), whitespace collapsed. The span, which the citation opens, stays exact."""
    text = _BULLET.sub("", text)
    text = _MARKUP.sub("", text)
    text = _LINK.sub(r"\1", text)
    return " ".join(text.split())


def passage_units(text: str, offset: int = 0, table_header: str = "") -> list[Unit]:
    """Split a passage into units; spans are exact, trimmed, and shifted by ``offset``
    (the passage's start in its document) so they index the document text. ``table_header``:
    the header row of the table the passage opens inside (a later piece of a split table),
    so that its rows read "Code: 40P01; Condition Name: deadlock_detected"."""
    units = _units(text, _cells(table_header) if table_header.strip().startswith("|") else None)
    return [Unit(u.start + offset, u.end + offset, u.text, u.kind) for u in units]


def chunk_units(chunk: Chunk) -> list[Unit]:
    """The units of a chunk; a piece of a split table reads its rows under the header row that
    its indexed text repeats (chunking/chunker.py)."""
    return passage_units(chunk.text, chunk.start, table_header(chunk))


def table_header(chunk: Chunk) -> str:
    """The header row a piece of a split table repeats in its indexed text ("" for any other chunk)."""
    if not (chunk.text.lstrip().startswith("|") and chunk.index_text.endswith(chunk.text)):
        return ""
    before = chunk.index_text[: len(chunk.index_text) - len(chunk.text)].rstrip("\n").split("\n")
    rows = [line for line in before if line.lstrip().startswith("|") and not _TABLE_SEP.match(line.strip())]
    return rows[-1] if rows else ""


def _units(doc_text: str, table_header: list[str] | None = None) -> list[Unit]:
    start, end = 0, len(doc_text)
    units: list[Unit] = []
    pos = start
    header: list[str] | None = table_header
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
            text = _row_text(header, cells)
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
    return with_introduced([u for u in _merge_sentences(units, doc_text) if u.text], doc_text)


def _row_text(header: list[str], cells: list[str]) -> str:
    """A table row in words: "header: cell; ..." under a header, else its cells (a first cell
    that ends in a colon labels the rest)."""
    if header:
        return "; ".join(f"{h}: {c}" for h, c in zip(header, cells, strict=False) if c)
    filled = [c for c in cells if c]
    label_first = len(filled) > 1 and filled[0].endswith(":")
    return f"{filled[0]} {'; '.join(filled[1:])}" if label_first else "; ".join(filled)


def _merge_sentences(units: list[Unit], doc_text: str) -> list[Unit]:
    """Sentences of one paragraph split across lines: merge pieces that are not sentence ends, and
    a piece that opens as the rest of a sentence ("and is mirrored daily ...": the splitter
    ended the sentence inside a URL, a path or an abbreviation)."""
    merged: list[Unit] = []
    for unit in units:
        prev = merged[-1] if merged else None
        if (
            prev is not None
            and prev.kind == unit.kind == "sentence"
            and (not prev.text.endswith((".", "!", "?", ":", ";")) or is_fragment(unit.text))
            and "\n\n" not in doc_text[prev.end : unit.start]
        ):
            merged[-1] = Unit(prev.start, unit.end, readable(doc_text[prev.start : unit.end]), "sentence")
        else:
            merged.append(unit)
    return merged


# The words a sentence's remainder opens with: a unit that starts with one of them in lower case
# is the end of the sentence before it, not a sentence
_CONTINUATION = frozenset(
    "and or but nor which that who whom whose where while whereas than then so because since "
    "although though unless until if when whether to of in on at by for from with without into "
    "onto as is are was were be been being has have had does do did can could will would shall "
    "should may might must not also its their it's e.g. i.e. etc".split()
)
_FIRST_WORD = re.compile(r"^[(\[\"'“‘]*([a-z][a-z.']*)\b")


def is_fragment(text: str) -> bool:
    """A unit that opens in the middle of a sentence ("and is mirrored daily to ...", "or
    later."): its first word is a lower-case connective. A sentence may open with a lower-case
    name ("postconf -n shows ...", "smtpd_timeout is ..."): those are not connectives."""
    m = _FIRST_WORD.match(text)
    return m is not None and m.group(1) in _CONTINUATION


# A unit that introduces what follows it: "... run:", "... can be removed by", "the command is",
# "type", "with the following options"
_LEAD_IN = re.compile(
    r"(?::|\b(?:by|is|are|run|type|enter|execute|use|using|command|commands|following|follows|with|"
    r"as|e\.g\.|example|like this|this|these))\s*$",
    re.IGNORECASE,
)
INTRODUCED_UNITS = 10  # at most this many lines or items go with their lead-in ...
SHORT_LIST = 4  # ... and a list only when it has at most this many items
INTRODUCED_CHARS = 800


def _introduced(unit: Unit) -> bool:
    """Material a lead-in introduces: code, a list item, or a line that is not a sentence (a
    command written on its own line has no full stop)."""
    if unit.kind in ("code", "item"):
        return True
    if unit.kind == "row":
        return False  # a table's rows stay units of their own, each read under its header
    if len(unit.text.split()) > 4 and _LEAD_IN.search(unit.text):
        return False  # the next lead-in ("The meaning of the classes is as follows:") starts anew
    return unit.kind == "sentence" and not unit.text.rstrip().endswith((".", "!", "?", ";"))


def with_introduced(units: list[Unit], doc_text: str) -> list[Unit]:
    """A lead-in and the code block, command, list or table it introduces become one unit:
    "From a command prompt they can be removed by" says nothing without the "R CMD REMOVE"
    line under it, "... with the following options:" nothing without the options."""
    out: list[Unit] = []
    i = 0
    while i < len(units):
        unit = units[i]
        j = i + 1
        if unit.kind in ("sentence", "item") and _LEAD_IN.search(unit.text):
            # what follows in the next block (one blank line at most), and the rest of it
            while (
                j < len(units)
                and j - i <= INTRODUCED_UNITS
                and _introduced(units[j])
                and units[j].end - unit.start <= INTRODUCED_CHARS
                and doc_text.count("\n\n", units[j - 1].end, units[j].start) <= 1
                and (j == i + 1 or units[j].kind == units[i + 1].kind)
            ):
                j += 1
        # a long list stays items of their own ("--retries=N (default: 3)" answers alone, read
        # under its lead-in: binding_contexts), as does a list cut short by the limits above
        listed = j > i + 1 and units[i + 1].kind == "item"
        cut = (
            j < len(units) and _introduced(units[j]) and units[j].kind == units[i + 1].kind
            if j > i + 1
            else False
        )
        if j > i + 1 and not (listed and (j - i - 1 > SHORT_LIST or cut)):
            body = [u.text for u in units[i + 1 : j]]
            out.append(Unit(unit.start, units[j - 1].end, "\n".join([unit.text, *body]), "lead"))
        else:
            out.append(unit)
            j = i + 1
        i = j
    return out


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
            # an option's line standing alone above its description ("--no-new-installs", then
            # "Prevent safe-upgrade from installing any new packages."): the description's
            # sentences are quoted after it, as after a label
            if label is None and prev is not None and option_line(prev, units, i - 1, text, offset):
                label = prev
        antecedent = prev if same_paragraph and _ANAPHORA.match(unit.text) else None
        if prev is not None and is_fragment(unit.text):
            # "where <x> and <y> are the size ..." explains the syntax line above it, even across
            # a blank line: it is quoted after that line, so no answer opens with it
            antecedent = prev
        out.append(
            tuple(dict.fromkeys(u for u in (term, label, antecedent) if u is not None and u is not unit))
        )
    return out


# An option or a setting's name on a line of its own: "--no-new-installs", "-o name=value",
# "Option: Aptitude::Log", "MaxSessions"
_OPTION_LINE = re.compile(
    r"^(?:--?[A-Za-z][\w-]*|[A-Za-z][\w.:-]*(?:[_.:-]|[a-z][A-Z])[\w.:-]*|[A-Z][a-z]+[A-Z]\w*)\b"
)


def option_line(unit: Unit, units: Sequence[Unit], i: int, text: str, offset: int) -> bool:
    """``unit`` (units[i]) is a paragraph of its own that names an option or setting."""
    if len(unit.text.split()) > TERM_LINE_WORDS or unit.text.rstrip().endswith((".", "!", "?")):
        return False
    alone_before = i == 0 or "\n\n" in text[units[i - 1].end - offset : unit.start - offset]
    return alone_before and _OPTION_LINE.match(unit.text) is not None


def points_back(text: str) -> bool:
    """A unit that opens by pointing back ("This proportion is 500.", "Otherwise, ...")."""
    return _ANAPHORA.match(text) is not None


def never_an_answer(text: str) -> bool:
    """Units no answer quotes, however well they match the question: the refusal sentence or a
    paraphrase of it (a document that says it must not turn into an unrefused refusal), a question
    (an FAQ's question is not its own answer), a short pointer elsewhere ("See IGNORE for a
    silent alternative.") and a lead-in without what it introduces."""
    if near_refusal(text) or text.rstrip().endswith("?"):
        return True
    if "\n" not in text and not text.rstrip().endswith(":") and _LEAD_IN.search(text):
        # a lead-in that stops mid-sentence ("... can be removed by") without what it introduces;
        # one that ends with a colon is a sentence, and often names the answer itself
        return True
    if _CAPTION.fullmatch(text.strip()):
        return True
    return _POINTER.match(text) is not None and len(text.split()) <= POINTER_WORDS


# A caption's label alone ("Figure 2.7.", "Table 3"): a number that answers nothing
_CAPTION = re.compile(
    r"(?:figure|fig\.|table|example|listing|chapter|section|step)\s+[\d.]+[a-z]?\.?", re.IGNORECASE
)


# A short line that names what the paragraph after it describes: an option line ("-n",
# "-o name=value", "--dry-run, -n"), a term ("max_connections (integer)"), a heading-like label
TERM_LINE_WORDS = 8


def binding_contexts(
    units: Sequence[Unit], text: str, offset: int, trail: Sequence[str], title: str = ""
) -> list[str]:
    """What each unit's value is about, beside the unit itself: its headings and title, the
    other sentences of its paragraph (an entry's description names the setting once, then states
    its default without the name), the passage's definition term, and the short term line just
    before its paragraph (a man page's "-n" above the option's description). A definition's term
    ("virtual_minimum_uid (default: 100)") is about what its whole entry describes. Only for
    deciding what a unit is about: an answer quotes the unit, never this context."""
    head = " > ".join([title, *trail]) if title else " > ".join(trail)
    # a man page's option with an argument is a heading ("-c host_certificate_file"), the options
    # after it without one are not: an entry opening with its own label ("-d: Debug mode.") is
    # not about that heading's option
    own_head = (
        " > ".join([t for t in (title, *trail[:-1]) if t])
        if trail and _OPTION_HEADING.match(trail[-1])
        else head
    )
    term = definition_term(units, trail)
    paragraphs = _paragraphs(units, text, offset)
    out: list[str] = []
    for k, (paragraph, label, before) in enumerate(paragraphs):
        # a line of its own ("Default: /var/lock/aptitude") is about the entry it opens too: the
        # description that follows names the setting ("A file that will be fcntl-locked ...")
        after = (
            [u.text for u in paragraphs[k + 1][0] if u.kind in ("sentence", "lead")]
            if len(paragraph) == 1 and _short(paragraph[0]) and k + 1 < len(paragraphs)
            else []
        )
        labelled = label is not None
        for unit in paragraph:
            if unit is term:
                parts = [head, *(u.text for u in units if u is not unit)]
            else:
                # a list item or table row is about what introduces its list, not its siblings
                siblings = [u.text for u in paragraph if u is not unit and u.kind in ("sentence", "lead")]
                parts = [own_head if labelled else head, *(u.text for u in (term, before) if u is not None)]
                parts += [*siblings, *after]
            out.append("\n".join(p for p in parts if p))
    return out


def _paragraphs(
    units: Sequence[Unit], text: str, offset: int
) -> list[tuple[list[Unit], re.Match[str] | None, Unit | None]]:
    """``units`` grouped by the blank lines of ``text`` (which starts at ``offset``), each
    paragraph with the label it opens with ("-d: Debug mode.") and the short term line of its own
    just above it ("-e", "--no-new-installs"). A labelled paragraph is its own entry: the short
    line above it is the previous entry's ("-c host_certificate_file"), so it has none."""
    groups: list[list[Unit]] = []
    for i, unit in enumerate(units):
        prev = units[i - 1] if i else None
        if prev is None or "\n\n" in text[prev.end - offset : unit.start - offset]:
            groups.append([])
        groups[-1].append(unit)
    out: list[tuple[list[Unit], re.Match[str] | None, Unit | None]] = []
    above: Unit | None = None
    for paragraph in groups:
        first = paragraph[0]
        label = _LABEL.match(first.text) if first.kind == "sentence" else None
        out.append((paragraph, label, None if label is not None else above))
        above = paragraph[0] if len(paragraph) == 1 and _short(paragraph[0]) else None
    return out


def entry_terms(units: Sequence[Unit], text: str, offset: int, trail: Sequence[str]) -> list[str]:
    """The term of the entry each unit belongs to, as written: the label its paragraph opens with
    ("-d: Debug mode."), the short term line just above its paragraph ("--no-new-installs"), or
    the last heading of its trail ("AddKeysToAgent", "-t life"); "" where there is none. A value
    stated in CanonicalizeFallbackLocal's entry is that setting's, even where its description
    names CanonicalDomains in passing (answer/bearing.py)."""
    out: list[str] = []
    for paragraph, label, before in _paragraphs(units, text, offset):
        if label is not None:
            term = label.group(0).rstrip(": ")
        elif before is not None:
            term = before.text
        else:
            term = trail[-1] if trail else ""
        out += [term] * len(paragraph)
    return out


_OPTION_HEADING = re.compile(r"^--?[A-Za-z][\w-]*(?:[ =]\S+)?$")


def _short(unit: Unit) -> bool:
    return len(unit.text.split()) <= TERM_LINE_WORDS
