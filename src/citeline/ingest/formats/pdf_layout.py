"""PDF page layout: line records, running headers and footers, columns and reading order.

Works on small per-line records (no PDFium objects), so the parser can drop each page
before reading the next.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field

from citeline.ingest.formats import pdf_tables
from citeline.ingest.formats.pdf_tables import Cell

PAGE_NUMBER = re.compile(r"^(page\s+)?(\d{1,5}|[ivxlcdm]{1,6})(\s*(of|/)\s*\d{1,5})?$", re.IGNORECASE)


@dataclass(slots=True)
class Line:
    """A run of words on one baseline (one column's part of a visual line)."""

    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float
    hyphen: bool = False  # PDFium saw an end-of-line hyphen after the last word
    page: int = 0
    flow: int = 0  # lines of one flow are read top-down; a new flow = new column / page
    level: int = 0  # heading level (1..6) or 0 for body text
    mono: bool = False  # set in a fixed-pitch font: code
    # Pieces between wide gaps (possible table cells); empty for the usual one-piece line.
    cells: tuple[Cell, ...] = ()
    # Index in the page's PDFium text of each word's first character (words: text.split(" ")).
    word_starts: tuple[int, ...] = ()


@dataclass
class PageLines:
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)


# Spacing accents that TeX-made PDFs draw as a glyph of their own before the letter they sit on
# ("Universit\u00a8at"), with the combining mark each one stands for. ASCII ^ ` ~ are left alone:
# in code and prose they are characters, not accents.
_SPACING_ACCENTS = {
    "\u00a8": "\u0308",  # diaeresis
    "\u00b4": "\u0301",  # acute
    "\u02c6": "\u0302",  # circumflex
    "\u02dc": "\u0303",  # tilde
    "\u00af": "\u0304",  # macron
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u02c7": "\u030c",  # caron
    "\u00b8": "\u0327",  # cedilla
    "\u02db": "\u0328",  # ogonek
}
_ACCENT_BEFORE_LETTER = re.compile(f"([{''.join(_SPACING_ACCENTS)}])([^\\W\\d_])")


def _accented(m: re.Match[str]) -> str:
    base = "i" if m.group(2) == "\u0131" else m.group(2)  # a dotless i under an accent: TeX's \\"{\\i}
    joined = unicodedata.normalize("NFC", base + _SPACING_ACCENTS[m.group(1)])
    return joined if len(joined) == 1 else m.group(0)


def compose(word: str) -> str:
    """A word as text: NFC (a letter and its combining marks as one character), and a spacing accent
    drawn before a letter joined to it when they make one character ("\u00a8a" -> "\u00e4")."""
    if word.isascii():
        return word
    word = _ACCENT_BEFORE_LETTER.sub(_accented, word)
    return unicodedata.normalize("NFC", word)


def norm(s: str) -> str:
    return unicodedata.normalize("NFC", " ".join(s.split())).casefold()


def strip_running(pages: list[PageLines]) -> None:
    """Drop page numbers and lines repeated at the same place on several pages."""
    seen: dict[tuple[str, int], set[int]] = defaultdict(set)
    edges: list[list[Line]] = []
    for pno, p in enumerate(pages):
        cand = margin_lines(p.lines)
        edges.append(cand)
        for ln in cand:
            seen[(re.sub(r"\d+", "#", norm(ln.text)), round(ln.top / 6))].add(pno)
    need = 2 if len(pages) == 2 else 3
    for p, cand in zip(pages, edges, strict=True):
        drop = {
            id(ln)
            for ln in cand
            if PAGE_NUMBER.match(ln.text.strip())
            or len(seen[(re.sub(r"\d+", "#", norm(ln.text)), round(ln.top / 6))]) >= need
        }
        if drop:
            p.lines = [ln for ln in p.lines if id(ln) not in drop]


def margin_lines(lines: list[Line]) -> list[Line]:
    """Lines in the top or bottom margin: at most two rows at either end of the page,
    set off from the body by a gap of at least a line height."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: -ln.top):
        if rows and abs(rows[-1][0].top - ln.top) < 0.5 * ln.size:
            rows[-1].append(ln)
        else:
            rows.append([ln])
    out: dict[int, Line] = {}
    for from_top, seq in ((True, rows), (False, rows[::-1])):
        for i in range(min(2, len(seq) - 1)):
            a, b = seq[i][0], seq[i + 1][0]
            gap = a.bottom - b.top if from_top else b.bottom - a.top
            if gap >= a.size:
                out.update((id(ln), ln) for row in seq[: i + 1] for ln in row)
                break
    return list(out.values())


def gutter(lines: list[Line], width: float) -> float | None:
    """x of the gap between two text columns, or None for a single-column page."""
    if len(lines) < 6:
        return None
    step = 2.0
    nbins = int(width / step) + 1
    cover = [0] * nbins
    for ln in lines:
        for k in range(max(int(ln.x0 / step), 0), min(int(ln.x1 / step) + 1, nbins)):
            cover[k] += 1
    allowed = max(1, len(lines) // 10)  # full-width lines (titles) may cross the gutter
    best: tuple[float, float] | None = None
    k = int(nbins * 0.2)
    while k < int(nbins * 0.8):
        if cover[k] > allowed:
            k += 1
            continue
        j = k
        while j < nbins and cover[j] <= allowed:
            j += 1
        if (j - k) * step >= 6 and (best is None or j - k > best[1] - best[0]):
            best = (k * step, j * step)
        k = j
    if best is None:
        return None
    gx0, gx1 = best
    left = [ln for ln in lines if ln.x1 <= gx0 + step]
    right = [ln for ln in lines if ln.x0 >= gx1 - step]
    if len(left) < 3 or len(right) < 3:
        return None
    # Real columns are filled by their lines; label/value layouts are not.
    for side in (left, right):
        span = max(ln.x1 for ln in side) - min(ln.x0 for ln in side)
        if sum(ln.x1 - ln.x0 >= 0.75 * span for ln in side) < 0.3 * len(side):
            return None
    return (gx0 + gx1) / 2


def reading_order(p: PageLines, flow: int) -> tuple[list[Line], int]:
    """Order a page's lines for reading; returns them and the last flow id used.

    On a two-column page, lines crossing the gutter (titles, wide figures) cut the page
    into bands; within a band the left column is read before the right one.
    """
    lines = sorted(p.lines, key=lambda ln: (-ln.bottom, ln.x0))
    gx = gutter(lines, p.width)
    out: list[Line] = []
    groups: list[list[Line]] = [[], [], []]  # left column, right column, full width

    def flush(*which: int) -> None:
        nonlocal flow
        for g in which:
            if groups[g]:
                flow += 1
                out.extend(merge_baselines(groups[g], flow))
                groups[g] = []

    for ln in lines:
        if gx is None or ln.x0 < gx < ln.x1:
            flush(0, 1)
            groups[2].append(ln)
        else:
            flush(2)
            groups[0 if ln.x1 <= gx else 1].append(ln)
    flush(0, 1, 2)
    return out, flow


def merge_baselines(lines: list[Line], flow: int) -> list[Line]:
    """Join pieces that share a baseline (cells, tab stops) into one line, left to right."""
    out: list[Line] = []
    for ln in lines:
        ln.flow = flow
        last = out[-1] if out else None
        if last is not None and abs(last.bottom - ln.bottom) < 0.3 * min(last.size, ln.size):
            first, second = (last, ln) if last.x0 <= ln.x0 else (ln, last)
            shift = len(first.text) + 1
            last.cells = pdf_tables.pieces(first) + tuple(
                (a, b, off + shift, mono) for a, b, off, mono in pdf_tables.pieces(second)
            )
            last.text = first.text + " " + second.text
            last.word_starts = first.word_starts + second.word_starts
            last.hyphen = second.hyphen
            last.x0, last.x1 = min(last.x0, ln.x0), max(last.x1, ln.x1)
            last.top, last.size = max(last.top, ln.top), max(last.size, ln.size)
        else:
            out.append(ln)
    return out
