"""Plain text: paragraphs separated by blank lines; no headings. A manual page rendered to text
(`man -l page.5 > page.5.txt`) is read as one: its sections and option entries become headings
(ingest/formats/manpage.py), so "The default is 10." is filed under "Description > MaxSessions"."""

from __future__ import annotations

import re
from pathlib import Path

from citeline.errors import NoTextError
from citeline.ingest.base import BaseParser
from citeline.ingest.blocks import assemble_blocks
from citeline.ingest.decode import decode_text
from citeline.ingest.formats.manpage import man_page_blocks
from citeline.types import Block, ParsedDocument

_PARAGRAPH = re.compile(r"\S(?:.*?\S)?(?=\n[ \t]*\n|\s*\Z)", re.DOTALL)


def paragraph_blocks(text: str, trail: tuple[str, ...] = ()) -> list[Block]:
    """Blocks for each run of non-blank lines, trimmed."""
    return [Block("paragraph", m.start(), m.end(), trail) for m in _PARAGRAPH.finditer(text)]


class TextParser(BaseParser):
    format = "text"
    extensions = (".txt", ".text", ".rst")

    def parse(self, data: bytes, path: Path) -> ParsedDocument:
        text = decode_text(data, str(path))
        manual = man_page_blocks(text)
        if manual:
            return assemble_blocks(list(manual), man_page_title(text, path), False, {}, self.format)  # type: ignore[arg-type]
        blocks = paragraph_blocks(text)
        if not blocks:
            raise NoTextError(str(path), "the file is empty (no text to index)")
        first = text[blocks[0].start : blocks[0].end]
        title = path.stem
        # A short first line that is not a sentence reads as the title.
        if "\n" not in first and len(first) <= 80 and not first.endswith((".", "?", "!")):
            title = first
        return ParsedDocument(text=text, blocks=tuple(blocks), title=title, format=self.format)


_NAME_LINE = re.compile(r"^NAME\s*\n\s+(\S.*)$", re.MULTILINE)


def man_page_title(text: str, path: Path) -> str:
    """A rendered manual page's title: its NAME line ("sshd_config — OpenSSH daemon
    configuration file"), else the file's name."""
    m = _NAME_LINE.search(text)
    return " ".join(m.group(1).split()) if m else path.stem
