"""`citeline keys`, lazy imports, the wheel's static files, and PDF word positions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import citeline
from citeline.access import create_key
from citeline.server.pdf_pages import parse_with_positions, render_png, span_boxes

from .conftest import ROOT, manual_pdf

STATIC = ("index.html", "app.js", "docs.js", "app.css")


def cli(index: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CITELINE_INDEX": str(index)}
    return subprocess.run(
        [sys.executable, "-m", "citeline", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_keys_create_list_revoke(tmp_path: Path) -> None:
    index = tmp_path / "index"
    made = cli(
        index, "keys", "create", "--user", "alice", "--groups", "finance,ops", "--role", "writer", "--json"
    )
    assert made.returncode == 0, made.stderr
    record = json.loads(made.stdout)
    assert (
        record["key"].startswith("cl_")
        and record["groups"] == ["finance", "ops"]
        and record["role"] == "writer"
    )
    listed = cli(index, "keys", "list", "--json")
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == [record["id"]]
    assert record["key"] not in listed.stdout and "key_hash" not in listed.stdout
    assert cli(index, "keys", "create", "--user", "root", "--admin", "--quiet").stdout.startswith("cl_")
    bad = cli(index, "keys", "create", "--user", "../evil")
    assert bad.returncode != 0 and "not valid" in bad.stderr
    assert cli(index, "keys", "revoke", record["id"]).returncode == 0
    again = cli(index, "keys", "revoke", record["id"])
    assert again.returncode != 0 and "No active key" in again.stderr
    assert json.loads(cli(index, "keys", "list", "--json").stdout)[0]["user"] == "root"
    mcp = cli(index, "mcp", "--key", record["key"])
    assert mcp.returncode != 0 and "revoked" in mcp.stderr


def test_keys_expire(tmp_path: Path) -> None:
    index = tmp_path / "index"
    made = cli(index, "keys", "create", "--user", "alice", "--expires", "30d")
    assert made.returncode == 0, made.stderr
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 30 * 86400))
    assert f"expires {day}" in made.stdout
    dated = cli(index, "keys", "create", "--user", "bob", "--expires", "2099-01-31", "--json")
    assert json.loads(dated.stdout)["expires_at"] == datetime(2099, 1, 31, tzinfo=UTC).timestamp()
    listed = cli(index, "keys", "list").stdout
    assert f"expires {day}" in listed and "expires 2099-01-31 00:00 UTC" in listed
    for when, reason in (("2001-01-01", "already past"), ("soon", "neither a duration"), ("0d", "zero")):
        bad = cli(index, "keys", "create", "--user", "carol", "--expires", when)
        assert bad.returncode == 1 and reason in bad.stderr and "Traceback" not in bad.stderr
    # a key past its expiry: refused, and listed as expired with --all only
    kb = citeline.open(index)
    key, record = create_key(kb.store, "dora", expires_at=time.time() + 0.5)
    kb.close()
    time.sleep(0.6)
    assert record.id not in cli(index, "keys", "list").stdout
    assert re.search(rf"{record.id}\s+dora.*expired", cli(index, "keys", "list", "--all").stdout)
    refused = cli(index, "mcp", "--key", key)
    assert refused.returncode != 0 and "expired on" in refused.stderr


def test_help_does_not_import_the_server_stack() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom citeline.cli.main import main\n"
        "r = CliRunner().invoke(main, ['--help'])\nassert r.exit_code == 0 and 'serve' in r.output, r.output\n"
        "bad = [m for m in ('fastapi', 'uvicorn', 'mcp', 'starlette', 'prometheus_client') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_web_page_uses_no_html_parsing() -> None:
    for path in (ROOT / "src" / "citeline" / "server" / "static").glob("*.js"):
        script = path.read_text(encoding="utf-8")
        for forbidden in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
        ):
            assert forbidden not in script, (path.name, forbidden)


def test_wheel_includes_the_web_page_and_the_trained_model(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("citeline-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in STATIC:
        assert f"citeline/server/static/{name}" in names
    # our trained reader and claim checker ship inside the package, with their span head and model card
    for name in ("model.onnx", "span.onnx", "tokenizer.json", "config.json", "MODEL_CARD.md"):
        assert f"citeline/answer/data/cross-encoder/{name}" in names


def test_pdf_word_positions_map_the_stored_text_back_to_the_page() -> None:
    data = manual_pdf()
    parsed, positions = parse_with_positions(data)
    assert positions
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    page_text = pdf[0].get_textpage().get_text_range()
    for p in positions:
        # every mapped word is the same characters in the stored text and on the page
        assert parsed.text[p.start : p.start + p.length] == page_text[p.char : p.char + p.length]
    pdf.close()
    quote = "rotate it early"
    start = parsed.text.index(quote)
    boxes = span_boxes(data, positions, 1, start, start + len(quote))
    assert len(boxes) == 1 and 0.3 < boxes[0].x < 0.7 and boxes[0].w < 0.3
    whole = span_boxes(data, positions, 1, 0, len(parsed.text))
    assert len(whole) >= 4  # title + three body lines
    assert render_png(data, 1, 0.5).startswith(b"\x89PNG")
