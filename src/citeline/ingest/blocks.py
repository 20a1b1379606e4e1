"""Building a ParsedDocument from a flat list of (kind, text, heading level) blocks.

Formats whose parser extracts text (HTML, DOCX) lay the blocks out the same way: joined by
a blank line, with offsets recorded as they go, and a heading trail kept from the levels.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from citeline.types import Block, BlockKind, ParsedDocument

# Beyond the stored kinds, a parser may emit a *term* (a definition list's <dt>: a paragraph that
# also opens a section, so that its definition is read under it) and an *end* (the list closed:
# the sections its terms opened end here; empty text, no block).
RawKind = BlockKind | Literal["term", "end"]
TERM_LEVEL = 10  # terms nest below every heading level (h1-h6, man page sections)
_MAX_TERM_CHARS = 120  # a longer <dt> is prose, not a name to file its definition under


def assemble_blocks(
    raw: list[tuple[RawKind, str, int]],
    title: str,
    title_is_unique: bool,
    metadata: dict[str, Any],
    fmt: str,
) -> ParsedDocument:
    """Join block texts with "\\n\\n" and give every block its exact span and heading trail.

    The document's own title heading (level 0, or its first heading when that equals a
    known, unique title) is kept as a block but is never part of any trail. A term is stored as
    a paragraph whose trail ends with its own text; consecutive terms (several names for one
    definition) share one trail entry, "-v / --verbose".
    """
    parts: list[str] = []
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    first_heading = True
    norm_title = " ".join(title.split()).casefold()
    run: list[int] = []  # the blocks of the terms just stored: one definition's names
    for raw_kind, text, level in raw:
        if raw_kind == "end":
            _close(stack, level)
            run = []
            continue
        kind: BlockKind = "paragraph" if raw_kind == "term" else raw_kind
        run = _open_term(stack, blocks, run, " ".join(text.split()), level) if raw_kind == "term" else []
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        is_title = kind == "heading" and (
            level == 0 or (first_heading and title_is_unique and text.casefold() == norm_title)
        )
        if kind == "heading" and not is_title:
            _close(stack, level)
            stack.append((level, text))
        trail: tuple[str, ...] = () if is_title else tuple(t for _, t in stack)
        first_heading = first_heading and kind != "heading"
        blocks.append(Block(kind, pos, pos + len(text), trail))
        pos += len(text)
    return ParsedDocument(
        text="".join(parts), blocks=tuple(blocks), title=title, format=fmt, metadata=metadata
    )


def _close(stack: list[tuple[int, str]], level: int) -> None:
    while stack and stack[-1][0] >= level:
        stack.pop()


def _open_term(
    stack: list[tuple[int, str]], blocks: list[Block], run: list[int], name: str, level: int
) -> list[int]:
    """Push a term's section; the term's own block is the next one stored. Returns the new run."""
    if (
        run
        and stack
        and stack[-1][0] == level
        and len(joined := f"{stack[-1][1]} / {name}") <= _MAX_TERM_CHARS
    ):
        name = joined
    else:
        run = []
    _close(stack, level)
    if len(name) > _MAX_TERM_CHARS:
        return []
    stack.append((level, name))
    trail = tuple(t for _, t in stack)
    for i in run:
        blocks[i] = replace(blocks[i], heading_trail=trail)
    return [*run, len(blocks)]
