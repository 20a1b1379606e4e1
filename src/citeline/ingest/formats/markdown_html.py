"""Raw HTML inside Markdown: what a reader of the rendered page sees of it.

HTML comments (``<!-- YAML added: v18.0.0 ... -->``, editors' notes) are not rendered: they are
left out of the stored text, so no chunk or answer quotes them. A raw HTML ``<table>`` is stored
as the pipe table the HTML parser makes of it (one row a line, a header rule under a row of
``<th>``), and is a table block, so it is chunked as a Markdown table is: between rows, the
header repeated. A table with blank lines inside (which Markdown cuts into several HTML blocks
and paragraphs) is read whole, up to its closing tag.

Everything else stays as the user wrote it: ``Edits`` maps each offset of the source to the
stored text, and code (fences, indented code, inline code) is never edited.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from markdown_it.token import Token

from citeline.ingest.formats.html import fragment_blocks
from citeline.types import BlockKind

# A comment runs to its "-->", or (unterminated) to the end of its HTML block.
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_TABLE_TAG = re.compile(r"<(/?)table\b", re.IGNORECASE)


@dataclass(frozen=True)
class Edit:
    """Source ``start:end`` stands as ``text`` in the stored text. A table region also gives its
    blocks, as (kind, start, end) within ``text``, and replaces whole top-level tokens."""

    start: int
    end: int
    text: str
    blocks: tuple[tuple[BlockKind, int, int], ...] = ()
    region: bool = False


class Edits:
    """The stored text of a Markdown source, and where each source offset lands in it."""

    def __init__(self, source: str, edits: Sequence[Edit]) -> None:
        parts: list[str] = []
        self._ends: list[int] = []
        self._shifts: list[int] = []
        pos = shift = 0
        for edit in edits:
            parts += [source[pos : edit.start], edit.text]
            shift += len(edit.text) - (edit.end - edit.start)
            self._ends.append(edit.end)
            self._shifts.append(shift)
            pos = edit.end
        parts.append(source[pos:])
        self.text = "".join(parts)
        self.regions = {e.start: e for e in edits if e.region}

    def at(self, offset: int) -> int:
        """The stored-text offset of a source offset outside every edit (or at an edit's ends)."""
        i = bisect_right(self._ends, offset) - 1
        return offset + (self._shifts[i] if i >= 0 else 0)


def strip_comments(text: str) -> str:
    """``text`` without its HTML comments (a heading's text)."""
    return _COMMENT.sub("", text) if "<!--" in text else text


def html_edits(source: str, tokens: Sequence[Token], lines: Sequence[int]) -> Edits:
    """The edits of a parsed Markdown source (``lines``: where each line starts)."""
    if "<" not in source:
        return Edits(source, [])
    tables = _table_regions(source, tokens, lines)
    edits = list(tables)
    for token in tokens:
        if token.map is None:
            continue
        start, end = lines[token.map[0]], lines[min(token.map[1], len(lines) - 1)]
        if any(t.start <= start < t.end for t in tables):
            continue
        if token.type == "html_block":
            edits += _block_comments(source, start, end)
        elif token.type == "inline" and token.children:
            edits += _inline_comments(source, start, end, token.children)
    return Edits(source, sorted(edits, key=lambda e: e.start))


def _block_comments(source: str, start: int, end: int) -> list[Edit]:
    """The comments of an HTML block; one that fills its lines takes the lines with it."""
    edits: list[Edit] = []
    for m in _COMMENT.finditer(source[start:end]):
        a, b = start + m.start(), start + m.end()
        line_start = source.rfind("\n", 0, a) + 1
        line_end = source.find("\n", b)
        line_end = len(source) if line_end < 0 else line_end + 1
        if not source[line_start:a].strip() and not source[b:line_end].strip():
            a, b = max(line_start, edits[-1].end if edits else 0), line_end
        edits.append(Edit(a, b, ""))
    return edits


def _inline_comments(source: str, start: int, end: int, children: Sequence[Token]) -> list[Edit]:
    """The comments inside a paragraph's text, found in order in its source lines."""
    edits: list[Edit] = []
    cursor = start
    for child in children:
        if child.type != "html_inline" or not child.content.startswith("<!--"):
            continue
        at = source.find(child.content, cursor, end)
        if at < 0:
            continue  # its lines are quoted or indented in the source: left as written
        after = at + len(child.content)
        if at > cursor and source[at - 1] == " " and source[after : after + 1] in ("", " ", "\n"):
            at -= 1  # "one <!-- note --> two" reads "one two"
        edits.append(Edit(at, after, ""))
        cursor = after
    return edits


def _table_regions(source: str, tokens: Sequence[Token], lines: Sequence[int]) -> list[Edit]:
    """Each top-level HTML block holding a <table>, through the line that closes the table (and
    every top-level token that starts before it), as the HTML parser's blocks."""
    blanked = _COMMENT.sub(lambda m: " " * len(m.group()), source)  # a commented-out <table> is none
    top = [
        (lines[t.map[0]], lines[min(t.map[1], len(lines) - 1)], t) for t in tokens if t.level == 0 and t.map
    ]
    regions: list[Edit] = []
    for start, end, token in top:
        if token.type != "html_block" or (regions and start < regions[-1].end):
            continue
        if not _TABLE_TAG.search(blanked, start, end):
            continue
        end = max(end, _table_end(blanked, start))
        for other_start, other_end, _ in top:
            if start < other_start < end:
                end = max(end, other_end)
        regions.append(_render(source, start, end))
    return regions


def _table_end(text: str, start: int) -> int:
    """Just past the line holding the tag that closes the first table opened from ``start``."""
    depth = 0
    for m in _TABLE_TAG.finditer(text, start):
        depth += -1 if m.group(1) else 1
        if depth <= 0:
            line_end = text.find("\n", m.end())
            return len(text) if line_end < 0 else line_end + 1
    return start  # never closed: the HTML block alone


def _render(source: str, start: int, end: int) -> Edit:
    parts: list[str] = []
    blocks: list[tuple[BlockKind, int, int]] = []
    pos = 0
    for raw_kind, text, _level in fragment_blocks(source[start:end]):
        if raw_kind == "end" or not text:
            continue
        kind: BlockKind = "paragraph" if raw_kind in ("heading", "term") else cast(BlockKind, raw_kind)
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        blocks.append((kind, pos, pos + len(text)))
        pos += len(text)
    if parts and source[end - 1 : end] == "\n":
        parts.append("\n")
    return Edit(start, end, "".join(parts), tuple(blocks), region=True)
