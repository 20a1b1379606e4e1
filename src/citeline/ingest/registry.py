"""Which parser reads which file: looked up by extension in the backend registry."""

from __future__ import annotations

from pathlib import Path

from citeline.errors import UnsupportedFormatError
from citeline.ingest.base import Parser
from citeline.registry import registry

_cache: dict[str, Parser] = {}


def supported_extensions() -> tuple[str, ...]:
    return registry.extensions()


def parser_for(path: Path) -> Parser:
    ext = path.suffix.lower()
    backend = registry.parser_backend(ext)
    if backend is None:
        raise UnsupportedFormatError(
            str(path),
            f"unsupported file type '{ext or '(none)'}'; supported: {', '.join(supported_extensions())}",
        )
    if backend.name not in _cache:
        _cache[backend.name] = registry.create("parser", backend.name)
    return _cache[backend.name]
