"""HTML parser on lxml: main content only, as headings, paragraphs, lists, tables, code.

Every walk over the tree is iterative (lxml's C-level ``iterwalk``/``iter``), never
Python recursion, so pathological nesting cannot blow the stack. libxml2 itself stops
building the tree at 2,048 levels (it drops everything below); when that happens the
markup is flattened first (``_flatten``) so that no text is lost.
"""

from __future__ import annotations

import re
import textwrap
from html import escape
from html.parser import HTMLParser as _StdlibHTMLParser
from pathlib import Path
from typing import Any, cast

from lxml import etree
from lxml import html as lxml_html

from citeline.errors import NoTextError
from citeline.ingest.base import BaseParser
from citeline.ingest.blocks import TERM_LEVEL, RawKind, assemble_blocks
from citeline.ingest.decode import decode_bytes
from citeline.ingest.formats.manpage import man_page_blocks
from citeline.types import BlockKind, ParsedDocument

_SKIP_TAGS = frozenset(
    [
        "script",
        "style",
        "nav",
        "aside",
        "form",
        "noscript",
        "template",
        "iframe",
        "svg",
        "canvas",
        "button",
        "select",
        "input",
        "textarea",
        "object",
        "embed",
        "head",
        "title",
        "meta",
        "link",
        "dialog",
    ]
)
_SKIP_ROLES = frozenset(["navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar"])
# class/id words that mark site chrome; matched as whole words between - and _ so that
# e.g. DocBook's inline "menuchoice" is kept while "navheader" and "site-nav" go.
_BOILERPLATE = re.compile(
    r"(^|[-_])(nav|navbar|navheader|navfooter|navigation|menu|breadcrumbs?|sidebar|cookies?|"
    r"banner|advert|advertisement|ads|social|share|sharing|skip|toc|footer)([-_]|$)",
    re.IGNORECASE,
)
_BOILERPLATE_ID = re.compile(
    r"((site|main|top|page|global)[-_]?)?(nav|navbar|navigation|menu|sidebar|footer|header|"
    r"breadcrumbs?|toc|cookies?([-_]?banner)?)",
    re.IGNORECASE,
)
_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_CONTAINERS = frozenset(
    [
        "html",
        "body",
        "div",
        "section",
        "article",
        "main",
        "blockquote",
        "figure",
        "details",
        "center",
        "address",
        "fieldset",
        "header",
        "hgroup",
        "dl",
        "search",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "tr",
        "td",
        "th",
        "ul",
        "ol",
        "li",
        "hr",
    ]
)
_PARAGRAPHS = frozenset(["p", "dt", "dd", "figcaption", "caption", "summary", "legend"])
_SECTIONING = frozenset(("article", "main", "section"))
_LAYOUT_MARKERS = ("h1", "h2", "h3", "h4", "h5", "h6", "table", "pre", "ul", "ol")
_BR = "\x00"  # stands for <br> inside inline text; NULs are removed from the input first
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.IGNORECASE)
_MAX_DEPTH = 512


class HtmlParser(BaseParser):
    format = "html"
    extensions: tuple[str, ...] = (".html", ".htm")

    def parse(self, data: bytes, path: Path) -> ParsedDocument:
        text = _CONTROL.sub(" ", _decode(data, str(path)))
        root = _parse_tree(text)
        body = root.find("body") if root is not None else None
        if root is None or body is None:
            raise NoTextError(str(path), "no text content")
        title_el = root.find(".//title")
        title = " ".join(title_el.text_content().split()) if title_el is not None else ""
        content = _pick_content(body)
        walker = _Walker()
        walker.walk(content)
        # Nothing left: the main-content guess or the class/id heuristics were wrong.
        if not walker.blocks and content is not body:
            walker = _Walker()
            walker.walk(body)
        if not walker.blocks:
            walker = _Walker(by_name=False)
            walker.walk(body)
        if not walker.blocks:
            raise NoTextError(str(path), "no text content")
        h1s = [t for k, t, lvl in walker.blocks if k == "heading" and lvl == 1]
        title_from_tag = bool(title)
        if not title:
            title = h1s[0] if h1s else path.stem
        return assemble_blocks(
            walker.blocks, title, title_from_tag or len(h1s) == 1, _metadata(root), self.format
        )


def fragment_blocks(markup: str) -> list[tuple[RawKind, str, int]]:
    """The blocks of a piece of HTML (raw HTML inside Markdown), read as a page's content is, but
    with no element dropped for its class or id: the author of the Markdown put it there."""
    root = _parse_tree(_CONTROL.sub(" ", markup))
    body = root.find("body") if root is not None else None
    if body is None:
        return []
    walker = _Walker(by_name=False)
    walker.walk(body)
    return walker.blocks


def _decode(data: bytes, path: str) -> str:
    """The charset from <meta> (as browsers read it), then the shared decoding rules."""
    declared = None
    m = _META_CHARSET.search(data[:4096])
    if m:
        name = m.group(1).decode("ascii").lower()
        # As browsers do: a UTF-16 declaration in ASCII-readable bytes is a mistake,
        # and latin-1/ascii labels mean windows-1252.
        if name.startswith(("utf-16", "utf-32", "ucs-2")):
            name = "utf-8"
        elif name in {"iso-8859-1", "latin-1", "latin1", "us-ascii", "ascii"}:
            name = "cp1252"
        declared = name
    return decode_bytes(data, path, declared=declared, check_binary=False)


def _parse_tree(text: str) -> Any:
    root, too_deep = _lxml_parse(text)
    if too_deep:
        root, _ = _lxml_parse(_flatten(text))
    return root


def _lxml_parse(text: str) -> tuple[Any, bool]:
    """The <html> element (None for an empty document), and whether libxml2 hit its depth limit."""
    parser = lxml_html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True, encoding="utf-8")
    try:
        root = lxml_html.document_fromstring(text.encode("utf-8"), parser=parser)
    except (etree.ParserError, ValueError):
        return None, False
    return root, any("Excessive depth" in e.message for e in parser.error_log)


class _Flattener(_StdlibHTMLParser):
    """Re-serialises markup, dropping tags nested deeper than _MAX_DEPTH but keeping text."""

    VOID = frozenset(
        ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"]
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.stack: list[tuple[str, bool]] = []
        self.kept = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = "".join(f' {k}="{escape(v or "")}"' for k, v in attrs)
        if tag in self.VOID:
            self.out.append(f"<{tag}{attr}>")
            return
        keep = self.kept < _MAX_DEPTH
        self.stack.append((tag, keep))
        if keep:
            self.kept += 1
            self.out.append(f"<{tag}{attr}>")

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for name, keep in reversed(self.stack[i:]):
                    if keep:
                        self.kept -= 1
                        self.out.append(f"</{name}>")
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.out.append(escape(data, quote=False))


def _flatten(text: str) -> str:
    f = _Flattener()
    f.feed(text)
    f.close()
    return "".join(f.out)


def _pick_content(body: Any) -> Any:
    """<main> (or role=main), else the one <article>, else <body>."""
    for el in body.iter("main", "article", "div", "section"):
        if el.tag == "main" or el.get("role") == "main":
            return el
    articles = list(body.iter("article"))
    return articles[0] if len(articles) == 1 else body


def _is_skipped(el: Any, in_section: bool, by_name: bool = True) -> bool:
    tag = el.tag
    if tag in _SKIP_TAGS or (tag == "footer") or (tag == "header" and not in_section):
        return True
    if el.get("role") in _SKIP_ROLES or el.get("hidden") is not None or el.get("aria-hidden") == "true":
        return True
    style = el.get("style")
    if style and re.search(r"display\s*:\s*none", style):
        return True
    if not by_name:
        return False
    if any(_BOILERPLATE.search(n) for n in (el.get("class") or "").split()):
        return True
    # ids are often content anchors ("plpython-sharing"): only whole chrome names count.
    return bool(_BOILERPLATE_ID.fullmatch((el.get("id") or "").strip()))


def _clean(s: str) -> str:
    """Collapse whitespace; <br> becomes a single newline."""
    lines = (" ".join(part.split()) for part in s.split(_BR))
    return "\n".join(ln for ln in lines if ln)


def _inline(el: Any, stop: frozenset[str] = frozenset(), in_section: bool = True) -> tuple[str, list[Any]]:
    """The text of el's subtree; subtrees whose tag is in `stop` are returned, not read."""
    parts: list[str] = [el.text or ""]
    stopped: list[Any] = []
    walker = etree.iterwalk(el, events=("start", "end"))
    for event, node in walker:
        if node is el or not isinstance(node.tag, str):
            continue
        if event == "start":
            if node.tag in stop:
                stopped.append(node)
                walker.skip_subtree()
            elif _is_skipped(node, in_section):
                walker.skip_subtree()
            elif node.tag == "br":
                parts.append(_BR)
            else:
                parts.append(" " if node.tag in _CONTAINERS or node.tag in _PARAGRAPHS else "")
                parts.append(node.text or "")
        else:
            if node.tag in _CONTAINERS or node.tag in _PARAGRAPHS:
                parts.append(" ")
            parts.append(node.tail or "")
    return _clean("".join(parts)), stopped


def _list_text(lst: Any) -> str:
    lines: list[str] = []
    stack: list[tuple[Any, int]] = [(iter(lst), 0)]
    while stack:
        it, depth = stack[-1]
        child = next(it, None)
        if child is None:
            stack.pop()
            continue
        if not isinstance(child.tag, str) or _is_skipped(child, True):
            continue
        if child.tag in ("ul", "ol"):
            stack.append((iter(child), depth + 1))
            continue
        text, sublists = _inline(child, frozenset(("ul", "ol")))
        if text:
            lines.append("  " * min(depth, 8) + "- " + text.replace("\n", " "))
        for sub in reversed(sublists):
            stack.append((iter(sub), depth + 1))
    # Items may all sit in nested lists; the shallowest one starts at column 0.
    return textwrap.dedent("\n".join(lines))


def _is_layout_table(tbl: Any) -> bool:
    if tbl.get("role") in ("presentation", "none"):
        return True
    return any(el is not tbl for el in tbl.iter(*_LAYOUT_MARKERS))


def _table_text(tbl: Any) -> str:
    rows: list[list[str]] = []
    header_row = False  # the first row is a header only when all its cells are <th>
    walker = etree.iterwalk(tbl, events=("start",))
    for _, el in walker:
        if el is tbl or not isinstance(el.tag, str):
            continue
        if el.tag in ("table", "caption") or _is_skipped(el, True):
            walker.skip_subtree()
        elif el.tag == "tr":
            cells: list[str] = []
            if not rows:
                kinds = [c.tag for c in el if c.tag in ("td", "th")]
                header_row = bool(kinds) and all(k == "th" for k in kinds)
            for cell in el:
                if cell.tag in ("td", "th"):
                    text = _inline(cell)[0].replace("\n", " ").replace("|", "\\|")
                    span = cell.get("colspan") or "1"
                    cells += [text] + [""] * (min(int(span), 50) - 1 if span.isdigit() and span != "0" else 0)
            if any(cells):
                rows.append(cells)
            walker.skip_subtree()
    if not rows:
        return ""
    ncols = max(len(r) for r in rows)
    lines = ["| " + " | ".join(r + [""] * (ncols - len(r))) + " |" for r in rows]
    if header_row:
        lines.insert(1, "| " + " | ".join(["---"] * ncols) + " |")
    return "\n".join(lines)


def _pre_text(el: Any) -> str:
    return "".join(el.itertext()).replace("\r\n", "\n").replace(_BR, "")


class _Walker:
    """Turns a content subtree into (kind, text, heading level) blocks in document order."""

    def __init__(self, by_name: bool = True) -> None:
        self.by_name = by_name  # drop elements whose class/id names site chrome
        self.blocks: list[tuple[RawKind, str, int]] = []
        self.buf: list[str] = []
        self.lists = 0  # open <dl> elements: their terms open sections that end with the list

    def add(self, kind: RawKind, text: str, level: int = 0) -> None:
        if text:
            self.blocks.append((kind, text, level))

    def flush(self) -> None:
        if self.buf:
            self.add("paragraph", _clean("".join(self.buf)))
            self.buf.clear()

    def walk(self, root: Any) -> None:
        sections = 0
        walker = etree.iterwalk(root, events=("start", "end"))
        for event, el in walker:
            tag = el.tag
            if not isinstance(tag, str):
                continue
            if event == "end":
                if tag in _SECTIONING:
                    sections -= 1
                self.end(el, el is root)
                continue
            if tag in _SECTIONING:
                sections += 1
            if tag == "dl" and el is not root:
                self.lists += 1  # counted like sections: a skipped subtree still ends
            if el is not root and _is_skipped(el, sections > 0 or root.tag in _SECTIONING, self.by_name):
                walker.skip_subtree()
                continue
            if tag in _CONTAINERS or tag in _PARAGRAPHS or tag in _HEADINGS or tag == "pre":
                self.flush()
            manual = man_page_blocks(_pre_text(el)) if tag == "pre" else None
            if manual:  # a manual page in one <pre>: its sections and paragraphs
                for kind, text, level in manual:
                    self.add(cast(BlockKind, kind), text, level)
                walker.skip_subtree()
                continue
            whole = self.whole(el)
            if whole is not None:
                kind, text, level = whole
                self.add(kind, text, level)
                walker.skip_subtree()
            elif tag == "br":
                self.buf.append(_BR)
            else:
                self.buf.append(el.text or "")

    def end(self, el: Any, is_root: bool) -> None:
        """The element is read: its block ends, a definition list's level closes, its tail follows."""
        tag = el.tag
        if tag in _CONTAINERS or tag in _PARAGRAPHS or tag in _HEADINGS or tag == "pre":
            self.flush()
        if tag == "dl" and not is_root:
            self.blocks.append(("end", "", TERM_LEVEL + self.lists))
            self.lists -= 1
        if not is_root:
            self.buf.append(el.tail or "")

    def whole(self, el: Any) -> tuple[RawKind, str, int] | None:
        """Elements read as one block, or None for containers and inline elements."""
        tag = el.tag
        if tag in _HEADINGS:
            return "heading", _inline(el)[0].replace("\n", " "), _HEADINGS[tag]
        if tag == "dt" and self.lists:
            return "term", _inline(el)[0], TERM_LEVEL + self.lists
        if tag in _PARAGRAPHS:
            return "paragraph", _inline(el)[0], 0
        if tag == "pre":
            return "code", textwrap.dedent(_pre_text(el)).strip(), 0
        if tag in ("ul", "ol"):
            return "list", _list_text(el), 0
        if tag == "table" and not _is_layout_table(el):
            caption = el.find("caption")
            if caption is not None:
                self.add("paragraph", _inline(caption)[0])
            return "table", _table_text(el), 0
        return None


def _metadata(root: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    lang = root.get("lang")
    if lang:
        meta["lang"] = lang
    for el in root.iter("meta"):
        name = (el.get("name") or el.get("property") or "").lower()
        content = " ".join((el.get("content") or "").split())
        if name in ("author", "description", "keywords", "og:title", "og:site_name") and content:
            meta[name.replace("og:", "og_")] = content
    for el in root.iter("link"):
        if (el.get("rel") or "").lower() == "canonical" and el.get("href"):
            meta["canonical"] = el.get("href")
    return meta
