"""PDF tables: aligned cells become one "table" block; text that only looks tabular does not.

A table that goes on over a page break (same columns, at the top of the next page) stays
one block with page/page_end; a header row repeated on the new page is dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from reportlab.lib import colors
from reportlab.lib.enums import TA_JUSTIFY
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.platypus import Paragraph, Spacer, Table, TableStyle

from citeline.chunking import Chunker, ChunkingOptions
from citeline.embedding import make_embedder
from citeline.embedding.base import Embedder
from citeline.ingest.formats.pdf import PdfParser
from citeline.types import ParsedDocument

from .pdfgen import Line, Page, build_pdf, build_story, flow, table

P = PdfParser()
STYLES = getSampleStyleSheet()
SETTINGS = [
    ["Setting", "Default", "Meaning"],
    ["cache.size", "512", "Entries kept in memory"],
    ["retry.max", "3", "Attempts before giving up"],
    ["timeout.connect", "2.5", "Seconds to open a connection"],
    ["log.level", "info", "How much is logged"],
]


def _blocks(doc: ParsedDocument) -> list[tuple[str, str]]:
    """(kind, text) of every block, checking that each indexes the stored text exactly."""
    out: list[tuple[str, str]] = []
    for b in doc.blocks:
        piece = doc.text[b.start : b.end]
        assert piece and piece == piece.strip(), (b, piece)
        assert b.page is not None and b.page_end is not None and b.page <= b.page_end
        out.append((b.kind, piece))
    assert doc.text == "\n\n".join(t for _, t in out)
    assert list(doc.page_starts) == sorted(doc.page_starts)
    return out


def _rows(text: str) -> list[list[str]]:
    """The cells of a rendered table, checking the "| --- |" rule under the header row."""
    lines = text.split("\n")
    ncols = lines[0].count(" | ") + 1
    assert lines[1] == "| " + " | ".join(["---"] * ncols) + " |"
    rows = [ln[2:-2].split(" | ") for ln in [lines[0], *lines[2:]]]
    assert all(len(r) == ncols for r in rows)
    return rows


def _tables(doc: ParsedDocument) -> list[str]:
    return [t for k, t in _blocks(doc) if k == "table"]


def _parse(data: bytes) -> ParsedDocument:
    return P.parse(data, Path("doc.pdf"))


# -- tables --------------------------------------------------------------------------------


@pytest.mark.parametrize("ruled", [True, False])
def test_platypus_table_is_one_block(ruled: bool) -> None:
    grid = Table(SETTINGS)  # columns as wide as their widest cell: 12 pt between columns
    if ruled:
        grid.setStyle(
            TableStyle(
                [
                    ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                    ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ]
            )
        )
    doc = _parse(
        build_story(
            [
                Paragraph("The gateway reads its settings at start-up, as listed below.", STYLES["Normal"]),
                Spacer(1, 6),
                grid,
                Spacer(1, 6),
                Paragraph("Restart the gateway after changing any of them.", STYLES["Normal"]),
            ]
        )
    )
    blocks = _blocks(doc)
    assert [k for k, _ in blocks] == ["paragraph", "table", "paragraph"]
    assert blocks[0][1] == "The gateway reads its settings at start-up, as listed below."
    assert _rows(blocks[1][1]) == SETTINGS
    assert blocks[2][1] == "Restart the gateway after changing any of them."


def test_platypus_table_with_wrapped_cells_keeps_each_row_whole() -> None:
    cell = STYLES["BodyText"]
    data = [
        ["Code", "Meaning"],
        [
            "LDG-4012",
            Paragraph("The upload token expired before the transfer finished; ask for a new one.", cell),
        ],
        ["LDG-4013", Paragraph("The bucket is full.", cell)],
        [
            "LDG-5001",
            Paragraph("The ledger service did not answer within the timeout of thirty seconds.", cell),
        ],
    ]
    grid = Table(data, colWidths=[90, 200])
    grid.setStyle(TableStyle([("VALIGN", (0, 0), (-1, -1), "TOP")]))
    doc = _parse(build_story([grid]))
    assert [k for k, _ in _blocks(doc)] == ["table"]
    assert _rows(_tables(doc)[0]) == [
        ["Code", "Meaning"],
        ["LDG-4012", "The upload token expired before the transfer finished; ask for a new one."],
        ["LDG-4013", "The bucket is full."],
        ["LDG-5001", "The ledger service did not answer within the timeout of thirty seconds."],
    ]


def test_table_drawn_without_ruling_lines() -> None:
    rows = [
        ["Region", "Requests", "Owner"],
        ["eu-west", "18,240", "Platform team"],
        ["us-east", "7,115", "Edge team"],
        ["ap-south", "912", "Platform team"],
    ]
    before, y = flow([(10, ["Traffic by region last week:"])])
    cells, y = table(rows, [72, 260, 300], top=y - 4, right=[1])  # a right-aligned number column
    after, _ = flow([(10, ["Numbers are requests per minute at the peak."])], top=y - 14)
    doc = _parse(build_pdf([Page([*before, *cells, *after])]))
    blocks = _blocks(doc)
    assert [k for k, _ in blocks] == ["paragraph", "table", "paragraph"]
    assert _rows(blocks[1][1]) == rows
    assert blocks[2][1] == "Numbers are requests per minute at the peak."
    table_block = doc.blocks[1]
    assert (table_block.page, table_block.page_end) == (1, 1)


def test_long_table_split_over_chunks_repeats_its_header() -> None:
    embedder: Embedder = make_embedder("minilm-int8")
    header = ["Option", "Default", "What it controls"]
    rows = [[f"option.number_{i}", str(i * 7), f"what option {i} controls in detail"] for i in range(45)]
    cells, _ = table([header, *rows], [72, 200, 260], top=740, pitch=14)
    doc = _parse(build_pdf([Page(cells)]))
    assert [k for k, _ in _blocks(doc)] == ["table"]
    assert _rows(_tables(doc)[0]) == [header, *rows]
    chunker = Chunker(
        embedder.count_tokens, ChunkingOptions(max_tokens=embedder.max_tokens, unstructured="windows")
    )
    chunks = chunker.chunk(doc, "d" * 24)
    assert len(chunks) > 2
    for c in chunks:
        assert c.kind == "table" and c.page == 1
        assert c.text == doc.text[c.start : c.end]
        assert "| Option | Default | What it controls |" in c.index_text
    assert max(embedder.count_tokens([c.index_text for c in chunks])) <= embedder.max_tokens
    covered = "".join(c.text for c in chunks)
    assert all(f"| option.number_{i} |" in covered for i in range(45))


def test_table_over_a_page_break_is_one_block_without_the_repeated_header() -> None:
    header = ["Host", "Role", "Zone"]
    rows = [[f"node-{i:02d}", "replica" if i % 3 else "primary", f"zone-{i % 4}"] for i in range(30)]
    intro, y = flow([(10, ["The cluster has these hosts."])], top=300)
    first, _ = table([header, *rows[:12]], [72, 200, 330], top=y - 4)
    second, y = table([header, *rows[12:]], [72, 200, 330], top=720)
    outro, _ = flow([(10, ["Zones map to racks."])], top=y - 14)
    doc = _parse(build_pdf([Page([*intro, *first]), Page([*second, *outro])]))
    assert [k for k, _ in _blocks(doc)] == ["paragraph", "table", "paragraph"]
    block = doc.blocks[1]
    assert (block.page, block.page_end) == (1, 2)
    text = doc.text[block.start : block.end]
    assert _rows(text) == [header, *rows]  # the header repeated on page 2 is dropped
    assert doc.text[doc.page_starts[1] :].startswith("| node-12 |")


def test_tables_with_different_columns_on_two_pages_stay_apart() -> None:
    zones = [["Zone", "Racks", "Power feed"], ["zone-0", "4", "A and B"], ["zone-1", "6", "A only"]]
    one, _ = table(SETTINGS, [72, 200, 300], top=140)
    two, y = table(zones, [72, 150, 400], top=720)
    text, _ = flow([(10, "Each zone has its own power feed and its own cooling loop, " * 3)], top=y - 14)
    doc = _parse(build_pdf([Page(one), Page([*two, *text])]))
    assert [(b.kind, b.page, b.page_end) for b in doc.blocks] == [
        ("table", 1, 1),
        ("table", 2, 2),
        ("paragraph", 2, 2),
    ]
    assert _rows(_tables(doc)[1]) == zones


def test_table_in_one_column_of_a_two_column_page() -> None:
    prose = "The left column talks about the zones and the racks in them before the table. " * 3
    left, y = flow([(10, prose)], x=72, width=220)
    zones = [["Zone", "Racks"], ["zone-0", "4"], ["zone-1", "6"], ["zone-2", "2"]]
    cells, y = table(zones, [72, 200], top=y - 6)
    left_after, _ = flow(
        [(10, "Racks are counted at the start of each quarter. " * 2)], x=72, top=y - 10, width=220
    )
    right, _ = flow(
        [(10, "The right column is about something else entirely and reads on. " * 6)], x=330, width=220
    )
    doc = _parse(build_pdf([Page([*left, *cells, *left_after, *right])]))
    assert [k for k, _ in _blocks(doc)] == ["paragraph", "table", "paragraph", "paragraph"]
    assert _rows(_tables(doc)[0]) == zones


# -- not tables ----------------------------------------------------------------------------


def _no_table(doc: ParsedDocument) -> list[tuple[str, str]]:
    blocks = _blocks(doc)
    assert "table" not in [k for k, _ in blocks], blocks
    return blocks


def test_prose_and_justified_prose_are_not_tables() -> None:
    narrow = ParagraphStyle("narrow", parent=STYLES["Normal"], alignment=TA_JUSTIFY)
    text = (
        "Internationalization considerations notwithstanding, the configuration subsystem "
        "revalidates everything: authentication, authorization, administration, and "
        "accountability requirements are reconsidered whenever implementation-specific "
        "representations change. "
    )
    squeezed = Table([[Paragraph(text * 3, narrow)]], colWidths=[150])
    doc = _parse(build_story([Paragraph(text * 4, STYLES["Normal"]), Paragraph(text * 4, narrow), squeezed]))
    _no_table(doc)


@pytest.mark.parametrize("lines_per_column", [4, 2])
def test_two_column_text_is_not_a_table(lines_per_column: int) -> None:
    # With two lines a column the page is too short to find its gutter: the lines of a
    # baseline are joined, and only table detection stands between them and a table.
    left = [
        "The left column opens the study",
        "with its first point and goes on",
        "for a while about the method",
        "that was used to measure it all.",
    ]
    right = [
        "The right column is read after",
        "all of the left one and explains",
        "what the results of that method",
        "mean for the gateway and teams.",
    ]
    items: list[Line] = []
    for i, (a, b) in enumerate(zip(left[:lines_per_column], right[:lines_per_column], strict=True)):
        items += [Line(72, 700 - 12.5 * i, a, 10), Line(320, 700 - 12.5 * i, b, 10)]
    _no_table(_parse(build_pdf([Page(list(items))])))


@pytest.mark.parametrize(
    "markers",
    [["•", "•", "•", "•"], ["1.", "2.", "3.", "4."], ["a)", "b)", "c)", "d)"]],
)
def test_lists_with_a_wide_gap_after_the_marker_are_not_tables(markers: list[str]) -> None:
    items = ["Check the cache size", "Restart the gateway", "Watch the error rate", "Tell the owners"]
    lines = []
    for i, (m, t) in enumerate(zip(markers, items, strict=True)):
        lines += [Line(72, 700 - 14 * i, m, 10), Line(96, 700 - 14 * i, t, 10)]
    blocks = _no_table(_parse(build_pdf([Page(lines)])))
    assert blocks[0][1].startswith(f"{markers[0]} Check the cache size")


def test_code_with_aligned_comments_is_not_a_table() -> None:
    code = [("retries = 3", "# attempts"), ("timeout = 2.5", "# seconds"), ("level = 'info'", "# logging")]
    lines = []
    for i, (stmt, comment) in enumerate(code):
        lines += [Line(72, 700 - 11 * i, stmt, 9, "Courier"), Line(250, 700 - 11 * i, comment, 9, "Courier")]
    blocks = _no_table(_parse(build_pdf([Page(lines)])))
    assert [k for k, _ in blocks] == ["code"]


def test_numbered_code_listing_is_not_a_table() -> None:
    code = ["def main() -> int:", "    print('hi')", "    return 0", "main()"]
    lines = []
    for i, stmt in enumerate(code):
        lines += [Line(72, 700 - 11 * i, str(i + 1), 9), Line(100, 700 - 11 * i, stmt, 9, "Courier")]
    _no_table(_parse(build_pdf([Page(lines)])))


def test_key_value_lines_are_not_tables() -> None:
    pairs = [
        ("Author:", "Jane Doe"),
        ("Version:", "2.4.1"),
        ("Status:", "Approved"),
        ("Updated:", "3 May 2024"),
    ]
    lines = []
    for i, (k, v) in enumerate(pairs):
        lines += [Line(72, 700 - 14 * i, k, 10), Line(180, 700 - 14 * i, v, 10)]
    _no_table(_parse(build_pdf([Page(lines)])))


def test_table_of_contents_is_not_a_table() -> None:
    entries = [
        ("1 Introduction", "1"),
        ("2 Installation", "4"),
        ("3 Configuration", "9"),
        ("4 Operations", "15"),
    ]
    pages = []
    for part, rows in [
        ("first", entries),
        ("second", [(f"{t} . . . . . . . . . . . .", p) for t, p in entries]),
    ]:
        # Full-width text on the page, so that the page numbers are not taken for a column.
        intro, y = flow(
            [(10, f"The {part} part of this guide covers installing and running the gateway. " * 3)]
        )
        toc, _ = table(rows, [72, 540], top=y - 10, right=[1])
        pages.append(Page([*intro, *toc]))
    _no_table(_parse(build_pdf(pages)))
