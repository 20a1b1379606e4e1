from __future__ import annotations

import resource
import time
from pathlib import Path

import pytest

from citeline.errors import ParseError
from citeline.ingest.formats.pdf import PdfParser
from citeline.ingest.registry import parser_for
from citeline.types import ParsedDocument

from .pdfgen import Bookmark, Line, Page, Rect, build_pdf, flow, zero_page_pdf

P = PdfParser()


def _spans(doc: ParsedDocument) -> list[tuple[str, str, tuple[str, ...], int | None, int | None]]:
    """Every block indexes back into the text exactly, stripped and non-empty."""
    out: list[tuple[str, str, tuple[str, ...], int | None, int | None]] = []
    prev_end = 0
    for b in doc.blocks:
        piece = doc.text[b.start : b.end]
        assert piece and piece == piece.strip(), (b, piece)
        assert prev_end <= b.start < b.end <= len(doc.text)
        assert b.page is not None and b.page_end is not None and 1 <= b.page <= b.page_end
        prev_end = b.end
        out.append((b.kind, piece, b.heading_trail, b.page, b.page_end))
    assert doc.text == "\n\n".join(p[1] for p in out)
    assert doc.page_count is not None and len(doc.page_starts) == doc.page_count
    assert list(doc.page_starts) == sorted(doc.page_starts)
    return out


def _running(page_no: int, total: int) -> list[Line | Rect]:
    return [
        Line(72, 760, "Gateway Report", 9),
        Line(450, 760, "Confidential draft", 9),
        Line(280, 40, f"Page {page_no} of {total}", 9),
    ]


def _report() -> bytes:
    p1, _ = flow(
        [
            (16, ["Introduction"]),
            (10, ["This report covers the gateway and its infor-", "mation flows in detail."]),
            (13, ["Background"]),
            (10, ["The gateway was built in 2019 to replace", "the old proxy, and it has since grown to"]),
        ]
    )
    p2_cont, y = flow([(10, ["serve every team in the company."])])
    p2_rest, _ = flow([(16, ["Methods"]), (10, ["We measured latency at the edge."])], top=y)
    p3, _ = flow(
        [
            (10, ["No heading on this page is printed; its bookmark still counts."]),
            (10, ["• first finding about caching", "• second finding, which wraps onto", "a second line"]),
        ]
    )
    pages = [
        Page([*_running(1, 3), *p1]),
        Page([*_running(2, 3), *p2_cont, *p2_rest]),
        Page([*_running(3, 3), *p3]),
    ]
    outline = [
        Bookmark("Introduction", 0),
        Bookmark("Background", 0, 1),
        Bookmark("Methods", 1),
        Bookmark("Findings", 2),
    ]
    return build_pdf(pages, title="Gateway Report", author="Ops Team", outline=outline)


def test_outline_headings_pages_running_headers_and_hyphens() -> None:
    doc = P.parse(_report(), Path("report.pdf"))
    assert doc.title == "Gateway Report"
    assert doc.format == "pdf"
    assert doc.page_count == 3
    assert doc.metadata["author"] == "Ops Team"
    assert _spans(doc) == [
        ("heading", "Introduction", ("Introduction",), 1, 1),
        (
            "paragraph",
            "This report covers the gateway and its information flows in detail.",
            ("Introduction",),
            1,
            1,
        ),
        ("heading", "Background", ("Introduction", "Background"), 1, 1),
        (
            "paragraph",
            "The gateway was built in 2019 to replace the old proxy, and it has since grown to "
            "serve every team in the company.",
            ("Introduction", "Background"),
            1,
            2,
        ),
        ("heading", "Methods", ("Methods",), 2, 2),
        ("paragraph", "We measured latency at the edge.", ("Methods",), 2, 2),
        (
            "paragraph",
            "No heading on this page is printed; its bookmark still counts.",
            ("Findings",),
            3,
            3,
        ),
        (
            "list",
            "• first finding about caching\n• second finding, which wraps onto a second line",
            ("Findings",),
            3,
            3,
        ),
    ]
    for junk in ("Confidential", "Page 1", "Page 3", "Gateway Report"):
        assert junk not in doc.text
    assert doc.text[doc.page_starts[0] :].startswith("Introduction")
    assert doc.text[doc.page_starts[1] :].startswith("serve every team")
    assert doc.text[doc.page_starts[2] :].startswith("No heading on this page")


def test_registry_finds_pdf_parser() -> None:
    assert isinstance(parser_for(Path("x.PDF")), PdfParser)


def _two_columns() -> bytes:
    title, y = flow([(20, ["A Two Column Study"])], top=740)
    left, _ = flow(
        [
            (13, ["Left Section"]),
            (10, ["The left column opens the", "study with its first point."]),
            (10, ["A second left paragraph", "ends the left column."]),
        ],
        x=72,
        top=y,
        width=220,
    )
    right, _ = flow(
        [
            (13, ["Right Section"]),
            (10, ["The right column is read", "after all of the left one."]),
        ],
        x=330,
        top=y,
        width=220,
    )
    return build_pdf([Page([*title, *left, *right])])


def test_two_column_reading_order_and_font_size_headings() -> None:
    doc = P.parse(_two_columns(), Path("columns.pdf"))
    assert doc.title == "A Two Column Study"  # no metadata title, no outline: first heading
    assert _spans(doc) == [
        ("heading", "A Two Column Study", (), 1, 1),
        ("heading", "Left Section", ("Left Section",), 1, 1),
        ("paragraph", "The left column opens the study with its first point.", ("Left Section",), 1, 1),
        ("paragraph", "A second left paragraph ends the left column.", ("Left Section",), 1, 1),
        ("heading", "Right Section", ("Right Section",), 1, 1),
        ("paragraph", "The right column is read after all of the left one.", ("Right Section",), 1, 1),
    ]


def test_font_size_levels_build_a_trail() -> None:
    lines, _ = flow(
        [
            (22, ["Manual"]),
            (16, ["Chapter One"]),
            (10, ["Chapter text."]),
            (13, ["Part A"]),
            (10, ["Part text that is long enough to be the body size."]),
            (16, ["Chapter Two"]),
            (10, ["More body text in the second chapter of the manual."]),
        ]
    )
    doc = P.parse(build_pdf([Page(lines)]), Path("manual.pdf"))
    assert doc.title == "Manual"
    assert [(k, t, tr) for k, t, tr, _, _ in _spans(doc)] == [
        ("heading", "Manual", ()),
        ("heading", "Chapter One", ("Chapter One",)),
        ("paragraph", "Chapter text.", ("Chapter One",)),
        ("heading", "Part A", ("Chapter One", "Part A")),
        ("paragraph", "Part text that is long enough to be the body size.", ("Chapter One", "Part A")),
        ("heading", "Chapter Two", ("Chapter Two",)),
        ("paragraph", "More body text in the second chapter of the manual.", ("Chapter Two",)),
    ]


def test_title_falls_back_to_stem_and_empty_pages_keep_page_starts() -> None:
    body, _ = flow([(10, ["Plain text only."])])
    doc = P.parse(build_pdf([Page(body), Page([]), Page(body)]), Path("plain-notes.pdf"))
    assert doc.title == "plain-notes"
    spans = _spans(doc)
    assert [(s[3], s[4]) for s in spans] == [(1, 1), (3, 3)]
    # An empty page starts where the next page's text starts.
    assert doc.page_starts == (0, doc.blocks[1].start, doc.blocks[1].start)


def test_corrupt_pdf() -> None:
    good = build_pdf([Page([Line(72, 700, "hello")])])
    with pytest.raises(ParseError, match="corrupt or unreadable PDF"):
        P.parse(good[: len(good) // 3], Path("truncated.pdf"))
    with pytest.raises(ParseError, match="corrupt or unreadable PDF"):
        P.parse(b"%PDF-1.7\n" + b"\x8f garbage " * 100, Path("garbage.pdf"))
    with pytest.raises(ParseError, match="not a PDF"):
        P.parse(b"<html>not a pdf</html>", Path("fake.pdf"))


def test_encrypted_pdf() -> None:
    data = build_pdf([Page([Line(72, 700, "secret text")])], user_password="s3cret")
    with pytest.raises(ParseError, match=r"encrypted PDF \(no password support\)"):
        P.parse(data, Path("locked.pdf"))


def test_image_only_pdf() -> None:
    data = build_pdf([Page([Rect(72, 72, 400, 600)]), Page([Rect(100, 100, 50, 50)])])
    with pytest.raises(ParseError, match="image-only PDF: no text layer"):
        P.parse(data, Path("scan.pdf"))


def test_zero_page_pdf() -> None:
    with pytest.raises(ParseError, match="no pages"):
        P.parse(zero_page_pdf(), Path("zero.pdf"))


def test_two_thousand_pages_bounded_memory() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    words += ["eta", "theta", "iota", "kappa", "lambda", "mu"]
    pages = []
    for i in range(2000):
        body = " ".join(words[(i + k) % len(words)] for k in range(60)) + "."
        lines, _ = flow([(10, body)])
        pages.append(Page([*lines, Line(300, 40, str(i + 1), 9)]))
    data = build_pdf(pages, title="Big")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    doc = P.parse(data, Path("big.pdf"))
    elapsed = time.perf_counter() - t0
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert doc.page_count == 2000
    assert len(doc.blocks) == 2000
    assert [b.page for b in doc.blocks] == list(range(1, 2001))
    assert all(
        doc.text[s:].startswith(w)
        for s, w in zip(doc.page_starts, [words[i % 12] for i in range(2000)], strict=True)
    )
    assert not any(b.kind == "heading" for b in doc.blocks)
    assert grown_mb < 300, f"peak memory grew by {grown_mb:.0f} MB"
    assert elapsed < 60


def test_code_in_fixed_pitch_font_and_loose_lists() -> None:
    def mono(y: float, text: str, indent: int = 0) -> Line:
        return Line(72 + indent * 0.6 * 9, y, text, 9, "Courier")

    body, y = flow([(10, ["Run this:"])])
    code = [
        mono(y, "def main() -> int:"),
        mono(y - 11, 'print("hi") -', 4),
        mono(y - 22, "return 0", 4),
        mono(y - 44, "main()"),  # after a blank line
    ]
    items, _ = flow([(10, ["• one item"]), (10, ["• another item"])], top=y - 80)
    doc = P.parse(build_pdf([Page([*body, *code, *items])]), Path("code.pdf"))
    assert [(k, t) for k, t, _, _, _ in _spans(doc)] == [
        ("paragraph", "Run this:"),
        ("code", 'def main() -> int:\n    print("hi") -\n    return 0\nmain()'),
        ("list", "• one item\n• another item"),
    ]


def test_columns_drawn_line_by_line_across_the_page() -> None:
    # Some producers write both columns' lines in one pass per baseline; the words of
    # one baseline must still be split at the gutter.
    left = ["Left column line one of the", "first paragraph ends here.", "", "Left second one.", ""]
    right = ["Right column starts here and", "keeps going for a while", "until the end.", "", "Right last."]
    items: list[Line | Rect] = []
    for i, (a, b) in enumerate(zip(left, right, strict=True)):
        items += [Line(x, 700 - 12.5 * i, t, 10) for x, t in ((72, a), (320, b)) if t]
    doc = P.parse(build_pdf([Page(items)]), Path("interleaved.pdf"))
    assert [t for _, t, _, _, _ in _spans(doc)] == [
        "Left column line one of the first paragraph ends here.",
        "Left second one.",
        "Right column starts here and keeps going for a while until the end.",
        "Right last.",
    ]
