"""Citation markers in generated text: parsing, sentence attachment, and a streaming filter.

A marker is a bracketed list of 1-3 digit passage numbers: ``[1]``, ``[1, 3]``, ``[1,2]``,
``[2-4]``, ``[2–4]``, full-width ``［1］`` / ``【1】``; adjacent markers (``[1][2]``) are
separate markers. ``[2023]`` (four digits) and ``[note]`` are plain text.

Everything here is pure and deterministic. :func:`filter_citations` (whole text) and
:class:`StreamingCitationFilter` (chunks) produce the same output for any split of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from citeline.text.sentences import blingfire
from citeline.types import DraftSentence

_OPEN = "[\\[［【]"
_CLOSE = "[\\]］】]"
_NUM = "[0-9０-９]{1,3}"
_DASH = "[-–—－~]"
_WS = "[ \\t\u00a0\u3000]"
_ITEM = f"{_NUM}(?:{_WS}{{0,3}}{_DASH}{_WS}{{0,3}}{_NUM})?"
_SEP = f"(?:{_WS}{{0,3}}[,，;；、]{_WS}{{0,3}}|{_WS}{{1,3}})"
_BODY = f"{_OPEN}{_WS}{{0,3}}({_ITEM}(?:{_SEP}{_ITEM}){{0,15}}){_WS}{{0,3}}{_CLOSE}"

#: one marker, group 1 is its inside
MARKER_RE = re.compile(_BODY)
#: one marker with the horizontal whitespace before it (group 1: that whitespace, group 2: inside)
_LEAD_MARKER_RE = re.compile(f"({_WS}{{0,8}}){_BODY}")
_ITEM_RE = re.compile(f"({_NUM})(?:{_WS}*{_DASH}{_WS}*({_NUM}))?")
#: the longest text that can still be the unfinished start of a (whitespace +) marker
_MAX_PENDING = 8 + 1 + 3 + 16 * (3 + 3 + 1 + 3 + 3 + 3 + 3) + 3 + 1
#: characters a (whitespace +) marker can start with
_START_CHARS = frozenset(" \t\u00a0\u3000[［【")
#: a range wider than this keeps only its two ends ([1-500] is not 500 citations)
_MAX_RANGE = 50


class CitationMarker(NamedTuple):
    """A marker found in text: ``text[span[0]:span[1]]`` is the marker, ``numbers`` what it cites."""

    span: tuple[int, int]
    numbers: tuple[int, ...]


def _numbers(inside: str) -> tuple[int, ...]:
    out: list[int] = []
    for m in _ITEM_RE.finditer(inside):
        lo = int(m.group(1))
        if m.group(2) is None:
            values: Iterable[int] = (lo,)
        else:
            hi = int(m.group(2))
            lo, hi = min(lo, hi), max(lo, hi)
            values = range(lo, hi + 1) if hi - lo <= _MAX_RANGE else (lo, hi)
        for v in values:
            if v not in out:
                out.append(v)
    return tuple(out)


def parse_citations(text: str) -> list[CitationMarker]:
    """Every citation marker in ``text``, in order, with the passage numbers it names."""
    return [CitationMarker(m.span(), _numbers(m.group(1))) for m in MARKER_RE.finditer(text)]


def _split_valid(numbers: Iterable[int], n_passages: int) -> tuple[list[int], list[int]]:
    valid: list[int] = []
    invalid: list[int] = []
    for x in numbers:
        bucket = valid if 1 <= x <= n_passages else invalid
        if x not in bucket:
            bucket.append(x)
    return valid, invalid


def format_marker(numbers: Iterable[int]) -> str:
    """The canonical marker text, e.g. ``[1, 3]``; empty for no numbers."""
    nums = list(numbers)
    return f"[{', '.join(str(x) for x in nums)}]" if nums else ""


def strip_citations(text: str) -> str:
    """``text`` without any markers (and the spaces in front of them)."""
    return _LEAD_MARKER_RE.sub("", text)


def escape_markers(text: str) -> str:
    """Document text is data: a marker written inside a document (``see [7]``) becomes ``⟦7⟧``,
    which no parser here reads as a citation, in what a generator sees and in answer text."""
    return MARKER_RE.sub(lambda m: f"⟦{m.group(1)}⟧", text)


# --------------------------------------------------------------------------- sentences


def unescape_markers(text: str) -> str:
    """The document's own spelling of escaped markers (``⟦7⟧`` -> ``[7]``), for comparing a sentence
    with the passage it quotes; never for text that will be parsed for citations."""
    return re.sub(r"⟦([^⟦⟧]*)⟧", r"[\1]", text)


def _sentence_spans(line: str) -> list[tuple[int, int]]:
    if not line.strip():
        return []
    _, offsets = blingfire.text_to_sentences_and_offsets(line)
    spans: list[tuple[int, int]] = []
    for start, end in offsets:
        # blingfire offsets are code points; trim the spaces it may include
        piece = line[start:end]
        if not piece.strip():
            continue
        lead = len(piece) - len(piece.lstrip())
        trail = len(piece) - len(piece.rstrip())
        spans.append((start + lead, end - trail))
    return spans


def split_cited_sentences(text: str, n_passages: int) -> tuple[list[DraftSentence], list[int]]:
    """Split a free-text answer into sentences and attach each marker to its sentence.

    A marker belongs to the sentence it is inside of or that it follows, so "claim [1]." and
    "claim. [1]" both cite [1] for "claim."; a marker that opens a line cites the line's first
    sentence, or the previous sentence when the line has nothing else. Markers are removed from
    the sentence text. Numbers outside 1..n_passages are dropped and returned as ``invented``
    (first-seen order, no repeats).
    """
    sentences: list[tuple[str, list[int]]] = []
    invented: list[int] = []
    for line in text.splitlines():
        # remove markers (with the spaces before them), remembering where each one was
        stripped_parts: list[str] = []
        positions: list[tuple[int, tuple[int, ...]]] = []
        last = 0
        length = 0
        for m in _LEAD_MARKER_RE.finditer(line):
            stripped_parts.append(line[last : m.start()])
            length += m.start() - last
            positions.append((length, _numbers(m.group(2))))
            last = m.end()
        stripped_parts.append(line[last:])
        stripped = "".join(stripped_parts)
        spans = _sentence_spans(stripped)
        first_new = len(sentences)
        sentences.extend((stripped[a:b], []) for a, b in spans)
        for pos, numbers in positions:
            valid, invalid = _split_valid(numbers, n_passages)
            invented.extend(x for x in invalid if x not in invented)
            if spans:
                # the last sentence that starts before the marker, else the line's first
                idx = 0
                for j, (a, _b) in enumerate(spans):
                    if a < pos:
                        idx = j
                target = first_new + idx
            elif sentences:
                target = len(sentences) - 1
            else:
                continue
            cites = sentences[target][1]
            cites.extend(x for x in valid if x not in cites)
    return [DraftSentence(text=s, citations=tuple(c)) for s, c in sentences], invented


# --------------------------------------------------------------------------- filtering


def _replacement(match: re.Match[str], n_passages: int, invented: list[int] | None) -> str:
    valid, invalid = _split_valid(_numbers(match.group(2)), n_passages)
    if invented is not None:
        invented.extend(x for x in invalid if x not in invented)
    if not valid:
        return ""  # the marker and the spaces before it go
    return match.group(1) + format_marker(valid)


def filter_citations(text: str, n_passages: int, invented: list[int] | None = None) -> str:
    """``text`` with every marker rewritten to its valid numbers (``[1, 3]``) or removed.

    Invalid numbers (outside 1..n_passages) are appended to ``invented`` when it is given.
    """
    return _LEAD_MARKER_RE.sub(lambda m: _replacement(m, n_passages, invented), text)


def _could_become_marker(tail: str) -> bool:
    """True when ``tail`` is the unfinished start of a (whitespace +) marker.

    The marker grammar is bounded, so some short completion always exists for a real prefix:
    one of "]", "1]" or "[1]" finishes every unfinished marker the regex could still match.
    """
    return any(_LEAD_MARKER_RE.fullmatch(tail + end) for end in ("]", "1]", "[1]"))


class StreamingCitationFilter:
    """Filter citation markers in streamed text without ever emitting half a marker.

    ``feed(chunk)`` returns the text that is now final: everything except a possible unfinished
    marker (and the spaces before it) at the end, which is held back until it closes or clearly
    is not a marker. ``flush()`` returns what is left at the end of the stream. For any split of
    a text into chunks, ``"".join(feed(c) for c in chunks) + flush()`` equals
    ``filter_citations(text, n_passages)``.
    """

    def __init__(self, n_passages: int) -> None:
        self.n_passages = n_passages
        self.invented: list[int] = []
        self._pending = ""

    def _cut(self) -> int:
        buf = self._pending
        for i in range(max(0, len(buf) - _MAX_PENDING), len(buf)):
            if buf[i] in _START_CHARS and _could_become_marker(buf[i:]):
                return i
        return len(buf)

    def feed(self, chunk: str) -> str:
        if not chunk:
            return ""
        self._pending += chunk
        cut = self._cut()
        ready, self._pending = self._pending[:cut], self._pending[cut:]
        return filter_citations(ready, self.n_passages, self.invented)

    def flush(self) -> str:
        ready, self._pending = self._pending, ""
        return filter_citations(ready, self.n_passages, self.invented)
