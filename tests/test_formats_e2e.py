"""Every format end to end: ingest, ask, and a citation that opens the right page and span."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import docx
import pytest

import citeline
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from conftest import ADMIN
from ingest.pdfgen import Bookmark, Page, build_pdf, flow


def _pdf(path: Path) -> None:
    page1, _ = flow(
        [
            (18, "Pump Manual"),
            (
                11,
                "The P-200 pump moves water between the two tanks. "
                "It is rated for continuous operation in dry rooms.",
            ),
        ]
    )
    page2, _ = flow(
        [
            (18, "Maintenance"),
            (
                11,
                "Replace the P-200 impeller seal every 1,500 operating hours. "
                "Use seal kit SK-88 and tighten the cover bolts to 12 Nm.",
            ),
        ]
    )
    page3, _ = flow([(18, "Warranty"), (11, "The warranty lasts three years from the date of purchase.")])
    path.write_bytes(
        build_pdf(
            [Page(list(page1)), Page(list(page2)), Page(list(page3))],
            title="Pump Manual",
            outline=[Bookmark("Pump Manual", 0), Bookmark("Maintenance", 1), Bookmark("Warranty", 2)],
        )
    )


def _docx(path: Path) -> None:
    d = docx.Document()
    d.core_properties.title = "Travel Policy"
    d.add_heading("Travel Policy", 0)
    d.add_heading("Meals", 1)
    d.add_paragraph("Meals on business trips are reimbursed up to 45 EUR per day with receipts.")
    d.add_heading("Flights", 1)
    table = d.add_table(rows=3, cols=2)
    for row, (a, b) in zip(
        table.rows,
        [("Distance", "Class"), ("Under 6 hours", "Economy"), ("6 hours or more", "Premium economy")],
        strict=True,
    ):
        row.cells[0].text, row.cells[1].text = a, b
    d.save(str(path))


def _html(path: Path) -> None:
    path.write_text(
        "<html><head><title>Office Guide</title></head><body><nav>Home | About | Login</nav><main>"
        "<h1>Office Guide</h1><h2>Printing</h2><p>The third-floor printer is named ORION-3. "
        "Badge in at the printer to release your job.</p><h2>Parking</h2><p>Visitor parking is on level B2."
        "</p></main><footer>Copyright</footer></body></html>",
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def mixed_kb(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    root = tmp_path_factory.mktemp("mixed")
    docs = root / "docs"
    docs.mkdir()
    _pdf(docs / "pump.pdf")
    _docx(docs / "travel.docx")
    _html(docs / "office.html")
    kb = citeline.open(root / "index")
    report = kb.add([docs], tags={"kind": "mixed"})
    assert not report.failed, report.failed
    return kb


def test_pdf_citation_carries_its_page(mixed_kb: KnowledgeBase) -> None:
    answer = mixed_kb.ask("How often should the P-200 impeller seal be replaced?", ADMIN)
    assert not answer.refused, answer.refusal_reason
    c = answer.citations[0]
    assert c.source.endswith("pump.pdf") and c.page == 2 and c.page_end == 2
    assert "Maintenance" in c.heading
    text = mixed_kb.store.document_text(c.document_id)
    assert text[c.start : c.end] == c.quote and "1,500" in text[c.quote_start : c.quote_end]
    starts = mixed_kb.store.page_starts(c.document_id)
    assert starts[1] <= c.start and c.end <= starts[2]  # the chunk lies on page 2 only
    doc = mixed_kb.store.find_document(c.source)
    assert doc is not None and doc.page_count == 3 and doc.format == "pdf" and doc.tags == {"kind": "mixed"}


def test_docx_table_row_answers(mixed_kb: KnowledgeBase) -> None:
    answer = mixed_kb.ask("Which flight class for trips of 6 hours or more?", ADMIN)
    assert not answer.refused, answer.refusal_reason
    assert answer.citations[0].source.endswith("travel.docx")
    assert "Premium economy" in answer.answer


def test_html_main_content_only(mixed_kb: KnowledgeBase) -> None:
    answer = mixed_kb.ask("What is the name of the third-floor printer?", ADMIN)
    assert not answer.refused and "ORION-3" in answer.answer
    c = answer.citations[0]
    assert c.source.endswith("office.html") and c.title == "Office Guide" and "Printing" in c.heading
    text = mixed_kb.store.document_text(c.document_id)
    assert "Login" not in text and "Copyright" not in text


def test_show_page_prints_that_page(mixed_kb: KnowledgeBase) -> None:
    source = next(d.source for d in mixed_kb.store.documents(Filter.admin()) if d.format == "pdf")
    proc = subprocess.run(
        [sys.executable, "-m", "citeline", "--index", mixed_kb.settings.index, "show", source, "--page", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "warranty lasts three years" in proc.stdout and "impeller" not in proc.stdout
