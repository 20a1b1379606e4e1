"""PDF pages for the web page: a page rendered to PNG, and the boxes of a cited span on it.

Both read the original bytes kept in the store. Boxes come from the word positions of a fresh
parse (ingest/formats/pdf_positions.py), cached per content hash; they are fractions of the page's
width and height measured from its top-left corner, so the browser scales them with the image.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from citeline.errors import CitelineError
from citeline.ingest.formats.pdf import PdfParser
from citeline.ingest.formats.pdf_positions import PDFIUM_LOCK, WordPosition
from citeline.jsonable import Jsonable, json_spec
from citeline.types import ParsedDocument

MAX_SCALE = 3.0
_CACHE_SIZE = 8


def parse_with_positions(
    data: bytes, name: str = "document.pdf"
) -> tuple[ParsedDocument, list[WordPosition]]:
    """Parse a PDF as ingestion does, also returning every word's position."""
    parser = PdfParser()
    parser.positions = []
    parsed = parser.parse(data, Path(name))
    return parsed, parser.positions


@dataclass(frozen=True)
class Box(Jsonable):
    """A rectangle on a page: fractions of its width/height from the top-left corner."""

    x: float = field(metadata=json_spec(digits=5))
    y: float = field(metadata=json_spec(digits=5))
    w: float = field(metadata=json_spec(digits=5))
    h: float = field(metadata=json_spec(digits=5))


class PositionCache:
    """Word positions of recently shown PDFs, by content hash (a parse costs ~10 ms per page)."""

    def __init__(self, size: int = _CACHE_SIZE) -> None:
        self._items: OrderedDict[str, list[WordPosition] | None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def get(self, content_hash: str, data: bytes, stored_text: str) -> list[WordPosition] | None:
        """The positions, or None when a parse today does not give the stored text."""
        with self._lock:
            if content_hash in self._items:
                self._items.move_to_end(content_hash)
                return self._items[content_hash]
        try:
            parsed, positions = parse_with_positions(data)
            found: list[WordPosition] | None = positions if parsed.text == stored_text else None
        except CitelineError:
            found = None
        with self._lock:
            self._items[content_hash] = found
            while len(self._items) > self._size:
                self._items.popitem(last=False)
        return found


def page_count(data: bytes) -> int:
    import pypdfium2 as pdfium

    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            return len(pdf)
        finally:
            pdf.close()


def render_png(data: bytes, page: int, scale: float = 1.5) -> bytes:
    """Page ``page`` (1-based) as a PNG at ``scale`` (1 = 72 dpi)."""
    import pypdfium2 as pdfium

    scale = min(max(scale, 0.25), MAX_SCALE)
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            if not 1 <= page <= len(pdf):
                raise CitelineError(f"The document has {len(pdf)} pages; page {page} does not exist.")
            pdf_page = pdf[page - 1]
            try:
                bitmap = pdf_page.render(scale=scale, rev_byteorder=True)
                pixels = bitmap.to_numpy()
                width, height = bitmap.width, bitmap.height
            finally:
                pdf_page.close()
        finally:
            pdf.close()
    channels = pixels.shape[2] if pixels.ndim == 3 else 1
    rows = pixels.reshape(height, width * channels)
    return _png(rows.tobytes(), width, height, channels)


def _png(raw: bytes, width: int, height: int, channels: int) -> bytes:
    color = {1: 0, 3: 2, 4: 6}[channels]
    stride = width * channels
    body = b"".join(b"\x00" + raw[y * stride : (y + 1) * stride] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(body, 6))
        + chunk(b"IEND", b"")
    )


def span_boxes(data: bytes, positions: list[WordPosition], page: int, start: int, end: int) -> list[Box]:
    """The boxes of the characters of ``[start, end)`` (code points of the stored text) on ``page``:
    one box per run of characters on one line."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    words = [p for p in positions if p.page == page and p.start < end and p.start + p.length > start]
    if not words:
        return []
    boxes: list[tuple[float, float, float, float]] = []  # left, right, bottom, top in PDF points
    with PDFIUM_LOCK:
        pdf = pdfium.PdfDocument(data)
        try:
            pdf_page = pdf[page - 1]
            try:
                width, height = pdf_page.get_size()
                tp = pdf_page.get_textpage()
                try:
                    rect = pdfium_c.FS_RECTF()
                    for w in words:
                        first = w.char + max(start - w.start, 0)
                        last = w.char + min(end, w.start + w.length) - w.start - 1
                        pdfium_c.FPDFText_GetLooseCharBox(tp.raw, first, ctypes.byref(rect))
                        left, bottom, top = rect.left, rect.bottom, rect.top
                        pdfium_c.FPDFText_GetLooseCharBox(tp.raw, last, ctypes.byref(rect))
                        boxes.append((left, rect.right, min(bottom, rect.bottom), max(top, rect.top)))
                finally:
                    tp.close()
            finally:
                pdf_page.close()
        finally:
            pdf.close()
    merged: list[list[float]] = []
    for left, right, bottom, top in boxes:
        last_box = merged[-1] if merged else None
        if last_box is not None:
            overlap = min(last_box[3], top) - max(last_box[2], bottom)
            em = max(top - bottom, 1.0)
            if overlap > 0.5 * em and -0.5 * em <= left - last_box[1] <= 2.0 * em:
                last_box[1] = max(last_box[1], right)
                last_box[2], last_box[3] = min(last_box[2], bottom), max(last_box[3], top)
                continue
        merged.append([left, right, bottom, top])
    return [
        Box(left / width, (height - top) / height, (right - left) / width, (top - bottom) / height)
        for left, right, bottom, top in merged
    ]
