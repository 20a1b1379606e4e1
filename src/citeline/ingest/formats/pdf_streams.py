"""Decompression bombs in PDF streams, refused before PDFium inflates them.

A PDF's content streams, images and object streams are usually FlateDecode (zlib). A 1 MB file can
hold a stream that inflates to 1 GB: PDFium would take gigabytes of memory and seconds per page to
read it (measured: 2 GB and 5 s for one such page). :func:`check_streams` inflates every Flate
stream once, in pieces, counting and discarding the output, and stops at the first stream that
expands beyond ``MAX_STREAM``, or beyond ``RATIO_FLOOR`` at more than ``MAX_STREAM_RATIO`` times its
compressed size (zlib cannot do much better than 1000x: only degenerate data gets there), or when
all streams together expand beyond ``MAX_TOTAL`` *and* ``MAX_RATIO`` times the file's size (large
scanned PDFs legitimately expand a lot in total, never a thousandfold).
"""

from __future__ import annotations

import re
import zlib

from citeline.errors import ParseError

MAX_STREAM = 128 * 1024 * 1024
RATIO_FLOOR = 32 * 1024 * 1024
MAX_STREAM_RATIO = 500
MAX_TOTAL = 512 * 1024 * 1024
MAX_RATIO = 200
_PIECE = 64 * 1024
_OUT = 4 * 1024 * 1024

# the keyword that starts a stream's data, after its dictionary
_STREAM = re.compile(rb"(?<![A-Za-z])stream\r?\n")
_OBJ = re.compile(rb"(?<!\d)\d++\s++\d++\s++obj\b")


def _dictionary(data: bytes, stream_at: int) -> bytes:
    """The bytes from the object header before ``stream_at`` (at most 4 KB back) to the keyword."""
    window = data[max(0, stream_at - 4096) : stream_at]
    starts = [m.start() for m in _OBJ.finditer(window)]
    return window[starts[-1] :] if starts else window


def inflate_count(data: bytes, start: int, limit: int) -> tuple[int, int]:
    """(bytes inflated, compressed bytes read) of the zlib stream at ``data[start:]``, stopping once
    more than ``limit`` came out or the ratio test of the module docstring fails (a corrupt stream
    counts what inflated before the error: PDFium reports the rest)."""
    d = zlib.decompressobj()
    size = consumed = 0
    pos = start
    pending = b""
    while size <= limit:
        if not pending:
            if pos >= len(data) or d.eof:
                break
            pending = data[pos : pos + _PIECE]
            pos += _PIECE
        fed = len(pending)
        try:
            out = d.decompress(pending, _OUT)
        except zlib.error:
            break
        size += len(out)
        pending = d.unconsumed_tail
        consumed += fed - len(pending)
        if d.eof or (size > RATIO_FLOOR and size > MAX_STREAM_RATIO * max(consumed, 1)):
            break
    return size, consumed


def check_streams(data: bytes, source: str) -> None:
    """ParseError when a Flate stream of the PDF is a decompression bomb."""
    total = 0
    for m in _STREAM.finditer(data):
        head = _dictionary(data, m.start())
        if b"/FlateDecode" not in head and b"/Fl " not in head and b"/Fl/" not in head:
            continue
        size, consumed = inflate_count(data, m.end(), MAX_STREAM)
        if size > MAX_STREAM or (size > RATIO_FLOOR and size > MAX_STREAM_RATIO * max(consumed, 1)):
            raise ParseError(
                source,
                f"refused: a stream inflates to over {size // 1048576} MB from "
                f"{max(consumed, 1) // 1024} KB (decompression bomb?)",
            )
        total += size
        if total > MAX_TOTAL and total > MAX_RATIO * len(data):
            raise ParseError(
                source,
                f"refused: its streams inflate to over {total // 1048576} MB, {total // max(len(data), 1)}x "
                "the file's size (decompression bomb?)",
            )
