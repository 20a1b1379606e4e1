"""A manual page rendered to text (`man -l page.5 > page.5.txt`) is read as a manual page."""

from __future__ import annotations

from pathlib import Path

from citeline.ingest.formats.text import TextParser

PAGE = """FROBD_CONFIG(5)              File Formats Manual              FROBD_CONFIG(5)

NAME
     frobd_config — frob daemon configuration file

DESCRIPTION
     frobd(8) reads its configuration from /etc/frobd.conf.  Keywords are as
     follows:

     MaxFrobs
             Specifies the maximum number of concurrent frobs.  Frobs beyond
             the limit are queued.

             The default is 10.

     FrobMode
             Selects the mode.  The Debian package sets:

           •   FrobMode fast
           •   MaxFrobs 20

SEE ALSO
     frobd(8)

Debian                             May 3, 2024                             Debian
"""

PLAIN = "A note.\n\nIt has two paragraphs and no sections.\n"


def _parse(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return TextParser().parse(path.read_bytes(), path)


def test_a_rendered_manual_page_has_its_sections_and_entries_as_headings(tmp_path: Path) -> None:
    doc = _parse(tmp_path, "frobd_config.5.txt", PAGE)
    assert doc.title == "frobd_config — frob daemon configuration file"
    by_text = {doc.text[b.start : b.end]: b for b in doc.blocks}
    default = by_text["The default is 10."]
    assert default.heading_trail == ("Description", "MaxFrobs")  # the value filed under its keyword
    assert by_text["- FrobMode fast\n- MaxFrobs 20"].kind == "list"
    assert "Specifies the maximum number of concurrent frobs. Frobs beyond the limit are queued." in by_text
    assert "FROBD_CONFIG(5)" not in doc.text and "May 3, 2024" not in doc.text  # running title and foot


def test_plain_text_stays_paragraphs(tmp_path: Path) -> None:
    doc = _parse(tmp_path, "note.txt", PLAIN)
    assert [b.kind for b in doc.blocks] == ["paragraph", "paragraph"]
    assert all(b.heading_trail == () for b in doc.blocks)
