"""One place that knows which parser handles which file extension."""

from __future__ import annotations

import importlib
from pathlib import Path

from citeline.errors import UnsupportedFormatError
from citeline.ingest.base import Parser

# extension -> (module, class). Modules are imported on first use so that a broken
# optional parser never stops the others.
_PARSERS: dict[str, tuple[str, str]] = {
    ".md": ("citeline.ingest.markdown", "MarkdownParser"),
    ".markdown": ("citeline.ingest.markdown", "MarkdownParser"),
    ".txt": ("citeline.ingest.text", "TextParser"),
    ".text": ("citeline.ingest.text", "TextParser"),
    ".rst": ("citeline.ingest.text", "TextParser"),
    ".html": ("citeline.ingest.html", "HtmlParser"),
    ".htm": ("citeline.ingest.html", "HtmlParser"),
    ".pdf": ("citeline.ingest.pdf", "PdfParser"),
    ".docx": ("citeline.ingest.docx", "DocxParser"),
}

_cache: dict[str, Parser] = {}


def supported_extensions() -> tuple[str, ...]:
    return tuple(sorted(_PARSERS))


def parser_for(path: Path) -> Parser:
    ext = path.suffix.lower()
    if ext not in _PARSERS:
        raise UnsupportedFormatError(
            str(path),
            f"unsupported file type '{ext or '(none)'}'; supported: {', '.join(supported_extensions())}",
        )
    module_name, class_name = _PARSERS[ext]
    key = f"{module_name}.{class_name}"
    if key not in _cache:
        module = importlib.import_module(module_name)
        _cache[key] = getattr(module, class_name)()
    return _cache[key]
