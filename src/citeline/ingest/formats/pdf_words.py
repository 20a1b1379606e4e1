"""Pass 1 of the PDF parser: one PDFium page's words, with their loose boxes, joined into lines
(same baseline, no more than a wide word space apart), each line's font size, fixed pitch and the
gaps that may separate table cells."""

from __future__ import annotations

import ctypes
import re
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from citeline.ingest.formats import pdf_tables
from citeline.ingest.formats.pdf_layout import Line, PageLines, compose
from citeline.ingest.formats.pdf_tables import CELL_GAP

# Words: runs of visible characters. PDFium writes U+FFFE (GetUnicode: 0x02) where it
# found an end-of-line hyphen; it is a word break for geometry, dropped from the text.
_WORD = re.compile(r"[^\s\ufffe\x00-\x1f\x7f]+")
_HYPHEN_MARKS = ("\ufffe", "\x02")
# Fixed-pitch fonts that do not set the FixedPitch flag (TeX's CMTT among them).
_MONO_FONT = re.compile(r"mono|courier|typewriter|consol|menlo|monaco|code|cmtt|sftt|lmtt|ectt", re.I)


def read_page(page: pdfium.PdfPage, pno: int) -> PageLines:
    width, height = page.get_size()
    result = PageLines(width, height)
    tp = page.get_textpage()
    try:
        n = pdfium_c.FPDFText_CountChars(tp)
        if n <= 0:
            return result
        buf = (ctypes.c_ushort * (n + 1))()
        got = pdfium_c.FPDFText_GetText(tp, 0, n, buf)
        text = bytes(memoryview(buf).cast("B")[: max(got - 1, 0) * 2]).decode("utf-16-le", "replace")
        if len(text) != n:
            # Rare (non-BMP characters, excluded chars): rebuild so that text[i] is char i.
            text = "".join(_safe_chr(pdfium_c.FPDFText_GetUnicode(tp, i)) for i in range(n))
        result.lines = _words_to_lines(tp, text, pno)
    finally:
        tp.close()
    return result


def _safe_chr(code: int) -> str:
    if code == 2:
        return "\ufffe"
    return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else " "


def _is_mono(tp: Any, index: int, name: Any, flags: Any) -> bool:
    pdfium_c.FPDFText_GetFontInfo(tp, index, name, len(name), flags)
    return bool(flags.value & 1) or bool(_MONO_FONT.search(name.value.decode("latin-1")))


def _words_to_lines(textpage: pdfium.PdfTextPage, text: str, pno: int) -> list[Line]:
    tp = textpage.raw  # the raw handle: this loop makes a few ctypes calls per word
    get_box, rect = pdfium_c.FPDFText_GetLooseCharBox, pdfium_c.FS_RECTF()
    name, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    lines: list[Line] = []
    words: list[list[str]] = []
    marks: list[list[int]] = []  # per line: index of its first, second word's first, last char
    starts: list[list[int]] = []  # per line: index of each word's first char
    # Gaps too narrow to break a line but maybe between table cells: line index -> (gap x0,
    # gap x1, index of the word after it), and the line's other gaps as (sum, count).
    wide: dict[int, list[tuple[float, float, int]]] = {}
    spacing: dict[int, tuple[float, int]] = {}
    gsum, gcount = 0.0, 0
    cur: Line | None = None
    for m in _WORD.finditer(text):
        a, b = m.start(), m.end() - 1
        # The loose box spans the font's ascent..descent, so it is the same for every
        # glyph of a line (tight boxes vary: "x" vs "l"), which makes baselines comparable.
        get_box(tp, a, rect)
        x0, bottom, top = rect.left, rect.bottom, rect.top
        if b != a:
            get_box(tp, b, rect)
        x1 = rect.right
        em = max((top - bottom) / 1.17, 1.0)  # loose box height is about 1.17 em
        hyphen = m.end() < len(text) and text[m.end()] in _HYPHEN_MARKS
        if cur is not None:
            overlap = min(cur.top, top) - max(cur.bottom, bottom)
            gap = x0 - cur.x1
            # Same baseline and no more than a wide word space apart (a wider gap is a
            # column gutter or a table cell: a new line).
            if overlap >= 0.5 * min(cur.top - cur.bottom, top - bottom) and -0.5 * em <= gap <= 1.8 * max(
                em, cur.size
            ):
                if gap >= CELL_GAP * em:
                    wide.setdefault(len(lines) - 1, []).append((cur.x1, x0, len(words[-1])))
                else:
                    gsum, gcount = gsum + gap, gcount + 1
                words[-1].append(compose(m.group()))
                cur.x1 = max(cur.x1, x1)
                cur.top, cur.bottom = max(cur.top, top), min(cur.bottom, bottom)
                cur.hyphen = hyphen
                if len(words[-1]) == 2:
                    marks[-1][1] = a
                marks[-1][2] = b
                starts[-1].append(a)
                continue
        if lines and len(lines) - 1 in wide:
            spacing[len(lines) - 1] = (gsum, gcount)
        gsum, gcount = 0.0, 0
        size = pdfium_c.FPDFText_GetFontSize(tp, a)
        if size < 2.0:  # font scaled by the text matrix: Tf says 1
            size = em
        cur = Line("", x0, x1, top, bottom, size, hyphen, pno)
        lines.append(cur)
        words.append([compose(m.group())])
        marks.append([a, -1, b])
        starts.append([a])
    if lines and len(lines) - 1 in wide:
        spacing[len(lines) - 1] = (gsum, gcount)
    for i, (ln, ws, (first, second, end)) in enumerate(zip(lines, words, marks, strict=True)):
        ln.text = " ".join(ws)
        ln.word_starts = tuple(starts[i])
        # Code: starts (after a listing's line number, if any) and ends in a fixed-pitch
        # font; prose that merely opens with a `literal` does not end in one.
        if ws[0].isdigit() and second >= 0:
            first = second
        ln.mono = _is_mono(tp, first, name, flags) and _is_mono(tp, end, name, flags)
        if i in wide:
            ln.cells = pdf_tables.gap_cells(ln, ws, wide[i], spacing[i])
    return lines
