"""Manual pages rendered as one preformatted block (man2html, Postfix's own HTML pages): read as
sections and paragraphs instead of one code block.

A <pre> is a manual page when it has at least two section headers at column 0 (NAME, SYNOPSIS,
DESCRIPTION...). Sections become headings, indented captions sub-headings, and each paragraph one
block of reflowed text: justified double spaces collapsed, words hyphenated across a line break
joined ("delet-" + "ing" = "deleting"), and an option's term joined to its description
("-f: Flush the queue..."). The page's running title lines (POSTQUEUE(1) ...) are dropped.
"""

from __future__ import annotations

import re

Block = tuple[str, str, int]  # (kind, text, heading level)

_SECTION = re.compile(r"^[A-Z][A-Z0-9 /&_-]{1,40}$")
_KNOWN = frozenset(
    "NAME SYNOPSIS DESCRIPTION OPTIONS ARGUMENTS COMMANDS DIAGNOSTICS ENVIRONMENT FILES BUGS "
    "EXAMPLES EXAMPLE SEE ALSO LICENSE AUTHOR AUTHORS HISTORY CONFIGURATION PARAMETERS".split()
)
# The running title: "POSTQUEUE(1)    POSTQUEUE(1)" (maybe with a caption between, after a wide
# gap) or a lone "POSTQUEUE(1)"; not a paragraph that opens with a page's name ("posttls-finger(1)
# connects to the specified destination and reports ..."), which was dropped as one.
_TITLE = r"[\w.+-]+\(\d\w*\)"
_RUNNING_TITLE = re.compile(rf"^\s*{_TITLE}(?:\s{{2,}}(?:\S.*\S\s{{2,}})?{_TITLE})?\s*$")
_GAP = re.compile(r"\s{3,}")
# The running foot of a page rendered to text: "Debian     May 3, 2024     Debian", at column 0
_RUNNING_FOOT = re.compile(r"^\S(?:.*?\S)?\s{3,}\S(?:.*?\S)?\s{3,}\S.*$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def is_man_page(text: str) -> bool:
    headers = [
        ln.strip() for ln in text.splitlines() if ln and not ln[0].isspace() and _SECTION.match(ln.strip())
    ]
    known = [h for h in headers if set(h.split()) & _KNOWN]
    return len(known) >= 2


def _join(lines: list[str]) -> str:
    out = ""
    for line in (ln.strip() for ln in lines):
        if not out:
            out = line
        elif re.search(r"[a-z]-$", out) and line[:1].islower():
            out = out[:-1] + line  # a word the formatter hyphenated at the line end
        else:
            out += " " + line
    return re.sub(r"(?<=\S) {2,}(?=\S)", " ", out)


def _paragraph(lines: list[str]) -> str:
    """One paragraph; an option's term (a first line shallower than the lines below it, or a
    single token followed by a wide gap) is joined to its description with a colon."""
    first = lines[0].strip()
    rest = lines[1:]
    hanging = not rest or _indent(rest[0]) > _indent(lines[0])
    parts = _GAP.split(first, maxsplit=1)
    if len(parts) == 2 and " " not in parts[0] and hanging:
        return f"{parts[0]}: {_join([parts[1], *rest])}"
    if rest and hanging and len(first) < 60:
        return f"{first.rstrip(':')}: {_join(rest)}"
    return _join(lines)


# A bulleted line: "•   X11Forwarding yes" (mandoc's bullet), "-   item", "*   item"
_BULLET = re.compile(r"^\s*[•*-]\s+\S")


def _bullets(lines: list[str]) -> str:
    """A bulleted list, one "- item" line per bullet (continuation lines joined to their item)."""
    items: list[list[str]] = []
    for line in lines:
        if _BULLET.match(line) and (not items or _indent(line) <= _indent(lines[0])):
            items.append([line.strip()[1:]])
        else:
            items[-1].append(line)
    return "\n".join(f"- {_join(item)}" for item in items)


def man_page_blocks(text: str) -> list[Block] | None:
    """The blocks of a manual page, or None when ``text`` is not one."""
    if not is_man_page(text):
        return None
    blocks: list[Block] = []
    para: list[str] = []

    def flush() -> None:
        if para and all(_BULLET.match(line) for line in para if _indent(line) <= _indent(para[0])):
            blocks.append(("list", _bullets(para), 0))
        elif para:
            blocks.append(("paragraph", _paragraph(para), 0))
        para.clear()

    for line in text.splitlines():
        if not line.strip():
            flush()
            continue
        if (_RUNNING_TITLE.match(line) or _RUNNING_FOOT.match(line)) and not para:
            continue
        indent = _indent(line)
        stripped = line.strip()
        if indent == 0 and _SECTION.match(stripped):
            flush()
            blocks.append(("heading", stripped.title() if stripped.isupper() else stripped, 2))
        elif 0 < indent < 6 and not para and len(stripped) < 80:
            flush()
            blocks.append(("heading", stripped.rstrip(":"), 3))
        else:
            para.append(line)
    flush()
    return blocks
