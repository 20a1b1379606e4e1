"""Table detection for the PDF parser: runs of lines whose words fall into aligned cells.

The parser records, for a line whose words are split by wide gaps (over about an em and
well above the line's other word spaces; pieces on one baseline joined by the reading
order count too), the pieces between those gaps (`Cell`: x extent, where its text
starts in the line, fixed-pitch or not). A table is a run of at least two such lines in
one flow (same page and column, no heading among them), whose pieces fall into at least
two columns with an empty channel between them, every column aligned (left, right or
centred) across its cells. One-piece lines may sit among the rows: a wrapped cell.

Detection is deliberately conservative: a layout that merely looks tabular (prose set in
columns or beside a figure or listing, bullets or numbers before text, "Key:  value"
labels, a table of contents or an index, numbered code, equation numbers, a justified
paragraph whose wide spaces happen to line up) is left to the ordinary paragraphs.

A table is rendered as Markdown-like rows, header row first ("| a | b |", then a
"| --- |" rule), as the DOCX and HTML parsers do. A table that goes on at the top of the
next page with the same columns extends the same block (page..page_end), dropping a
header row the new page repeats. Known limits: without ruling lines, which line of a
multi-line row a cell belongs to is a guess (cells centred on wrapped text may land in
the row above); a page holding nothing but a two-column table can still be taken for
two text columns by the parser's column detection, which runs first.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from itertools import pairwise
from typing import Literal, Protocol

# x0, x1, where the piece's text starts in its line's text, set in a fixed-pitch font.
Cell = tuple[float, float, int, bool]
# A run of lines is a table, or not (a shorter run from its next line may be), or some
# other layout all through (prose, a list, an index...: no need to look inside it again).
_Verdict = Literal["table", "retry", "layout"]

CELL_GAP = 1.0  # em: a gap this wide may separate cells (a word space is ~0.3 em) ...
CELL_GAP_RATIO = 3.0  # ... when it is also this many times the line's other word gaps
_MAX_PITCH = 4.0  # font sizes between consecutive baselines of a table (padded rows)
_WRAP_PITCH = 1.6  # at most this for a single-piece line continuing a wrapped cell
_MIN_PITCH = 0.9  # closer baselines: cells centred on wrapped text, or two flows side by side
_CHANNEL = 0.8  # font sizes: narrowest empty channel between two columns
_ALIGN = 0.5  # font sizes: how far cell edges of one column may stray from each other

_MARKER = re.compile(r"^([•◦▪‣∙·●○■□–*-]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)]|[ivxlc]{1,5}[.)])$")
_PAGE_NO = re.compile(r"^(\d{1,4}|[ivxlcdm]{1,7})$", re.IGNORECASE)
_SECTION_START = re.compile(r"^(\d|[IVX]+\b|[A-Z](\.\d)+|chapter|appendix|section|part)", re.IGNORECASE)
_EQUATION_NO = re.compile(r"^\(\d+(\.\d+)*[a-z]?\)$")
_LEADER = re.compile(r"(\. ?){4,}|[.·…_]{3,}\s*\S*$")  # dot leaders: ". . . . 12", "..... 12"
_RUNNING = re.compile(r"([,:]|,\s*\d{1,5})$")  # "word," in running text, "term, 12" in an index


class TableLine(Protocol):
    """What detection needs of the parser's line records."""

    text: str
    x0: float
    x1: float
    bottom: float
    size: float
    page: int
    flow: int
    level: int
    mono: bool
    cells: tuple[Cell, ...]


def pieces(ln: TableLine) -> tuple[Cell, ...]:
    """The line's cells; a line without wide gaps is one cell."""
    return ln.cells or ((ln.x0, ln.x1, 0, ln.mono),)


def cell_texts(ln: TableLine) -> list[str]:
    cells = pieces(ln)
    ends = [c[2] for c in cells[1:]] + [len(ln.text)]
    return [ln.text[c[2] : end].strip() for c, end in zip(cells, ends, strict=True)]


def gap_cells(
    ln: TableLine, words: list[str], gaps: list[tuple[float, float, int]], spacing: tuple[float, int]
) -> tuple[Cell, ...]:
    """A line's pieces between the gaps (x0, x1, index of the word after) that are well
    above its other word gaps (sum, count): a justified line stretches every space alike."""
    total, count = spacing
    widths = [g[1] - g[0] for g in gaps]
    if not count and len(gaps) >= 2 and max(widths) - min(widths) <= 0.3 * ln.size:
        return ()  # only wide spaces, all alike: a justified line, not a row of one-word cells
    keep = [g for g, w in zip(gaps, widths, strict=True) if not count or w >= CELL_GAP_RATIO * total / count]
    if not keep:
        return ()
    starts = [0]
    for w in words[:-1]:
        starts.append(starts[-1] + len(w) + 1)
    cells: list[Cell] = []
    x0, start = ln.x0, 0
    for gx0, gx1, word in keep:
        cells.append((x0, gx0, start, ln.mono))
        x0, start = gx1, starts[word]
    cells.append((x0, ln.x1, start, ln.mono))
    return tuple(cells)


def find_tables(lines: Sequence[TableLine]) -> list[tuple[int, int]]:
    """[start, end) ranges of `lines` (one page in reading order) that are tables."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if len(lines[i].cells) < 2 or lines[i].level:
            i += 1  # most lines: one piece, nothing to look at
            continue
        end, cols = _grow(lines, i)
        verdict = _judge(lines[i:end], cols)
        if verdict == "table" and _inside_paragraph(lines, i, end):
            verdict = "layout"
        if verdict == "table":
            out.append((i, end))
        i = i + 1 if verdict == "retry" else end
    return out


def _inside_paragraph(lines: Sequence[TableLine], i: int, end: int) -> bool:
    """The run sits in running text: the lines above and below are at its line pitch and
    in its frame (same left edge, no wider). A justified paragraph whose wide spaces line
    up by chance; a table between paragraphs is narrower than they are, or set apart."""
    if i == 0 or end >= len(lines):
        return False
    span, before, after = lines[i:end], lines[i - 1], lines[end]
    size = span[0].size
    pitch = statistics.median(a.bottom - b.bottom for a, b in pairwise(span))
    x0, x1 = min(ln.x0 for ln in span), max(ln.x1 for ln in span)
    return all(
        ln.flow == span[0].flow
        and abs(ln.x0 - x0) <= 2 * size
        and ln.x1 <= x1 + 2 * size
        and abs(gap - pitch) < 0.15 * size
        for ln, gap in ((before, before.bottom - span[0].bottom), (after, span[-1].bottom - after.bottom))
    )


def _grow(lines: Sequence[TableLine], i: int) -> tuple[int, list[tuple[float, float]]]:
    """The longest run from line i whose rows keep to one set of columns."""
    rows = [lines[i].cells]
    cols = _columns(rows, lines[i].size)
    end = i + 1
    for k in range(i + 1, len(lines)):
        prev, ln = lines[k - 1], lines[k]
        gap = prev.bottom - ln.bottom
        if ln.flow != prev.flow or ln.level or not 0 < gap <= _MAX_PITCH * max(prev.size, ln.size):
            break
        if len(ln.cells) >= 2:
            rows.append(ln.cells)
            cand = _add_row(cols, ln.cells, ln.size)
            if cand is None:  # columns merge: fine unless a row then has two cells in one
                cand = _columns(rows, ln.size)
                if not all(_fits(r, cand) for r in rows):
                    break  # the row bridges two columns: the table ended above it
            cols, end = cand, k + 1
            continue
        col = _slot_of(ln.x0, ln.x1, cols, ln.size)
        if gap > _WRAP_PITCH * ln.size or col < 0:
            break
        if col > 0:
            end = k + 1  # a wrapped cell; a line in the first column only counts if rows follow
    return end, cols


def _columns(rows: Sequence[Sequence[Cell]], size: float) -> list[tuple[float, float]]:
    """Columns: the union of all cells' x extents, split where an empty channel runs down."""
    spans = sorted((c[0], c[1]) for row in rows for c in row)
    cols: list[tuple[float, float]] = []
    for x0, x1 in spans:
        if cols and x0 - cols[-1][1] < _CHANNEL * size:
            cols[-1] = (cols[-1][0], max(cols[-1][1], x1))
        else:
            cols.append((x0, x1))
    return cols


def _add_row(
    cols: list[tuple[float, float]], cells: Sequence[Cell], size: float
) -> list[tuple[float, float]] | None:
    """The columns widened by a row's cells (new columns where a cell meets none): the
    quick way to the union `_columns` gives. None where that would merge columns (a cell
    reaching two, two cells reaching one, columns widened into each other)."""
    reach = _CHANNEL * size
    new = list(cols)
    hit: set[int] = set()
    for x0, x1, _, _ in cells:
        near = [j for j, (a, b) in enumerate(cols) if x0 - b < reach and a - x1 < reach]
        if len(near) > 1 or (near and near[0] in hit):
            return None
        if near:
            j = near[0]
            hit.add(j)
            new[j] = (min(new[j][0], x0), max(new[j][1], x1))
        else:
            new.append((x0, x1))
    new.sort()
    if any(b[0] - a[1] < reach for a, b in pairwise(new)):
        return None  # widened columns (or this row's cells) run into each other
    return new


def _fits(cells: Sequence[Cell], cols: list[tuple[float, float]]) -> bool:
    """Every column holds at most one of the row's cells."""
    hit = [_column_of(c[0], c[1], cols, 0.0) for c in cells]
    return len(set(hit)) == len(hit)


def _column_of(x0: float, x1: float, cols: list[tuple[float, float]], size: float) -> int:
    """Index of the column that contains [x0, x1] (with a tolerance of half a font size), or -1."""
    tol = _ALIGN * size
    for j, (a, b) in enumerate(cols):
        if x0 >= a - tol and x1 <= b + tol:
            return j
    return -1


def _slot_of(x0: float, x1: float, cols: list[tuple[float, float]], size: float) -> int:
    """The column whose space (up to its neighbours' cells) holds [x0, x1], or -1: a
    wrapped cell line may be wider than the cells seen so far, but no wider."""
    for j, (a, _) in enumerate(cols):
        left = cols[j - 1][1] if j else a - _ALIGN * size
        right = cols[j + 1][0] if j + 1 < len(cols) else float("inf")
        if left < x0 and x1 < right:
            return j
    return -1


def _judge(span: Sequence[TableLine], cols: list[tuple[float, float]]) -> _Verdict:
    """Whether a run from `_grow` is a table; layouts are told apart before alignment is
    checked, so that a long listing is not tried again from each of its lines."""
    multi = [ln for ln in span if len(ln.cells) >= 2]
    if len(multi) < 2 or all(all(c[3] for c in ln.cells) for ln in multi):
        return "layout"  # a single row (the lines after it are no rows), or code with wide spaces
    if len(cols) < 2 or not all(_fits(ln.cells, cols) for ln in multi):
        return "retry"  # one column, or overlapping pieces in a line
    size = statistics.median(ln.size for ln in multi)
    grid: list[dict[int, str]] = []  # per row: column -> cell text
    by_col: list[list[Cell]] = [[] for _ in cols]
    for ln in multi:
        row = {}
        for c, text in zip(ln.cells, cell_texts(ln), strict=True):
            j = _column_of(c[0], c[1], cols, 0.0)
            by_col[j].append(c)
            row[j] = text
        grid.append(row)
    if any(a.bottom - b.bottom < _MIN_PITCH * size for a, b in pairwise(multi)):
        return "layout"  # rows closer than the type is tall: a scaled-down drawing
    # Lines between the rows at less than a line's distance: the columns have their own
    # baselines (cells centred on wrapped text, or text set beside a listing or figure).
    interleaved = any(a.bottom - b.bottom < _MIN_PITCH * size for a, b in pairwise(span))
    code_col = any(len(col) >= 2 and all(c[3] for c in col) for col in by_col)
    if _looks_like_layout(grid, len(cols), multi, interleaved, code_col):
        return "layout"
    filled = [col for col in by_col if len(col) >= 2]
    return "table" if len(filled) >= 2 and all(_aligned(col, size) for col in filled) else "retry"


def _aligned(col: list[Cell], size: float) -> bool:
    """Most cells of the column share a left edge, a right edge or a centre."""
    need = len(col) - max(len(col) // 4, 0 if len(col) == 2 else 1)
    edges = ([c[0] for c in col], [c[1] for c in col], [(c[0] + c[1]) / 2 for c in col])
    for values in edges:
        xs = sorted(values)
        best, lo = 0, 0
        for hi, x in enumerate(xs):  # widest window of values within the tolerance
            while x - xs[lo] > _ALIGN * size:
                lo += 1
            best = max(best, hi - lo + 1)
        if best >= need:
            return True
    return False


def _looks_like_layout(
    grid: list[dict[int, str]], ncols: int, multi: Sequence[TableLine], interleaved: bool, code_col: bool
) -> bool:
    """Tabular-looking layouts that are not tables."""
    texts = [[r[j] for r in grid if j in r] for j in range(ncols)]
    words = [statistics.median(len(t.split()) for t in col) if col else 0 for col in texts]
    if interleaved and (code_col or words[0] >= 4):
        return True  # text beside a listing or a figure: their lines meet by chance
    if len(grid) == 2 and max(words) >= 5:
        return True  # two lines of text beside something: too little to call it a table
    return (
        _text_columns(texts, words)
        or _contents_or_index(texts)
        or _list_items(texts, words)
        or _labels_or_numbers(texts)
        or _numbered_code(texts, multi)
    )


def _text_columns(texts: list[list[str]], words: list[float]) -> bool:
    """Prose on both sides of a gap (columns of short marks do not count), or a column of
    bare hyphens: words broken at the ends of justified lines pushed apart."""
    if len(texts[-1]) >= 2 and all(t == "-" for t in texts[-1]):
        return True
    wide = [w for w, col in zip(words, texts, strict=True) if col and statistics.median(map(len, col)) >= 3]
    return len(wide) >= 2 and all(w >= 4 for w in wide)


def _contents_or_index(texts: list[list[str]]) -> bool:
    """Dot leaders, page references ("term, 12"), titles with page numbers; or words of
    running text ("word," "word:") split by justified spacing."""
    cells = [t for col in texts for t in col]
    running = sum(bool(_RUNNING.search(t)) for t in cells)
    if 3 * running >= len(cells) or any(_LEADER.search(t) for t in cells):
        return True
    first, last = texts[0], texts[-1]
    return (
        len(texts) == 2
        and all(_PAGE_NO.match(t) for t in last)
        and all(_SECTION_START.match(t) for t in first)
    )


def _list_items(texts: list[list[str]], words: list[float]) -> bool:
    """Bullets or item numbers before text; callout numbers before sentences."""
    first = texts[0]
    if first and all(_MARKER.match(t) for t in first):
        return True
    short = all(len(t) <= 4 and not any(ch.isalpha() for ch in t) for t in first)
    return bool(first) and short and max(words[1:], default=0) >= 4


def _labels_or_numbers(texts: list[list[str]]) -> bool:
    """ "Key:    value" labels, or displayed equations with their numbers."""
    first, last = texts[0], texts[-1]
    if len(texts) == 2 and first and all(t.endswith(":") for t in first):
        return True
    return bool(last) and all(_EQUATION_NO.match(t) for t in last)


def _numbered_code(texts: list[list[str]], multi: Sequence[TableLine]) -> bool:
    """A code listing with line numbers: numbers, then fixed-pitch text."""
    if not texts[0] or not all(t.isdigit() for t in texts[0]):
        return False
    rest = [c for ln in multi for c in ln.cells[1:]]
    return sum(c[3] for c in rest) * 2 > len(rest)


def same_columns(a: Sequence[TableLine], b: Sequence[TableLine]) -> bool:
    """Whether two tables have the same columns (one table going on over a page break)."""
    ca, cb = (_columns([ln.cells for ln in t if len(ln.cells) >= 2], t[0].size) for t in (a, b))
    tol = 2 * _ALIGN * max(a[0].size, b[0].size)
    return len(ca) == len(cb) and all(
        abs(x0 - y0) <= tol or abs(x1 - y1) <= tol for (x0, x1), (y0, y1) in zip(ca, cb, strict=True)
    )


def render(lines: Sequence[TableLine]) -> tuple[str, list[int]]:
    """Rows as "| a | b |" lines (header row, then a "| --- |" rule) and where each line's row starts.

    A one-piece line at the line pitch of the table continues the row above (a wrapped
    cell) when it is outside the first column or rows are set well apart; a row starting
    a new page that repeats the header is dropped (a table going on over a page break
    often repeats it).
    """
    size = statistics.median(ln.size for ln in lines)
    cols = _columns([ln.cells for ln in lines if len(ln.cells) >= 2], size)
    gaps = [(a.bottom - b.bottom, len(b.cells) >= 2) for a, b in pairwise(lines) if a.page == b.page]
    # The pitch of wrapped text (lines beside a centred cell can be closer: not those).
    pitch = min((g for g, _ in gaps if g >= _MIN_PITCH * size), default=size)
    # Rows set well apart: a one-piece line at the tight pitch of wrapped text continues
    # the row above even in the first column.
    loose = statistics.median([g for g, multi in gaps if multi] or [pitch]) > 1.3 * pitch
    rows: list[list[str]] = []
    row_of: list[int] = []
    for k, ln in enumerate(lines):
        cells = [""] * len(cols)
        for c, text in zip(pieces(ln), cell_texts(ln), strict=True):
            j = max(_nearest(c[0], c[1], cols), 0)
            cells[j] = f"{cells[j]} {text}".strip()
        prev = lines[k - 1] if k else None
        new_page = prev is not None and prev.page != ln.page
        wraps = prev is not None and not new_page and prev.bottom - ln.bottom <= 1.15 * pitch
        if rows and wraps and len(ln.cells) < 2 and (loose or not cells[0]):
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        elif new_page and rows and cells == rows[0]:
            row_of.append(-1)  # a repeated header: its lines point at the next row
            continue
        else:
            rows.append(cells)
        row_of.append(len(rows) - 1)
    return _format(rows, row_of)


def _nearest(x0: float, x1: float, cols: list[tuple[float, float]]) -> int:
    """The column overlapping [x0, x1] most (the nearest one when none does)."""
    best, score = -1, float("-inf")
    for j, (a, b) in enumerate(cols):
        s = min(x1, b) - max(x0, a)
        if s > score:
            best, score = j, s
    return best


def _format(rows: list[list[str]], row_of: list[int]) -> tuple[str, list[int]]:
    body = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    rule = "| " + " | ".join(["---"] * len(rows[0])) + " |"
    starts = [0]
    for i, line in enumerate(body[:-1]):
        starts.append(starts[-1] + len(line) + 1 + (len(rule) + 1 if i == 0 else 0))
    text = "\n".join([body[0], rule, *body[1:]])
    offsets: list[int] = []
    for r in reversed(row_of):  # a dropped header row takes the start of the row after it
        offsets.append(starts[r] if r >= 0 else (offsets[-1] if offsets else len(text)))
    return text, offsets[::-1]
