"""PDF parser on pypdfium2: words with boxes -> lines -> reading order -> blocks.

Pass 1 (pdf_words.py) walks the pages one at a time (each page and text page closed before the next,
so a 2,000-page file never holds more than one page in PDFium) and keeps only small
line records. Pass 2 needs the whole document (running headers, body font size, heading
levels) and builds the text and blocks from those records.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from citeline import page_labels
from citeline.errors import NoTextError, ParseError
from citeline.ingest.base import BaseParser
from citeline.ingest.formats import pdf_tables
from citeline.ingest.formats.pdf_layout import Line, PageLines, compose, norm, reading_order, strip_running
from citeline.ingest.formats.pdf_positions import PDFIUM_LOCK, WordPosition, word_positions
from citeline.ingest.formats.pdf_streams import check_streams
from citeline.ingest.formats.pdf_words import read_page
from citeline.types import Block, BlockKind, ParsedDocument

_BULLET = re.compile(r"^([•◦▪‣∙·●○■□–*-]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s")
_SENTENCE_END = re.compile(r"[.!?:;][\"'”’)\]]*\Z")
# A heading that numbers a section ("1 Introduction", "2.3 Limits", "Chapter 4 ..."): not a title
_NUMBERED_SECTION = re.compile(r"^((chapter|section|part|appendix)\s+\S+|\d+(\.\d+)*\.?)\s+\S", re.IGNORECASE)
_SECTION_NO = re.compile(r"^(chapter|section|part|appendix)?\s*[\dIVXivx]+(\.\d+)*\.?\s+", re.IGNORECASE)
_ERRORS = {
    pdfium_c.FPDF_ERR_PASSWORD: "encrypted PDF (no password support)",
    pdfium_c.FPDF_ERR_SECURITY: "encrypted PDF with an unsupported security handler",
    pdfium_c.FPDF_ERR_FILE: "unreadable PDF file",
}


def _heading_key(s: str) -> str:
    return _SECTION_NO.sub("", norm(s))


class PdfParser(BaseParser):
    format = "pdf"
    extensions: tuple[str, ...] = (".pdf",)
    #: when a list, parse() appends one WordPosition per word of the text (ingest/formats/pdf_positions.py)
    positions: list[WordPosition] | None = None

    def parse(self, data: bytes, path: Path) -> ParsedDocument:
        with PDFIUM_LOCK:  # PDFium is not thread-safe (the server parses uploads in threads)
            return self._parse(data, path)

    def _parse(self, data: bytes, path: Path) -> ParsedDocument:
        if b"%PDF" not in data[:1024]:
            raise ParseError(str(path), "not a PDF file (no %PDF header)")
        check_streams(data, str(path))  # before PDFium inflates anything
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            raise ParseError(str(path), _open_failure(data)) from None
        try:
            meta = {k.lower(): compose(v.strip()) for k, v in pdf.get_metadata_dict(skip_empty=True).items()}
            outline = _outline(pdf)
            labels = [pdf.get_page_label(i) for i in range(len(pdf))]
            pages: list[PageLines] = []
            for i in range(len(pdf)):
                page = pdf[i]
                try:
                    pages.append(read_page(page, i + 1))
                finally:
                    page.close()
        except pdfium.PdfiumError as exc:
            raise ParseError(str(path), f"corrupt PDF ({exc})") from None
        finally:
            pdf.close()
        if not any(p.lines for p in pages):
            raise ParseError(str(path), "image-only PDF: no text layer (OCR is not supported)")
        parsed = _assemble(pages, outline, meta, path, self.positions)
        runs = page_labels.encode(labels)
        return (
            replace(parsed, metadata={**parsed.metadata, page_labels.METADATA_KEY: runs}) if runs else parsed
        )


def _open_failure(data: bytes) -> str:
    """Why PDFium would not open the file. PdfiumError's code can be stale: PDFium's last
    error survives successful calls, and a document with zero pages loads successfully."""
    raw = pdfium_c.FPDF_LoadMemDocument64(data, len(data), None)
    if raw:
        pdfium_c.FPDF_CloseDocument(raw)
        return "PDF has no pages"
    return _ERRORS.get(pdfium_c.FPDF_GetLastError(), "corrupt or unreadable PDF")


def _outline(pdf: pdfium.PdfDocument) -> list[tuple[int, str, int]]:
    """(level 1.., title, 1-based page) for bookmarks that point at a page."""
    out = []
    for bm in pdf.get_toc(max_depth=6):
        dest = bm.get_dest()
        index = dest.get_index() if dest is not None else None
        title = compose(" ".join(bm.get_title().split()))
        if index is not None and title:
            out.append((bm.level + 1, title, index + 1))
    return out


def _mark_headings(
    pages: list[list[Line]], outline: list[tuple[int, str, int]], body: float
) -> dict[int, list[tuple[int, str]]]:
    """Set heading levels: from the outline when there is one, else from font size.

    Returns the bookmarks whose title was not found on their page: they still enter the
    heading trail, at the start of that page.
    """
    unmatched: dict[int, list[tuple[int, str]]] = defaultdict(list)
    if outline:
        by_page: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for level, title, pno in outline:
            by_page[pno].append((min(level, 6), title))
        for pno, lines in enumerate(pages, start=1):
            pending = by_page.get(pno, [])
            for i, ln in enumerate(lines):
                one = _heading_key(ln.text)
                nxt = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].flow == ln.flow else None
                two = _heading_key(ln.text + " " + nxt.text) if nxt else None
                for j, (level, title) in enumerate(pending):
                    key = _heading_key(title)
                    if key in (one, two):
                        ln.level = level
                        if nxt is not None and key == two and key != one:
                            nxt.level = level  # title wrapped over two lines
                        del pending[j]
                        break
            unmatched[pno] = pending
        return unmatched
    sizes = sorted(
        {round(ln.size * 2) / 2 for lines in pages for ln in lines if _is_big(ln, body)}, reverse=True
    )
    for lines in pages:
        for ln in lines:
            if _is_big(ln, body):
                ln.level = min(sizes.index(round(ln.size * 2) / 2) + 1, 6)
    return unmatched


def _is_big(ln: Line, body: float) -> bool:
    return (
        not ln.mono and ln.size >= body * 1.08 and len(ln.text) <= 200 and any(c.isalpha() for c in ln.text)
    )


@dataclass
class _Blk:
    kind: BlockKind
    lines: list[Line]
    level: int = 0


def _assemble(
    pages: list[PageLines],
    outline: list[tuple[int, str, int]],
    meta: dict[str, str],
    path: Path,
    positions: list[WordPosition] | None = None,
) -> ParsedDocument:
    strip_running(pages)
    weights: Counter[float] = Counter()
    ratios: list[float] = []
    for p in pages:
        for a, b in pairwise(p.lines):
            if abs(a.size - b.size) < 0.5 and 0 < a.bottom - b.bottom < 3 * a.size:
                ratios.append((a.bottom - b.bottom) / a.size)
        for ln in p.lines:
            weights[round(ln.size * 2) / 2] += len(ln.text) * (1 if ln.mono else 100)  # body = prose
    if not weights:
        raise NoTextError(str(path), "no text content (only page headers/footers)")
    body = weights.most_common(1)[0][0]
    para_gap = (statistics.median(ratios) if ratios else 1.2) * 1.3
    ordered: list[list[Line]] = []
    flow = 0
    for p in pages:
        lines, flow = reading_order(p, flow)
        ordered.append(lines)
    pages_outline = [o for o in outline if 1 <= o[2] <= len(pages)]
    unmatched = _mark_headings(ordered, pages_outline, body)
    blocks = _group(ordered, para_gap)
    heading_lines = [b for b in blocks if b.kind == "heading"]
    title = meta.get("title", "")
    title_from_meta = bool(title) and title.casefold() not in {"untitled", "untitled document"}
    if not title_from_meta:
        first = _join(heading_lines[0].lines)[0] if heading_lines else ""
        if not first or _NUMBERED_SECTION.match(first):  # "1 Introduction" names a section, not the file
            first = _first_page_title(ordered[0] if ordered else [], body) or first
        title = first or path.stem or "untitled"
    return _emit(blocks, unmatched, _Facts(len(pages), title, title_from_meta, meta), positions)


def _first_page_title(lines: list[Line], body: float) -> str:
    """The largest type on the first page (lines of it one after the other joined), unless it
    names a numbered section too; "" when nothing there stands out from the body text."""
    big = [ln for ln in lines if _is_big(ln, body)]
    if not big:
        return ""
    size = max(ln.size for ln in big)
    at = next(i for i, ln in enumerate(lines) if _is_big(ln, body) and abs(ln.size - size) < 0.5)
    run = [lines[at]]
    for ln in lines[at + 1 :]:
        if abs(ln.size - size) >= 0.5 or ln.flow != run[-1].flow or len(run) == 3:
            break
        run.append(ln)
    title = _join(run)[0]
    return "" if _NUMBERED_SECTION.match(title) else title


def _group(pages: list[list[Line]], para_gap: float) -> list[_Blk]:
    blocks: list[_Blk] = []
    for lines in pages:
        tables = dict(pdf_tables.find_tables(lines))
        skip = 0
        for i, ln in enumerate(lines):
            if i < skip:
                continue  # inside a table
            if i in tables:
                skip = tables[i]
                _add_table(blocks, lines[i:skip])
                continue
            cur = blocks[-1] if blocks else None
            last = cur.lines[-1] if cur else None
            first_of_flow = i == 0 or lines[i - 1].flow != ln.flow
            if ln.level:
                _add_heading(blocks, ln, para_gap)
                continue
            gap = last.bottom - ln.bottom if last is not None and last.flow == ln.flow else -1.0
            if ln.mono:
                if cur is not None and cur.kind == "code" and 0 < gap <= 2.8 * ln.size:
                    cur.lines.append(ln)  # blank lines inside code leave gaps of a line or two
                else:
                    blocks.append(_Blk("code", [ln]))
                continue
            bullet = bool(_BULLET.match(ln.text))
            if (
                cur is None
                or last is None
                or cur.kind in ("heading", "code", "table")
                or abs(last.size - ln.size) > 0.6
            ):
                blocks.append(_Blk("list" if bullet else "paragraph", [ln]))
            elif bullet and cur.kind == "list" and 0 < gap <= 2 * para_gap * ln.size:
                cur.lines.append(ln)  # the next item of a loosely spaced list
            elif 0 < gap <= para_gap * ln.size:
                if bullet and cur.kind == "paragraph":
                    blocks.append(_Blk("list", [ln]))
                else:
                    cur.lines.append(ln)
            elif first_of_flow and not bullet and not _SENTENCE_END.search(last.text):
                cur.lines.append(ln)  # sentence goes on in the next column or page
            else:
                blocks.append(_Blk("list" if bullet else "paragraph", [ln]))
    for b in blocks:
        # Larger type running over several lines is emphasis (an abstract, a quote), not a heading.
        if b.kind == "heading" and (len(b.lines) > 3 or sum(len(ln.text) for ln in b.lines) > 200):
            b.kind, b.level = "paragraph", 0
    return blocks


def _add_heading(blocks: list[_Blk], ln: Line, para_gap: float) -> None:
    """A heading line: the next line of the heading before it when that one wrapped, else a heading."""
    cur = blocks[-1] if blocks else None
    last = cur.lines[-1] if cur else None
    if (
        cur
        and last
        and cur.kind == "heading"
        and cur.level == ln.level
        and last.flow == ln.flow
        and 0 < last.bottom - ln.bottom <= para_gap * ln.size
    ):
        cur.lines.append(ln)  # a heading wrapped over two lines
    else:
        blocks.append(_Blk("heading", [ln], ln.level))


def _add_table(blocks: list[_Blk], lines: list[Line]) -> None:
    """A table block; a table going on at the top of the next page extends the previous one."""
    prev = blocks[-1] if blocks else None
    if (
        prev is not None
        and prev.kind == "table"
        and lines[0].page == prev.lines[-1].page + 1
        and pdf_tables.same_columns(prev.lines, lines)
    ):
        prev.lines.extend(lines)
    else:
        blocks.append(_Blk("table", list(lines)))


def _join(lines: list[Line], kind: BlockKind = "paragraph") -> tuple[str, list[int]]:
    """The block's text and where each line starts in it (hyphens repaired)."""
    if kind == "table":
        return pdf_tables.render(lines)
    out = lines[0].text
    offsets = [0]
    left = min(ln.x0 for ln in lines)
    for prev, ln in pairwise(lines):
        text = ln.text
        if kind == "code":
            # One line per line; indentation rebuilt from x (a fixed-pitch glyph is ~0.6 em).
            hyphen = "-" if prev.hyphen else ""  # PDFium took it for a word break; in code it is not
            out += hyphen + "\n" + " " * min(round((ln.x0 - left) / (0.6 * ln.size)), 40)
        elif prev.hyphen:
            pass
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and text[:1].islower():
            out = out[:-1]  # "infor-" + "mation": PDFium did not flag it, same repair
        elif kind == "list" and _BULLET.match(text):
            out += "\n"
        else:
            out += " "
        offsets.append(len(out))
        out += text
    return out, offsets


@dataclass(frozen=True)
class _Facts:
    """What the document says of itself besides its blocks."""

    page_count: int
    title: str
    title_from_meta: bool  # the file's metadata named it (else its first heading or first page did)
    meta: dict[str, str]


def _emit(
    blocks: list[_Blk],
    unmatched: dict[int, list[tuple[int, str]]],
    facts: _Facts,
    positions: list[WordPosition] | None = None,
) -> ParsedDocument:
    page_count, title, title_from_meta, meta = (
        facts.page_count,
        facts.title,
        facts.title_from_meta,
        facts.meta,
    )
    levels = Counter(b.level for b in blocks if b.kind == "heading")
    parts: list[str] = []
    out: list[Block] = []
    starts: list[int | None] = [None] * page_count
    stack: list[tuple[int, str]] = []
    pos = 0
    seen_heading = False
    next_page = 1

    def enter_page(pno: int) -> None:
        nonlocal next_page
        while next_page <= pno:
            for level, text in unmatched.get(next_page, []):
                while stack and stack[-1][0] >= level:
                    stack.pop()
                stack.append((level, text))
            next_page += 1

    for b in blocks:
        enter_page(b.lines[0].page)
        text, offsets = _join(b.lines, b.kind)
        if parts:
            parts.append("\n\n")
            pos += 2
        start = pos
        for ln, off in zip(b.lines, offsets, strict=True):
            if starts[ln.page - 1] is None:  # the first character taken from each page
                starts[ln.page - 1] = start + off
        if positions is not None:
            positions.extend(word_positions(b.lines, offsets, text, start, b.kind == "table"))
        parts.append(text)
        pos += len(text)
        trail: tuple[str, ...]
        if b.kind == "heading":
            is_title = (
                not seen_heading and norm(text) == norm(title) and (title_from_meta or levels[b.level] == 1)
            )
            seen_heading = True
            if is_title:
                trail = ()
            else:
                while stack and stack[-1][0] >= b.level:
                    stack.pop()
                stack.append((b.level, text))
                trail = tuple(t for _, t in stack)
        else:
            trail = tuple(t for _, t in stack)
        out.append(Block(b.kind, start, pos, trail, b.lines[0].page, b.lines[-1].page))
    full = "".join(parts)
    for i in range(page_count - 1, -1, -1):  # a page without text starts where the next one does
        starts[i] = (
            starts[i] if starts[i] is not None else (starts[i + 1] if i + 1 < page_count else len(full))
        )
    keep = ("author", "subject", "keywords", "creator", "producer", "creationdate", "moddate")
    return ParsedDocument(
        text=full,
        blocks=tuple(out),
        title=title,
        format="pdf",
        page_count=page_count,
        metadata={k: meta[k] for k in keep if meta.get(k)},
        page_starts=tuple(s or 0 for s in starts),
    )
