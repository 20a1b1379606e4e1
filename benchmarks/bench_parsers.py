"""Parser throughput: PDF pages/s, HTML and DOCX documents/s.

    python benchmarks/bench_parsers.py [CORPUS_DIR] [--json] [--limit N]

CORPUS_DIR is searched recursively for .pdf, .html/.htm and .docx files. Without it a
synthetic corpus is generated in a temporary folder (PDFs need reportlab, as the tests do).
Each file is read into memory first, so the figures are parse time only, one process,
one thread.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from citeline.errors import ParseError
from citeline.ingest.formats.docx import DocxParser
from citeline.ingest.formats.html import HtmlParser
from citeline.ingest.formats.pdf import PdfParser

PARSERS = {".pdf": PdfParser(), ".html": HtmlParser(), ".htm": HtmlParser(), ".docx": DocxParser()}
WORDS = (
    "gateway request latency cache token route policy header upstream retry budget "
    "timeout cluster region replica shard index query vector answer citation span"
).split()


def _sentence(i: int, n: int = 14) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(n)).capitalize() + "."


def synthesize(folder: Path, pdfs: int = 10, pdf_pages: int = 40, htmls: int = 200, docxs: int = 20) -> None:
    for d in range(htmls):
        body = "".join(
            f"<h2>Section {s}</h2>"
            + "".join(f"<p>{_sentence(d + s + p, 30)}</p>" for p in range(4))
            + "<ul>"
            + "".join(f"<li>{_sentence(s + li, 6)}</li>" for li in range(3))
            + "</ul><table><tr><th>key</th><th>value</th></tr><tr><td>a</td><td>1</td></tr></table>"
            for s in range(6)
        )
        html = (
            f"<html><head><title>Doc {d}</title></head><body><nav>menu</nav>"
            f"<main><h1>Doc {d}</h1>{body}</main></body></html>"
        )
        (folder / f"doc{d}.html").write_text(html, encoding="utf-8")
    import docx

    for d in range(docxs):
        document = docx.Document()
        for s in range(10):
            document.add_heading(f"Section {s}", level=1 + s % 2)
            for p in range(5):
                document.add_paragraph(_sentence(d + s + p, 30))
        buf = io.BytesIO()
        document.save(buf)
        (folder / f"doc{d}.docx").write_bytes(buf.getvalue())
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.ingest.pdfgen import Bookmark, Page, build_pdf, flow
    except ImportError as exc:  # reportlab missing
        print(f"(no synthetic PDFs: {exc})", file=sys.stderr)
        return
    for d in range(pdfs):
        pages, outline = [], []
        for p in range(pdf_pages):
            paras = [(14.0, [f"Chapter {p}"])] + [(10.0, _sentence(d + p + k, 60)) for k in range(5)]
            lines, _ = flow(paras)
            pages.append(Page(list(lines)))
            outline.append(Bookmark(f"Chapter {p}", p))
        (folder / f"doc{d}.pdf").write_bytes(build_pdf(pages, title=f"Doc {d}", outline=outline))


def bench(folder: Path, limit: int | None) -> dict[str, dict[str, float]]:
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in PARSERS and p.is_file())
    by_format: dict[str, list[Path]] = {}
    for f in files:
        fmt = PARSERS[f.suffix.lower()].format
        by_format.setdefault(fmt, []).append(f)
    results: dict[str, dict[str, float]] = {}
    for fmt, paths in sorted(by_format.items()):
        paths = paths[:limit] if limit else paths
        times: list[float] = []
        pages = chars = errors = size = 0
        for path in paths:
            data = path.read_bytes()
            size += len(data)
            t0 = time.perf_counter()
            try:
                doc = PARSERS[path.suffix.lower()].parse(data, path)
            except ParseError as exc:
                errors += 1
                print(f"  skipped {exc}", file=sys.stderr)
                continue
            finally:
                times.append(time.perf_counter() - t0)
            pages += doc.page_count or 0
            chars += len(doc.text)
        total = sum(times)
        results[fmt] = {
            "documents": len(paths),
            "errors": errors,
            "megabytes": round(size / 1e6, 2),
            "seconds": round(total, 3),
            "documents_per_s": round(len(paths) / total, 1) if total else 0.0,
            "pages": pages,
            "pages_per_s": round(pages / total, 1) if total and pages else 0.0,
            "chars_per_s": round(chars / total) if total else 0,
            "p50_ms": round(statistics.median(times) * 1000, 2) if times else 0.0,
            "max_ms": round(max(times) * 1000, 2) if times else 0.0,
        }
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="?", type=Path, help="folder of .pdf/.html/.docx files")
    ap.add_argument("--limit", type=int, default=None, help="at most N files per format")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.corpus
        if folder is None:
            folder = Path(tmp)
            print(f"generating a synthetic corpus in {folder} ...", file=sys.stderr)
            synthesize(folder)
        results = bench(folder, args.limit)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"{'format':<6} {'docs':>6} {'err':>4} {'MB':>7} {'sec':>8} {'docs/s':>8} "
        f"{'pages':>6} {'pages/s':>8} {'p50 ms':>7} {'max ms':>8}"
    )
    for fmt, r in results.items():
        print(
            f"{fmt:<6} {r['documents']:>6} {r['errors']:>4} {r['megabytes']:>7} {r['seconds']:>8} "
            f"{r['documents_per_s']:>8} {r['pages'] or '-':>6} {r['pages_per_s'] or '-':>8} "
            f"{r['p50_ms']:>7} {r['max_ms']:>8}"
        )


if __name__ == "__main__":
    main()
