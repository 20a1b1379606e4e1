from __future__ import annotations

import io
import zipfile
from pathlib import Path

import docx
import pytest
from docx.enum.style import WD_STYLE_TYPE

from citeline.errors import ParseError
from citeline.ingest.formats.docx import DocxParser
from citeline.ingest.registry import parser_for
from citeline.types import ParsedDocument


def _save(document: docx.document.Document) -> bytes:
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


def _spans(doc: ParsedDocument) -> list[tuple[str, str, tuple[str, ...]]]:
    """Every block indexes back into the text exactly, stripped and non-empty."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    prev_end = 0
    for b in doc.blocks:
        piece = doc.text[b.start : b.end]
        assert piece and piece == piece.strip(), (b, piece)
        assert b.start >= prev_end
        prev_end = b.end
        assert b.page is None and b.page_end is None
        out.append((b.kind, piece, b.heading_trail))
    assert doc.text == "\n\n".join(p for _, p, _ in out)
    return out


def _sample() -> bytes:
    d = docx.Document()
    d.core_properties.title = "Gateway Handbook"
    d.core_properties.author = "Ops Team"
    d.add_paragraph("Gateway Handbook", style="Title")
    d.add_paragraph("  An   introduction\tparagraph. ")
    d.add_heading("Installation", level=1)
    d.add_paragraph("Run the installer.")
    d.add_paragraph("first step", style="List Bullet")
    d.add_paragraph("second step", style="List Bullet")
    d.add_paragraph("nested step", style="List Bullet 2")
    d.add_heading("Ports", level=2)
    table = d.add_table(rows=3, cols=2)
    for r, (a, b) in enumerate([("Port", "Use"), ("8080", "HTTP | admin"), ("9090", "metrics")]):
        table.cell(r, 0).text = a
        table.cell(r, 1).text = b
    d.add_paragraph("After the table.")
    d.add_heading("Upgrading", level=1)
    d.add_paragraph("Numbered one", style="List Number")
    d.add_paragraph("Back to prose.")
    return _save(d)


def test_structure_order_and_trails() -> None:
    doc = DocxParser().parse(_sample(), Path("handbook.docx"))
    assert doc.title == "Gateway Handbook"
    assert doc.format == "docx"
    assert doc.metadata["author"] == "Ops Team"
    assert _spans(doc) == [
        ("heading", "Gateway Handbook", ()),
        ("paragraph", "An introduction paragraph.", ()),
        ("heading", "Installation", ("Installation",)),
        ("paragraph", "Run the installer.", ("Installation",)),
        ("list", "- first step\n- second step\n  - nested step", ("Installation",)),
        ("heading", "Ports", ("Installation", "Ports")),
        (
            "table",
            "| Port | Use |\n| --- | --- |\n| 8080 | HTTP \\| admin |\n| 9090 | metrics |",
            ("Installation", "Ports"),
        ),
        ("paragraph", "After the table.", ("Installation", "Ports")),
        ("heading", "Upgrading", ("Upgrading",)),
        ("list", "- Numbered one", ("Upgrading",)),
        ("paragraph", "Back to prose.", ("Upgrading",)),
    ]


def test_registry_finds_docx_parser() -> None:
    assert isinstance(parser_for(Path("a.DOCX")), DocxParser)


def test_title_falls_back_to_first_heading_then_stem() -> None:
    d = docx.Document()
    d.add_heading("Only Chapter", level=1)
    d.add_paragraph("Body text.")
    doc = DocxParser().parse(_save(d), Path("x.docx"))
    assert doc.title == "Only Chapter"
    # A unique first heading that became the title is not in the trail.
    assert _spans(doc) == [("heading", "Only Chapter", ()), ("paragraph", "Body text.", ())]

    d = docx.Document()
    d.add_paragraph("Just prose.")
    doc = DocxParser().parse(_save(d), Path("notes.docx"))
    assert doc.title == "notes"


def test_custom_heading_style_code_style_and_line_breaks() -> None:
    d = docx.Document()
    based = d.styles.add_style("Fancy Heading", WD_STYLE_TYPE.PARAGRAPH)
    based.base_style = d.styles["Heading 2"]
    code = d.styles.add_style("Code", WD_STYLE_TYPE.PARAGRAPH)
    assert code is not None
    d.add_heading("Top", level=1)
    d.add_paragraph("Custom", style="Fancy Heading")
    d.add_paragraph("def f():", style="Code")
    d.add_paragraph("    return 1", style="Code")
    p = d.add_paragraph("line one")
    p.add_run().add_break()
    p.add_run("line two")
    doc = DocxParser().parse(_save(d), Path("c.docx"))
    assert _spans(doc) == [
        ("heading", "Top", ()),  # unique level-1 heading, no core title: it is the title
        ("heading", "Custom", ("Custom",)),
        ("code", "def f():\n    return 1", ("Custom",)),
        ("paragraph", "line one\nline two", ("Custom",)),
    ]


def test_not_a_zip() -> None:
    with pytest.raises(ParseError, match="not a zip"):
        DocxParser().parse(b"this is plain text, not a docx", Path("fake.docx"))


def test_zip_without_word_document() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("hello.txt", "hi")
    with pytest.raises(ParseError, match=r"no word/document\.xml"):
        DocxParser().parse(buf.getvalue(), Path("x.docx"))


def test_zip_bomb_ratio_refused_before_inflating() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"\0" * (20 * 1024 * 1024))
    assert len(buf.getvalue()) < 100_000
    with pytest.raises(ParseError, match="zip bomb"):
        DocxParser().parse(buf.getvalue(), Path("bomb.docx"))


def test_zip_bomb_total_size_refused() -> None:
    # A bomb may claim sizes whose ratio looks harmless; the total still gives it away.
    # Store three small entries, then write 100 MB each as their size in the central
    # directory (the parser must refuse from the directory alone, without inflating).
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        zf.writestr("word/document.xml", "<w:document/>")
        for i in range(3):
            zf.writestr(f"word/media/big{i}.bin", b"x" * 1_000_000)
    data = bytearray(buf.getvalue())
    pos = data.find(b"PK\x01\x02")  # central directory file headers
    while pos != -1:
        name_len = int.from_bytes(data[pos + 28 : pos + 30], "little")
        if bytes(data[pos + 46 : pos + 46 + name_len]).startswith(b"word/media/"):
            data[pos + 24 : pos + 28] = (100 * 1024 * 1024).to_bytes(4, "little")
        pos = data.find(b"PK\x01\x02", pos + 4)
    with pytest.raises(ParseError, match="over the 200 MB limit"):
        DocxParser().parse(bytes(data), Path("big.docx"))


def test_empty_document() -> None:
    with pytest.raises(ParseError, match="no text content"):
        DocxParser().parse(_save(docx.Document()), Path("empty.docx"))


def test_outline_level_content_controls_insertions_and_hyperlinks() -> None:
    from docx.oxml import OxmlElement, parse_xml
    from docx.oxml.ns import nsdecls, qn

    d = docx.Document()
    d.add_heading("Top", level=1)
    d.add_heading("Second top", level=1)
    p = d.add_paragraph("Outlined")
    lvl = OxmlElement("w:outlineLvl")
    lvl.set(qn("w:val"), "1")
    p._p.get_or_add_pPr().append(lvl)
    para = d.add_paragraph("Tracked ")
    for xml in (
        f'<w:ins {nsdecls("w")} w:id="1" w:author="a"><w:r><w:t>insert</w:t></w:r></w:ins>',
        f'<w:del {nsdecls("w")} w:id="2" w:author="a"><w:r><w:delText>gone</w:delText></w:r></w:del>',
        f'<w:hyperlink {nsdecls("w")}><w:r><w:t xml:space="preserve"> and link</w:t></w:r></w:hyperlink>',
    ):
        para._p.append(parse_xml(xml))
    sdt = parse_xml(
        f"<w:sdt {nsdecls('w')}><w:sdtContent><w:p><w:r><w:t>Inside a control</w:t></w:r></w:p>"
        "</w:sdtContent></w:sdt>"
    )
    d.element.body.insert(len(d.element.body) - 1, sdt)  # before the final sectPr
    doc = DocxParser().parse(_save(d), Path("x.docx"))
    assert doc.title == "Top"  # two level-1 headings: the first names the file, stays in trails
    assert _spans(doc) == [
        ("heading", "Top", ("Top",)),
        ("heading", "Second top", ("Second top",)),
        ("heading", "Outlined", ("Second top", "Outlined")),
        ("paragraph", "Tracked insert and link", ("Second top", "Outlined")),
        ("paragraph", "Inside a control", ("Second top", "Outlined")),
    ]
