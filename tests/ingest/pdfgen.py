"""Small PDF builders for the parser tests, on top of reportlab's canvas.

Tests describe pages as positioned text lines; `flow` lays paragraphs out in a column
the way a word processor would (fixed leading, a blank gap between paragraphs).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen import canvas
from reportlab.platypus import Flowable, SimpleDocTemplate

PAGE_W, PAGE_H = 612.0, 792.0


@dataclass(frozen=True)
class Line:
    x: float
    y: float  # baseline, PDF coordinates (origin bottom-left)
    text: str
    size: float = 11.0
    font: str = "Helvetica"


@dataclass(frozen=True)
class Rect:
    """A filled rectangle: draws something on the page without any text."""

    x: float
    y: float
    w: float
    h: float


@dataclass
class Page:
    items: Sequence[Line | Rect] = field(default_factory=list)


@dataclass(frozen=True)
class Bookmark:
    title: str
    page: int  # 0-based page index
    level: int = 0  # 0 = top level


@dataclass(frozen=True)
class PageLabel:
    """Pages from ``page`` (0-based) on are labelled ``prefix`` + a number in ``style`` from ``start``
    (the PDF's /PageLabels: ROMAN_LOWER, ARABIC, LETTERS_UPPER, ...; None: the prefix alone)."""

    page: int
    style: str | None = "ARABIC"
    start: int | None = None
    prefix: str | None = None


def wrap(text: str, width: float, size: float = 11.0, font: str = "Helvetica") -> list[str]:
    """Greedy word wrap to `width` points."""
    lines: list[str] = []
    cur = ""
    for word in text.split():
        cand = f"{cur} {word}" if cur else word
        if cur and stringWidth(cand, font, size) > width:
            lines.append(cur)
            cur = word
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines


def flow(
    paragraphs: Iterable[tuple[float, str | Sequence[str]]],
    *,
    x: float = 72.0,
    top: float = 720.0,
    width: float = 468.0,
) -> tuple[list[Line], float]:
    """Lay out (font size, text or explicit lines) paragraphs down a column.

    Returns the lines and the y where the next paragraph would go.
    """
    out: list[Line] = []
    y = top
    for size, body in paragraphs:
        lines = wrap(body, width, size) if isinstance(body, str) else list(body)
        for ln in lines:
            out.append(Line(x, y, ln, size))
            y -= size * 1.25
        y -= size * 1.0  # paragraph gap
    return out, y


def table(
    rows: Sequence[Sequence[str]],
    xs: Sequence[float],
    *,
    top: float = 700.0,
    size: float = 10.0,
    pitch: float = 14.0,
    right: Iterable[int] = (),
    font: str = "Helvetica",
) -> tuple[list[Line], float]:
    """Cells drawn with plain strings at column x positions, no ruling lines; columns in
    `right` are right-aligned at their x. Returns the lines and the y of the next row."""
    out: list[Line] = []
    y = top
    right = set(right)
    for row in rows:
        for j, (x, cell) in enumerate(zip(xs, row, strict=True)):
            if cell:
                shift = stringWidth(cell, font, size) if j in right else 0.0
                out.append(Line(x - shift, y, cell, size, font))
        y -= pitch
    return out, y


def build_story(story: Sequence[Flowable]) -> bytes:
    """A PDF laid out by reportlab's platypus (paragraphs, tables) on US letter pages."""
    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=(PAGE_W, PAGE_H), invariant=True).build(list(story))
    return buf.getvalue()


def build_pdf(
    pages: Sequence[Page],
    *,
    title: str | None = None,
    author: str | None = None,
    outline: Sequence[Bookmark] = (),
    user_password: str | None = None,
    labels: Sequence[PageLabel] = (),
) -> bytes:
    buf = io.BytesIO()
    encrypt = (
        StandardEncryption(user_password, ownerPassword="owner", strength=128)
        if user_password is not None
        else None
    )
    c = canvas.Canvas(buf, pagesize=(PAGE_W, PAGE_H), encrypt=encrypt, invariant=True)
    if title:
        c.setTitle(title)
    if author:
        c.setAuthor(author)
    for label in labels:
        c.addPageLabel(label.page, style=label.style, start=label.start, prefix=label.prefix)
    by_page: dict[int, list[tuple[int, Bookmark]]] = {}
    for i, bm in enumerate(outline):
        by_page.setdefault(bm.page, []).append((i, bm))
    for pno, page in enumerate(pages):
        for i, bm in by_page.get(pno, []):
            key = f"bm{i}"
            c.bookmarkPage(key)
            c.addOutlineEntry(bm.title, key, level=bm.level)
        for item in page.items:
            if isinstance(item, Line):
                c.setFont(item.font, item.size)
                c.drawString(item.x, item.y, item.text)
            else:
                c.rect(item.x, item.y, item.w, item.h, stroke=0, fill=1)
        c.showPage()
    c.save()
    return buf.getvalue()


def zero_page_pdf() -> bytes:
    """A syntactically valid PDF whose page tree is empty (reportlab always adds a page)."""
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)
