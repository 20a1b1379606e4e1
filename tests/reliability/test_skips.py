"""Skips are not failures: what a folder holds besides documents (pipes, sockets, link loops, links to
folders, files of other types) and files with no text to index (a documentation set's navigation-only
pages) are listed as skipped with the reason, in text and --json, and `add` exits 0; a real failure
beside them still exits 3. End to end through the `citeline` command."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from .util import cli, write_docs

NAV_ONLY = """<!DOCTYPE html><html><head><title>Part II. The Guide</title></head><body>
<nav role="navigation"><a href="index.html">Prev</a> <a href="ch1.html">Next</a></nav>
<nav class="toc"><ul><li><a href="ch1.html">1. Getting started</a></li><li><a href="ch2.html">2. Tuning</a></li></ul></nav>
<footer><a href="index.html">Home</a></footer>
</body></html>
"""

CHAPTER = """<!DOCTYPE html><html><head><title>1. Getting started</title></head><body>
<div class="navheader"><a href="index.html">Home</a></div>
<main><h1>1. Getting started</h1><p>The warehouse service listens on port 7340 and keeps its queue
in the spool folder. Restart it after changing the spool limits.</p></main>
</body></html>
"""


@pytest.fixture()
def folder(tmp_path: Path) -> Iterator[Path]:
    """A documentation folder as users keep them: two documents, navigation-only pages, an empty
    note, and entries that are not documents at all."""
    docs = tmp_path / "docs"
    write_docs(docs, 1)
    (docs / "ch1.html").write_text(CHAPTER, encoding="utf-8")
    (docs / "part2.html").write_text(NAV_ONLY, encoding="utf-8")
    (docs / "sub").mkdir()
    (docs / "sub" / "index.htm").write_text(NAV_ONLY, encoding="utf-8")
    (docs / "empty.md").write_text("\n\n", encoding="utf-8")
    (docs / "prices.csv").write_text("item,price\nbolt,3\n", encoding="utf-8")
    (docs / "data.json").write_text('{"a": 1}\n', encoding="utf-8")
    (docs / "Makefile").write_text("all:\n\ttrue\n", encoding="utf-8")
    os.mkfifo(docs / "pipe")  # a reader that opened it would block
    (docs / "loop").symlink_to(docs / "loop")  # a link to itself
    (docs / "loop.md").symlink_to(docs / "loop.md")
    (docs / "elsewhere").symlink_to(tmp_path)  # a link to a folder: not followed
    (docs / ".hidden.csv").write_text("left out unsaid\n", encoding="utf-8")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(docs / "daemon.sock"))
    try:
        yield docs
    finally:
        server.close()


#: each skipped entry (named as given) and a part of its reason
EXPECTED = {
    "part2.html": "no text content",
    "sub/index.htm": "no text content",
    "empty.md": "no text to index",
    "prices.csv": "unsupported file type '.csv'",
    "data.json": "unsupported file type '.json'",
    "Makefile": "unsupported file type '(none)'",
    "pipe": "a named pipe (FIFO), not a regular file",
    "loop": "a symbolic link loop",
    "loop.md": "a symbolic link loop",
    "elsewhere": "a symbolic link to a folder",
    "daemon.sock": "a socket",
}


def test_skipped_entries_and_pages_without_text_are_listed_and_exit_0(folder: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    proc = cli(index, "add", str(folder), "--json", timeout=90)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 0 and data["failed"] == []
    assert sorted(Path(s).name for s in data["added"]) == ["ch1.html", "report-000.md"]
    skipped = {Path(s["source"]).relative_to(folder).as_posix(): s["reason"] for s in data["skipped"]}
    assert set(skipped) == set(EXPECTED), skipped  # the hidden file is left out unsaid
    for name, part in EXPECTED.items():
        assert part in skipped[name], (name, skipped[name])
    assert ".docx, .htm, .html" in skipped["prices.csv"]  # says what is read instead

    # the text report lists each with its reason, and the summary counts them; still exit 0
    again = cli(index, "add", str(folder), timeout=90)
    assert again.returncode == 0, again.stderr
    assert "0 added, 0 updated, 2 unchanged, 0 failed, 11 skipped" in again.stdout
    for name, part in EXPECTED.items():
        assert f"skipped: {folder / name}: " in again.stderr and part in again.stderr, name
    assert ".hidden" not in again.stderr and "failed:" not in again.stderr


def test_a_real_failure_beside_skips_still_exits_3(folder: Path, tmp_path: Path) -> None:
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n this is not a PDF at all\n")
    (folder / "blob.txt").write_bytes(b"\x00\x01\x02\x03" * 64)
    proc = cli(tmp_path / "index", "add", str(folder), "--json", timeout=90)
    assert proc.returncode == 3, proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 3
    assert sorted(Path(f["source"]).name for f in data["failed"]) == ["blob.txt", "broken.pdf"]
    assert len(data["skipped"]) == len(EXPECTED)


def test_a_page_that_loses_its_text_is_skipped_and_its_indexed_version_kept(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "guide.html"
    page.write_text(CHAPTER, encoding="utf-8")
    index = tmp_path / "index"
    assert cli(index, "add", str(docs)).returncode == 0
    page.write_text(NAV_ONLY, encoding="utf-8")
    proc = cli(index, "add", str(docs), "--json")
    assert proc.returncode == 0, proc.stderr
    (skip,) = json.loads(proc.stdout)["skipped"]
    assert skip["reason"] == "no text content; the version indexed before is kept"
    listed = cli(index, "documents", "--json")
    assert "guide.html" in listed.stdout


def test_many_skips_are_counted_past_the_first_fifty_in_text(tmp_path: Path) -> None:
    docs = tmp_path / "photos"
    write_docs(docs, 1)
    for i in range(60):
        (docs / f"img-{i:02d}.png").write_bytes(b"\x89PNG\r\n")
    proc = cli(tmp_path / "index", "add", str(docs))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("unsupported file type '.png'") == 50
    assert "skipped: 10 more (add --json lists each with its reason)" in proc.stderr
    assert "60 skipped" in proc.stdout


def test_files_named_directly_still_fail_when_not_documents(tmp_path: Path) -> None:
    """Named one by one, a file of an unsupported type is an error the caller made (exit 3); an
    empty one is skipped (there is nothing wrong with it)."""
    csv = tmp_path / "prices.csv"
    csv.write_text("item,price\n", encoding="utf-8")
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    proc = cli(tmp_path / "index", "add", str(csv), str(empty), "--json")
    assert proc.returncode == 3
    data = json.loads(proc.stdout)
    assert [Path(f["source"]).name for f in data["failed"]] == ["prices.csv"]
    assert [Path(s["source"]).name for s in data["skipped"]] == ["empty.txt"]
