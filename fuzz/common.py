"""Shared by the atheris harnesses (fuzz/fuzz_*.py): seeds, and the exceptions that are answers.

An input may be refused with a user-facing error (ParseError, ConfigError: CitelineError); any other
exception, a hang (libFuzzer -timeout) or a memory blow-up (-rss_limit_mb) is a finding.
"""

from __future__ import annotations

import io
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seeds() -> dict[str, bytes]:
    """One small valid file per format, so mutations start from real structure."""
    import docx

    d = docx.Document()
    d.add_heading("Valve Guide", level=1)
    d.add_paragraph("The valve V1 opens at 10 bar.")
    d.add_table(rows=2, cols=2).cell(0, 0).text = "a"
    buf = io.BytesIO()
    d.save(buf)
    sys.path.insert(0, str(ROOT / "tests" / "ingest"))
    from pdfgen import Line, Page, build_pdf

    pdf = build_pdf(
        [Page([Line(72, 740, "Pump Manual", size=18), Line(72, 700, "The pump runs at 40 rpm.")])]
    )
    body = zlib.compress(b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET")
    return {
        "seed.docx": buf.getvalue(),
        "seed.pdf": pdf,
        "flate.pdf": b"%PDF-1.4\n4 0 obj\n<< /Length "
        + str(len(body)).encode()
        + b" /Filter /FlateDecode >>\nstream\n"
        + body
        + b"\nendstream\nendobj\n%%EOF\n",
        "seed.md": b"# Title\n\n## Part\n\n- item [1]\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n",
        "seed.html": b"<html><head><title>T</title></head><body><h1>A</h1><p>x</p><table><tr><td>1</td></tr>"
        b"</table><script>x</script></body></html>",
        "seed.txt": b"Heading\n\nA paragraph of text.\n\nAnother one.\n",
    }


def write_corpus(folder: Path, names: list[str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if not any(folder.iterdir()):
        for name, data in seeds().items():
            if names is None or name in names:
                (folder / name).write_bytes(data)
    return folder
