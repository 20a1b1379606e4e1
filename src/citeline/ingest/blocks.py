"""Building a ParsedDocument from a flat list of (kind, text, heading level) blocks.

Formats whose parser extracts text (HTML, DOCX) lay the blocks out the same way: joined by
a blank line, with offsets recorded as they go, and a heading trail kept from the levels.
"""

from __future__ import annotations

from typing import Any

from citeline.models import Block, BlockKind, ParsedDocument


def assemble_blocks(
    raw: list[tuple[BlockKind, str, int]],
    title: str,
    title_is_unique: bool,
    metadata: dict[str, Any],
    fmt: str,
) -> ParsedDocument:
    """Join block texts with "\\n\\n" and give every block its exact span and heading trail.

    The document's own title heading (level 0, or its first heading when that equals a
    known, unique title) is kept as a block but is never part of any trail.
    """
    parts: list[str] = []
    blocks: list[Block] = []
    stack: list[tuple[int, str]] = []
    pos = 0
    first_heading = True
    norm_title = " ".join(title.split()).casefold()
    for kind, text, level in raw:
        if parts:
            parts.append("\n\n")
            pos += 2
        parts.append(text)
        is_title = kind == "heading" and (
            level == 0 or (first_heading and title_is_unique and text.casefold() == norm_title)
        )
        if kind == "heading" and not is_title:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, text))
        trail: tuple[str, ...] = () if is_title else tuple(t for _, t in stack)
        first_heading = first_heading and kind != "heading"
        blocks.append(Block(kind, pos, pos + len(text), trail))
        pos += len(text)
    return ParsedDocument(
        text="".join(parts), blocks=tuple(blocks), title=title, format=fmt, metadata=metadata
    )
