"""DOCX parser on python-docx: body elements in document order.

Headings come from paragraph styles ("Heading 1".."Heading 6", styles based on them,
an explicit outline level, "Title"), list paragraphs from numbering or "List" styles,
tables become Markdown-like rows. The zip's central directory is checked before
anything is decompressed, so a zip bomb is refused without being inflated. A member that lies
about its size in the directory is never inflated past the size it declares: the package is
re-read in bounded steps into an uncompressed copy, which python-docx reads (zipfile's own
``read()`` of a whole member inflates all of it in one call before cutting it to that size).
"""

from __future__ import annotations

import io
import textwrap
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import docx
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph
from lxml import etree

from citeline.errors import NoTextError, ParseError
from citeline.ingest.base import BaseParser
from citeline.ingest.blocks import assemble_blocks
from citeline.types import BlockKind, ParsedDocument

MAX_UNCOMPRESSED = 200 * 1024 * 1024
MAX_RATIO = 200  # real DOCX XML compresses 5-30x; hundreds means a bomb
MAX_ENTRIES = 10_000

_W_P, _W_TBL, _W_SDT, _W_SDT_CONTENT = qn("w:p"), qn("w:tbl"), qn("w:sdt"), qn("w:sdtContent")
_W_T, _W_TAB, _W_BR, _W_CR = qn("w:t"), qn("w:tab"), qn("w:br"), qn("w:cr")
_W_NBH = qn("w:noBreakHyphen")
_W_TR, _W_TC = qn("w:tr"), qn("w:tc")
# Text boxes are repeated in a VML fallback; field results are in w:t already.
_SKIP_IN_PARAGRAPH = (
    qn("w:txbxContent"),
    "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback",
)
_CODE_STYLES = ("code", "source", "preformatted", "macro text", "verbatim")


class DocxParser(BaseParser):
    format = "docx"
    extensions: tuple[str, ...] = (".docx",)

    def parse(self, data: bytes, path: Path) -> ParsedDocument:
        _check_zip(data, path)
        package = _bounded_copy(data, path)
        try:
            document = docx.Document(io.BytesIO(package))
        except Exception as exc:  # python-docx raises many types for a broken package
            raise ParseError(
                str(path), f"not a readable Word document ({type(exc).__name__}: {exc})"
            ) from None
        raw = list(_body_blocks(document))
        if not raw:
            raise NoTextError(str(path), "no text content")
        props = document.core_properties
        title = " ".join((props.title or "").split())
        title_known = bool(title)
        if not title:
            titles = [t for k, t, lvl in raw if k == "heading" and lvl == 0]
            firsts = [t for k, t, lvl in raw if k == "heading" and lvl == 1]
            title = titles[0] if titles else firsts[0] if firsts else path.stem
            title_known = bool(titles) or len(firsts) == 1
        return assemble_blocks(raw, title, title_known, _metadata(props), self.format)


def _check_zip(data: bytes, path: Path) -> None:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError):
        raise ParseError(str(path), "not a DOCX file (not a zip archive)") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > MAX_ENTRIES:
            raise ParseError(str(path), f"refused: the archive has {len(infos)} entries (zip bomb?)")
        total = sum(i.file_size for i in infos)
        if total > MAX_UNCOMPRESSED:
            raise ParseError(
                str(path),
                f"refused: {total // (1024 * 1024)} MB uncompressed, over the "
                f"{MAX_UNCOMPRESSED // (1024 * 1024)} MB limit (zip bomb?)",
            )
        for i in infos:
            if i.file_size > 1024 * 1024 and i.file_size > MAX_RATIO * max(i.compress_size, 1):
                raise ParseError(
                    str(path),
                    f"refused: {i.filename} expands {i.file_size // max(i.compress_size, 1)}x (zip bomb?)",
                )
        if "word/document.xml" not in zf.namelist():
            raise ParseError(str(path), "not a Word document (no word/document.xml in the archive)")


_STEP = 1 << 16  # bytes inflated per read: what one step of a lying member can cost


def _bounded_copy(data: bytes, path: Path) -> bytes:
    """The package again with every member stored (not compressed), each inflated in steps of
    _STEP bytes and never past the size the directory declares (already checked to be within
    MAX_UNCOMPRESSED): whatever python-docx then reads costs no inflating at all."""
    out = io.BytesIO()
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
            for info in src.infolist():
                if info.is_dir():
                    continue
                with src.open(info) as member:
                    parts = []
                    while chunk := member.read(_STEP):  # stops at the declared size; CRC checked
                        parts.append(chunk)
                dst.writestr(info.filename, b"".join(parts))
    except Exception as exc:  # zipfile and zlib raise many types for a broken archive (as python-docx)
        raise ParseError(str(path), f"not a readable Word document ({type(exc).__name__}: {exc})") from None
    return out.getvalue()


class _Styles:
    """(lower-case name, heading level) per paragraph style id, computed once: python-docx
    searches the whole styles part on every ``Paragraph.style`` access."""

    def __init__(self, document: Any) -> None:
        self.document = document
        self.cache: dict[str | None, tuple[str, int | None]] = {}

    def get(self, p: Any) -> tuple[str, int | None]:
        sid = p.style
        if sid not in self.cache:
            style = Paragraph(p, self.document).style
            name = ((style.name if style is not None else "") or "").strip().lower()
            self.cache[sid] = (name, _heading_level(style))
        return self.cache[sid]


def _heading_level(style: Any) -> int | None:
    """0 for Title, 1..6 for headings (or styles based on one), None for body text."""
    for _ in range(5):
        if style is None:
            return None
        name = (style.name or "").strip().lower()
        if name == "title":
            return 0
        if name.startswith("heading ") and name[8:].isdigit():
            return min(max(int(name[8:]), 1), 6)
        style = style.base_style
    return None


def _outline_level(p: Any) -> int | None:
    """An outline level set on the paragraph itself makes it a heading."""
    pPr = p.pPr
    lvl = pPr.find(qn("w:outlineLvl")) if pPr is not None else None
    val = lvl.get(qn("w:val")) if lvl is not None else None
    return min(int(val) + 1, 6) if val is not None and val.isdigit() and int(val) < 9 else None


def _paragraph_text(p: Any) -> str:
    parts: list[str] = []
    walker = etree.iterwalk(p, events=("start",))
    for _, el in walker:
        tag = el.tag
        if tag in _SKIP_IN_PARAGRAPH:
            walker.skip_subtree()
        elif tag == _W_T:
            parts.append(el.text or "")
        elif tag == _W_TAB:
            parts.append("\t")
        elif tag in (_W_BR, _W_CR):
            parts.append("\n")
        elif tag == _W_NBH:
            parts.append("-")
    return "".join(parts)


def _clean(s: str) -> str:
    lines = (" ".join(line.split()) for line in s.split("\n"))
    return "\n".join(line for line in lines if line)


def _list_level(p: Any, style: str) -> int | None:
    """Indent level for list paragraphs (numbering or a List style), else None."""
    pPr = p.pPr
    numPr = pPr.find(qn("w:numPr")) if pPr is not None else None
    if numPr is not None:
        ilvl = numPr.find(qn("w:ilvl"))
        val = ilvl.get(qn("w:val")) if ilvl is not None else "0"
        return int(val) if val and val.isdigit() else 0
    if not style.startswith("list"):
        return None
    # "List Bullet 2" and the like carry their level in the name.
    last = style.rsplit(" ", 1)[-1]
    return int(last) - 1 if last.isdigit() and int(last) > 0 else 0


def _table_text(tbl: Any) -> str:
    rows: list[list[str]] = []
    for tr in tbl.iterchildren(_W_TR):
        cells: list[str] = []
        for tc in tr.iterchildren(_W_TC):
            text = " ".join(_clean(_paragraph_text(p)).replace("\n", " ") for p in tc.iter(_W_P))
            cells.append(" ".join(text.split()).replace("|", "\\|"))
            span = tc.find(f"{qn('w:tcPr')}/{qn('w:gridSpan')}")
            val = span.get(qn("w:val")) if span is not None else None
            if val and val.isdigit():
                cells += [""] * (min(int(val), 50) - 1)
        if any(cells):
            rows.append(cells)
    if not rows:
        return ""
    ncols = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (ncols - len(r))) + " |" for r in rows]
    lines.insert(1, "| " + " | ".join(["---"] * ncols) + " |")
    return "\n".join(lines)


def _body_blocks(document: Any) -> Any:
    """Yield (kind, text, heading level) in document order; list and code runs are grouped."""
    body = document.element.body
    styles = _Styles(document)
    pending: tuple[BlockKind, list[str]] | None = None
    stack = [iter(body)]
    while stack:
        el = next(stack[-1], None)
        if el is None:
            stack.pop()
            continue
        if el.tag == _W_SDT:  # content control (e.g. a table of contents): read inside
            content = el.find(_W_SDT_CONTENT)
            if content is not None:
                stack.append(iter(content))
            continue
        item: tuple[BlockKind, str, int] | None = None
        group: tuple[BlockKind, str] | None = None
        if el.tag == _W_TBL:
            item = ("table", _table_text(el), 0)
        elif el.tag == _W_P:
            raw_text = _paragraph_text(el)
            style, level = styles.get(el)
            outline = _outline_level(el)
            level = outline if outline is not None else level
            if level is not None:
                item = ("heading", " ".join(raw_text.split()), level)
            elif any(s in style for s in _CODE_STYLES):
                group = ("code", raw_text.rstrip())
            elif (ilvl := _list_level(el, style)) is not None:
                text = " ".join(raw_text.split())
                group = ("list", "  " * min(ilvl, 8) + "- " + text if text else "")
            else:
                item = ("paragraph", _clean(raw_text), 0)
        else:
            continue
        if pending and (group is None or group[0] != pending[0]):
            yield from _flush(pending)
            pending = None
        if group is not None:
            if pending is None:
                pending = (group[0], [])
            pending[1].append(group[1])
        elif item is not None and item[1]:
            yield item
    if pending:
        yield from _flush(pending)


def _flush(pending: tuple[BlockKind, list[str]]) -> Any:
    kind, lines = pending
    if kind == "code":
        # Keep relative indentation; a block may not start or end with whitespace.
        text = textwrap.dedent("\n".join(lines).expandtabs(4)).strip()
    else:
        text = "\n".join(line for line in lines if line)
    if text:
        yield (kind, text, 0)


def _metadata(props: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in (
        "author",
        "last_modified_by",
        "subject",
        "keywords",
        "category",
        "language",
        "created",
        "modified",
    ):
        value = getattr(props, key, None)
        if isinstance(value, datetime):
            meta[key] = value.isoformat()
        elif isinstance(value, str) and value.strip():
            meta[key] = value.strip()
    return meta
