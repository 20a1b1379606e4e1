"""The parser contract: bytes of one file in, a ParsedDocument out."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from citeline.models import ParsedDocument


class Parser(Protocol):
    """Parses one format. Raise ``citeline.errors.ParseError`` with a reason on bad input."""

    format: str
    extensions: tuple[str, ...]

    def parse(self, data: bytes, path: Path) -> ParsedDocument: ...
