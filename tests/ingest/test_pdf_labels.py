"""PDF titles, printed page labels and accents (issue 35, "Parsers"): real PDFs, parsed, indexed
and asked through the `citeline` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from citeline.ingest.formats.pdf import PdfParser
from citeline.ingest.formats.pdf_layout import compose
from citeline.page_labels import encode, page_label

from .pdfgen import Bookmark, Line, Page, PageLabel, build_pdf

TOPICS = ["intake", "filter", "impeller", "seal", "bearing", "valve", "gauge", "drain"]


def handbook(*, title: str | None = None, first_entry: str = "1 Introduction") -> bytes:
    """Eight pages: a title page in large type, then numbered sections (the outline's entries);
    printed labels i, ii, then 1-4, then A-1, A-2 (an appendix)."""
    pages = []
    for i, topic in enumerate(TOPICS):
        lines = []
        if i == 0:
            lines.append(Line(72, 700, "Pump Station Handbook", size=24, font="Helvetica-Bold"))
            lines.append(Line(72, 300, "Printed for the Wirtschaftsuniversit\u00a8at pump station."))
        else:
            heading = first_entry if i == 1 else f"{i} {topic.title()} care"
            lines.append(Line(72, 650, heading, size=14, font="Helvetica-Bold"))
        for j in range(i % 3 + 2):
            lines.append(
                Line(72, 620 - 14 * j, f"The {topic} of pump {i} is checked every {j + 2} weeks ({j}).")
            )
        pages.append(Page(lines))
    outline = [Bookmark(first_entry if i == 1 else f"{i} {t.title()} care", i) for i, t in enumerate(TOPICS)]
    labels = [PageLabel(0, "ROMAN_LOWER"), PageLabel(2, "ARABIC", 1), PageLabel(6, "ARABIC", 1, "A-")]
    return build_pdf(pages, title=title, outline=outline[1:], labels=labels)


def test_the_title_is_the_title_page_not_a_numbered_first_section() -> None:
    doc = PdfParser().parse(handbook(), Path("handbook.pdf"))
    assert doc.title == "Pump Station Handbook"  # was "1 Introduction", the outline's first entry


@pytest.mark.parametrize(
    ("title", "first_entry", "expected"),
    [
        ("Pumps: the Manual", "1 Introduction", "Pumps: the Manual"),  # the metadata's title wins
        (None, "Introduction", "Introduction"),  # an unnumbered first heading stays the title
        (None, "Chapter 1 Pumps", "Pump Station Handbook"),
        (None, "2.1 Scope", "Pump Station Handbook"),
    ],
)
def test_title_choices(title: str | None, first_entry: str, expected: str) -> None:
    assert PdfParser().parse(handbook(title=title, first_entry=first_entry), Path("h.pdf")).title == expected


def test_printed_page_labels_are_kept_as_runs() -> None:
    data = handbook()
    doc = PdfParser().parse(data, Path("handbook.pdf"))
    pdf = pdfium.PdfDocument(data)
    try:
        printed = [pdf.get_page_label(i) for i in range(len(pdf))]
    finally:
        pdf.close()
    assert printed == ["i", "ii", "1", "2", "3", "4", "A-1", "A-2"]
    assert doc.metadata["page_labels"] == [[1, "i"], [2, "ii"], [3, "1"], [7, "A-1"]]
    assert [page_label(doc.metadata, p) for p in range(1, 9)] == printed


@pytest.mark.parametrize(
    ("labels", "runs"),
    [
        (["1", "2", "3"], []),  # the page numbers themselves: nothing to keep
        (["", "", ""], []),  # no /PageLabels at all
        (["i", "ii", "iii", "1", "2"], [[1, "i"], [2, "ii"], [3, "iii"], [4, "1"]]),
        (["Cover", "A-9", "A-10", "A-11"], [[1, "Cover"], [2, "A-9"]]),
        (["7", "7", "8"], [[1, "7"], [2, "7"]]),
        (["", "1", "2"], [[1, ""], [2, "1"]]),
    ],
)
def test_label_runs_round_trip(labels: list[str], runs: list[list[int | str]]) -> None:
    assert encode(labels) == runs
    decoded = [page_label({"page_labels": runs}, p) for p in range(1, len(labels) + 1)]
    assert decoded == ([None] * len(labels) if not runs else [label or None for label in labels])


def test_accents_drawn_apart_are_one_character() -> None:
    lines = [
        Line(72, 700, "Guide", size=20),
        Line(72, 660, "Written at the Wirtschaftsuniversit\u00a8at Wien by Gr\u00b4egoire, \u00a8 alone."),
        Line(72, 646, "Keep coffee ^ and `code` and x\u00a8 as they are."),
    ]
    doc = PdfParser().parse(build_pdf([Page(lines)]), Path("accents.pdf"))
    assert "Wirtschaftsuniversität Wien by Grégoire, \u00a8 alone." in doc.text  # was "Universit¨at"
    assert "Keep coffee ^ and `code` and x\u00a8 as they are." in doc.text


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("Universit\u00a8at", "Universität"),
        ("cafe\u0301", "café"),  # a combining mark after its letter (NFC)
        ("na\u00a8\u0131ve", "naïve"),  # TeX's dotless i under a diaeresis
        ("\u02c7Zi\u02c7zkov", "Žižkov"),
        ("\u00b8cedilla", "çedilla"),
        ("x\u00a8", "x\u00a8"),  # after its letter: which letter it belongs to is a guess
        ("\u00a81", "\u00a81"),  # not on a letter
        ("q\u0308", "q\u0308"),  # no single character for it: left as NFC leaves it
        ("^a", "^a"),
        ("plain", "plain"),
    ],
)
def test_compose(word: str, text: str) -> None:
    assert compose(word) == text


def test_ask_shows_the_printed_page(tmp_path: Path) -> None:
    (tmp_path / "handbook.pdf").write_bytes(handbook())
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env["CITELINE_INDEX"] = str(tmp_path / "index")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "citeline", *args], capture_output=True, text=True, env=env, timeout=300
        )

    assert run("add", str(tmp_path / "handbook.pdf")).returncode == 0
    question = "How often is the impeller of pump 2 checked?"
    data = json.loads(run("ask", "--json", question).stdout)
    cited = next(c for c in data["citations"] if "impeller" in c["quote"])
    assert (cited["page"], cited["page_label"], cited["page_end_label"]) == (3, "1", "1")
    readable = run("ask", question).stdout
    assert f"[{cited['n']}] {tmp_path}/handbook.pdf, page 3 (printed page 1) — " in readable
