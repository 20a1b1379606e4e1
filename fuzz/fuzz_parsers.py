"""atheris: every parser (markdown, html, text, pdf, docx) on coverage-guided mutations of real
files, then chunking of what parsed. `python fuzz/fuzz_parsers.py -max_total_time=600 CORPUS`."""

from __future__ import annotations

import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["citeline"]):
    from citeline.chunking import Chunker, ChunkingOptions
    from citeline.embedding.hashing import HashingEmbedder
    from citeline.errors import CitelineError
    from citeline.ingest.formats.docx import DocxParser
    from citeline.ingest.formats.html import HtmlParser
    from citeline.ingest.formats.markdown import MarkdownParser
    from citeline.ingest.formats.pdf import PdfParser
    from citeline.ingest.formats.text import TextParser

PARSERS = [
    (MarkdownParser(), "f.md"),
    (HtmlParser(), "f.html"),
    (TextParser(), "f.txt"),
    (PdfParser(), "f.pdf"),
    (DocxParser(), "f.docx"),
]
EMBEDDER = HashingEmbedder()
CHUNKER = Chunker(
    EMBEDDER.count_tokens, ChunkingOptions(target_tokens=60, max_tokens=128), embed=EMBEDDER.embed
)
_MAGIC = {b"%PDF": 3, b"PK\x03\x04": 4}


def one_input(data: bytes) -> None:
    kind = next((k for magic, k in _MAGIC.items() if data.startswith(magic)), None)
    if kind is None:
        kind = data[0] % 3 if data else 0
    parser, name = PARSERS[kind]
    try:
        doc = parser.parse(data, Path(name))
    except CitelineError:
        return
    for b in doc.blocks:
        assert 0 <= b.start <= b.end <= len(doc.text), b
    for c in CHUNKER.chunk(doc, "fuzz0000000000"):
        assert c.text == doc.text[c.start : c.end]


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
