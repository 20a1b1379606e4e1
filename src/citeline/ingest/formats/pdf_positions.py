"""Where each word of a PDF's stored text came from on its page, to draw a cited span's boxes.

The stored text is built from words (runs of visible characters PDFium reports, in page order
within a line) joined by spaces, line breaks and table rules. A ``WordPosition`` ties a word's
code-point offsets in the stored text to its page and the index of its first character in that
page's PDFium text, so a span maps back to exact characters (and their boxes) on the page.

These positions are not stored: the parse is deterministic, so the server re-parses the original
bytes (server/pdf_pages.py:parse_with_positions) when a page is first shown (and caches the result), and only
uses them when the re-parsed text equals the stored text (a document indexed by an older parser
gets no boxes rather than wrong ones).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from citeline.ingest.formats.pdf_layout import Line

#: PDFium is not thread-safe: every use in a process that runs threads (the server) holds this
PDFIUM_LOCK = threading.RLock()


@dataclass(frozen=True, slots=True)
class WordPosition:
    start: int  # code-point offset of the word in the stored text
    length: int  # characters of the word present in the text (a repaired hyphen is not)
    page: int  # 1-based
    char: int  # index of the word's first character in the page's PDFium text


def word_positions(
    lines: Sequence[Line], offsets: Sequence[int], text: str, block_start: int, table: bool
) -> Iterator[WordPosition]:
    """The positions of a block's words. ``offsets``: where each line starts in the block's
    ``text`` (for tables: where its row starts, -1 for a dropped repeated header)."""
    for i, ln in enumerate(lines):
        words = ln.text.split(" ")
        if len(words) != len(ln.word_starts) or offsets[i] < 0:
            continue
        if table:
            cursor = offsets[i]
            for word, char in zip(words, ln.word_starts, strict=True):
                at = text.find(word, cursor)
                if at >= 0:
                    yield WordPosition(block_start + at, len(word), ln.page, char)
                    cursor = at + len(word)
            continue
        limit = offsets[i + 1] if i + 1 < len(offsets) else len(text)
        at = offsets[i]
        for word, char in zip(words, ln.word_starts, strict=True):
            length = min(len(word), limit - at)
            if length > 0 and text[at : at + length] == word[:length]:
                yield WordPosition(block_start + at, length, ln.page, char)
            at += len(word) + 1
