"""PIPELINE_VERSION follows what files turn into: an index redoes a stored document only when its
pipeline signature changed, so a parser or chunker fix that forgets to bump the version never
reaches files that were indexed before it (they stay as the old code parsed them)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from citeline.embedding import make_embedder
from citeline.ingest.pipeline import PIPELINE_VERSION, make_chunker
from citeline.ingest.registry import parser_for
from citeline.settings import Settings
from test_formats_e2e import _docx, _html, _pdf

from .test_html import PAGE as HTML_PAGE
from .test_manpage import NAMED_PAGE
from .test_manpage import PAGE as MAN_PAGE
from .test_markdown import API_PAGE
from .test_pdf_labels import handbook
from .test_text_manpage import PAGE as TEXT_MAN_PAGE

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

# What the corpus below turns into under each PIPELINE_VERSION. When this test fails, parsing or
# chunking changed what files turn into: bump PIPELINE_VERSION (ingest/pipeline.py, with a note of
# what changed) and add the new version's fingerprint here.
FINGERPRINTS = {
    "6": "52cf1680217bdc03",  # before the corpus held HTML inside Markdown and a labelled PDF
    "7": "88a85284e9763196",  # before it held a manual page rendered to text and a long table
    "8": "1463ba9ac4d4730d",
}


def _corpus(folder: Path) -> list[Path]:
    """Every format the parsers read: the bundled samples (Markdown, text), a PDF, a DOCX, HTML
    with structure, a manual page in <pre>, Markdown with HTML comments and an HTML table, and a
    PDF with a title page, printed page labels and accents drawn apart, a manual page rendered to
    text, and a table long enough to be cut into pieces under its caption."""
    files = sorted(SAMPLES.iterdir())
    _pdf(folder / "pump.pdf")
    (folder / "api.md").write_text(API_PAGE, encoding="utf-8")
    (folder / "handbook.pdf").write_bytes(handbook())
    _docx(folder / "travel.docx")
    _html(folder / "office.html")
    (folder / "page.html").write_bytes(HTML_PAGE)
    (folder / "frobd_config.5.txt").write_text(TEXT_MAN_PAGE, encoding="utf-8")
    rows = "\n".join(
        f"| E{i:04d} | error number {i} | {'retry later' if i % 2 else 'fix the input'} |" for i in range(120)
    )
    table = f"# Codes\n\nTable 1. Error codes\n\n| Code | Meaning | Action |\n|---|---|---|\n{rows}\n"
    (folder / "codes.md").write_text(table, encoding="utf-8")
    for name, page in (("postqueue.1.html", MAN_PAGE), ("posttls-finger.1.html", NAMED_PAGE)):
        man = f"<html><head><title>{name}</title></head><body><pre>{page}</pre></body></html>"
        (folder / name).write_text(man, encoding="utf-8")
    return files + sorted(p for p in folder.iterdir())


def fingerprint(files: list[Path]) -> str:
    chunker = make_chunker(make_embedder("minilm-int8"), Settings())
    digest = hashlib.sha256()
    for path in files:
        parsed = parser_for(path).parse(path.read_bytes(), path)
        chunks = chunker.chunk(parsed, "doc")
        record = {
            "file": path.name,
            "text": parsed.text,
            "title": parsed.title,
            "blocks": [dataclasses.astuple(b) for b in parsed.blocks],
            "chunks": [(c.start, c.end, c.index_text, c.heading_trail, c.kind, c.page) for c in chunks],
        }
        digest.update(json.dumps(record, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:16]


def test_what_files_turn_into_changes_only_with_the_pipeline_version(tmp_path: Path) -> None:
    found = fingerprint(_corpus(tmp_path))
    assert FINGERPRINTS.get(PIPELINE_VERSION) == found, (
        f"parsing or chunking now gives fingerprint {found!r} under PIPELINE_VERSION "
        f"{PIPELINE_VERSION!r}: if what files turn into changed, bump PIPELINE_VERSION and add "
        "the fingerprint to FINGERPRINTS"
    )
