"""Markdown via markdown-it-py: headings build the trail; code fences and tables stay whole.

The stored text is the Markdown source itself, so every span quotes what the user wrote, except
for raw HTML a reader never sees as written (citeline.ingest.formats.markdown_html): HTML comments are
left out, and an HTML table is stored as a pipe table.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from mdit_py_plugins.front_matter import front_matter_plugin

from citeline.errors import NoTextError
from citeline.ingest.base import BaseParser
from citeline.ingest.decode import decode_text
from citeline.ingest.formats.markdown_html import html_edits, strip_comments
from citeline.types import Block, BlockKind, ParsedDocument

_KINDS: dict[str, BlockKind] = {
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "table_open": "table",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "paragraph",
    "html_block": "paragraph",
}

_md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)


def _line_offsets(text: str) -> list[int]:
    return [0, *(m.end() for m in re.finditer("\n", text)), len(text)]


def _front_matter(content: str, path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(content)
    except yaml.YAMLError:
        return {}  # a broken header is not worth losing the document over
    return data if isinstance(data, dict) else {}


class MarkdownParser(BaseParser):
    format = "markdown"
    extensions = (".md", ".markdown")

    def parse(self, data: bytes, path: Path) -> ParsedDocument:
        source = decode_text(data, str(path))
        lines = _line_offsets(source)
        tokens = _md.parse(source)
        edits = html_edits(source, tokens, lines)
        text = edits.text
        blocks: list[Block] = []
        trail: list[tuple[int, str]] = []  # (level, heading text)
        metadata: dict[str, Any] = {}
        first_h1: str | None = None
        replaced_until = -1  # the end of the HTML table region being stored as its blocks
        for i, tok in enumerate(tokens):
            if tok.level != 0 or tok.map is None:
                continue
            start, end = lines[tok.map[0]], lines[min(tok.map[1], len(lines) - 1)]
            if start < replaced_until:
                continue
            if start in edits.regions:
                region = edits.regions[start]
                replaced_until, base = region.end, edits.at(region.start)
                headings = tuple(h for _, h in trail)
                blocks += [Block(kind, base + a, base + b, headings) for kind, a, b in region.blocks]
                continue
            start, end = edits.at(start), edits.at(end)
            if tok.type == "front_matter":
                metadata = _front_matter(tok.content, path)
                continue
            if tok.type == "heading_open":
                level = int(tok.tag[1])
                heading = strip_comments(tokens[i + 1].content).strip()
                while trail and trail[-1][0] >= level:
                    trail.pop()
                trail.append((level, heading))
                if level == 1 and first_h1 is None:
                    first_h1 = heading
                kind: BlockKind = "heading"
            elif tok.type in _KINDS:
                kind = _KINDS[tok.type]
            else:
                continue
            # Trim the line span to its visible text so quotes carry no stray whitespace.
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1].isspace():
                end -= 1
            if end > start:
                blocks.append(Block(kind, start, end, tuple(h for _, h in trail)))
        if not any(b.kind != "heading" for b in blocks):
            raise NoTextError(str(path), "the file has no text to index (empty or headings only)")
        title = str(metadata.get("title") or first_h1 or path.stem)
        # Keep front matter values JSON-friendly (dates become strings).
        meta = {
            str(k): v if isinstance(v, str | int | float | bool | list) else str(v)
            for k, v in metadata.items()
        }
        return ParsedDocument(text=text, blocks=tuple(blocks), title=title, format=self.format, metadata=meta)
