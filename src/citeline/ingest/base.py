"""The parser contract: bytes of one file in, a ParsedDocument out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from citeline.types import ParsedDocument

if TYPE_CHECKING:
    from citeline.build_context import BuildContext


class Parser(Protocol):
    """Parses one format. Raise ``citeline.errors.ParseError`` with a reason on bad input."""

    format: str
    extensions: tuple[str, ...]

    def parse(self, data: bytes, path: Path) -> ParsedDocument: ...


class BaseParser:
    """Built by the registry like every backend: ``Parser(context, argument)``; parsers need neither."""

    def __init__(self, context: BuildContext | None = None, argument: str | None = None) -> None:
        self.context = context
