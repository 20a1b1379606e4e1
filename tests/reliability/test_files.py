"""Files as users keep them: pipes, sockets and devices in folders, files deleted from an added
folder, missing paths, exit codes, `citeline documents`, --json errors and hostile file names."""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

import citeline
from citeline.filters import Filter
from citeline.kb import KnowledgeBase

from .util import cli, write_docs


@pytest.fixture()
def hkb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    yield kb
    kb.close()


def sources(kb: KnowledgeBase) -> set[str]:
    return {d.source for d in kb.documents(Filter.admin())}


# -- only regular files are read -------------------------------------------------------------------


def test_a_fifo_in_a_folder_is_skipped_and_never_opened(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 2)
    os.mkfifo(docs / "stuck.md")  # a reader that opened it would block until someone writes
    index = tmp_path / "index"
    proc = cli(index, "add", str(docs), "--json", timeout=60)  # a hang fails here, not forever
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["added"]) == 2
    assert [s["source"] for s in data["skipped"]] == [str(docs / "stuck.md")]
    assert "named pipe" in data["skipped"][0]["reason"]
    text = cli(index, "add", str(docs), timeout=60)
    assert text.returncode == 0 and "1 skipped" in text.stdout and "named pipe" in text.stderr
    # given directly it is refused with the reason (exit 3: a file failed), still without blocking
    direct = cli(index, "add", str(docs / "stuck.md"), timeout=60)
    assert direct.returncode == 3 and "named pipe" in direct.stderr


def test_sockets_devices_and_broken_links_are_skipped(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "d"
    write_docs(docs, 1)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(docs / "sock.md"))
    try:
        (docs / "null.txt").symlink_to("/dev/null")
        (docs / "dangling.md").symlink_to(docs / "nowhere.md")
        (docs / "alias.md").symlink_to(docs / "report-000.md")  # a link to a regular file is read
        report = hkb.add([docs])
    finally:
        server.close()
    skipped = {Path(s).name: r for s, r in report.skipped}
    assert "socket" in skipped["sock.md"] and "character device" in skipped["null.txt"]
    assert "broken symbolic link" in skipped["dangling.md"]
    assert {Path(s).name for s in report.added} == {"report-000.md", "alias.md"}
    assert not report.failed


def test_a_file_swapped_for_a_pipe_after_the_walk_is_refused_without_blocking(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import citeline.ingest.pipeline as pipeline
    from citeline.ingest.files import read_regular

    docs = tmp_path / "d"
    write_docs(docs, 1)
    target = docs / "report-000.md"

    def swap(path: str, source: str, limit: int) -> tuple[bytes, float]:
        if Path(path) == target:  # it was a file when the walk looked at it; a pipe when opened
            target.unlink()
            os.mkfifo(target)
        return read_regular(path, source, limit)

    monkeypatch.setattr(pipeline, "read_regular", swap)
    report = hkb.add([docs])
    assert not report.added and "not a regular file" in dict(report.failed)[str(target)]


# -- reconciling a folder --------------------------------------------------------------------------


def test_deleted_files_are_removed_when_the_folder_is_added_again(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 4)
    assert len(hkb.add([docs]).added) == 4
    (docs / "report-002.md").unlink()
    report = hkb.add([docs])
    assert [Path(s).name for s in report.removed] == ["report-002.md"]
    assert "1 removed" in report.summary()
    assert not any("report-002" in s for s in sources(hkb))
    hits = hkb.search("report 2 component C2-1 retries", Filter.admin(), k=30)
    assert all("report-002" not in h.source for h in hits)  # no longer cited


def test_keep_missing_keeps_and_reports(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 4)
    hkb.add([docs])
    (docs / "report-001.md").unlink()
    report = hkb.add([docs], keep_missing=True)
    assert not report.removed and [Path(s).name for s in report.missing] == ["report-001.md"]
    assert len(sources(hkb)) == 4


def test_nothing_is_removed_from_a_missing_empty_or_unreadable_folder(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 3)
    hkb.add([docs])
    # unreadable (simulated: the test may run as root, which reads any folder)
    real_scandir = os.scandir

    def denied(path: str | os.PathLike[str] = ".") -> object:
        if Path(path) == docs:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    report = hkb.add([docs])
    monkeypatch.setattr(os, "scandir", real_scandir)
    assert not report.removed and len(sources(hkb)) == 3
    assert "not readable" in dict(report.failed)[str(docs)] and report.notes
    # empty (every file moved away, e.g. an unmounted share's mount point)
    for f in docs.iterdir():
        f.rename(tmp_path / f.name)
    report = hkb.add([docs], prune=True)
    assert not report.removed and len(sources(hkb)) == 3 and "holds no file" in report.notes[0]
    # missing
    docs.rmdir()
    report = hkb.add([docs], prune=True)
    assert not report.removed and report.not_found == [str(docs)] and len(sources(hkb)) == 3


def test_an_unreadable_subfolder_keeps_its_documents(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    write_docs(docs / "team-a", 2)
    write_docs(docs / "team-b", 2)
    hkb.add([docs])
    real_scandir = os.scandir

    def denied(path: str | os.PathLike[str] = ".") -> object:
        if Path(path) == docs / "team-b":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", denied)
    report = hkb.add([docs])
    assert not report.removed and len(sources(hkb)) == 4


def test_removing_more_than_half_needs_prune(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 4)
    hkb.add([docs])
    for i in (0, 1, 2):
        (docs / f"report-{i:03d}.md").unlink()
    report = hkb.add([docs])
    assert not report.removed and len(report.missing) == 3 and report.prune_needed
    assert "--prune" in report.notes[0] and len(sources(hkb)) == 4
    report = hkb.add([docs], prune=True)
    assert len(report.removed) == 3 and len(sources(hkb)) == 1


def test_uploads_and_other_collections_are_never_reconciled(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 2)
    hkb.add([docs])
    hkb.add([docs], collection="mirror")
    hkb.add_bytes("notes.md", b"# Notes\n\nThe canteen opens at eight.\n", collection="uploads/alice")
    (docs / "report-000.md").unlink()
    report = hkb.add([docs])  # the default collection only
    assert len(report.removed) == 1
    left = {(d.collection, Path(d.source).name) for d in hkb.documents(Filter.admin())}
    assert ("mirror", "report-000.md") in left and ("uploads/alice", "notes.md") in left
    # a folder added into an uploads collection is never reconciled either
    hkb.add([docs], collection="uploads/bob")
    (docs / "report-001.md").unlink()
    (docs / "other.md").write_text("# Other\n\nSomething else entirely.\n", encoding="utf-8")
    assert not hkb.add([docs], collection="uploads/bob").removed


# -- the command line: exit codes, documents, --json errors, escaping ----------------------------------


def test_exit_codes_and_summary(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 2)
    (docs / "bad.txt").write_bytes(b"\x00\x01\x02" * 10)
    index = tmp_path / "index"
    some_failed = cli(index, "add", str(docs))
    assert some_failed.returncode == 3, some_failed.stderr
    assert (
        "2 added, 0 updated, 0 unchanged, 1 failed" in some_failed.stdout and "bad.txt" in some_failed.stderr
    )
    (docs / "bad.txt").unlink()
    assert cli(index, "add", str(docs)).returncode == 0
    missing = cli(index, "add", str(tmp_path / "does-not-exist"))
    assert missing.returncode == 2 and "No such file or folder" in missing.stderr
    mixed = cli(index, "add", str(docs), str(tmp_path / "nope.md"))
    assert mixed.returncode == 2 and "2 unchanged" in mixed.stdout and "nope.md" in mixed.stderr
    untouched = cli(tmp_path / "fresh", "add", str(tmp_path / "nope"))
    assert untouched.returncode == 2 and not (tmp_path / "fresh").exists()  # no index made for nothing
    bad_flag = cli(index, "add", "--acl", "everyone", str(docs))
    assert bad_flag.returncode == 2
    for i in range(2):
        (docs / f"report-{i:03d}.md").unlink()
    (docs / "keep.md").write_text("# Keep\n\nKeep this one.\n", encoding="utf-8")
    needs_prune = cli(index, "add", str(docs))
    assert needs_prune.returncode == 3 and "--prune" in needs_prune.stderr
    assert cli(index, "add", str(docs), "--prune").returncode == 0


def test_documents_lists_what_is_indexed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 2)
    index = tmp_path / "index"
    cli(index, "add", str(docs), "--acl", "group:eng")
    data = json.loads(cli(index, "documents", "--json").stdout)
    assert data["total"] == 2 and {Path(d["source"]).name for d in data["documents"]} == {
        "report-000.md",
        "report-001.md",
    }
    row = data["documents"][0]
    assert row["chunks"] >= 1 and row["acl"] == ["group:eng"] and row["format"] == "markdown"
    assert json.loads(cli(index, "documents", "--json", "--as", "user:bob").stdout)["total"] == 0
    text = cli(index, "documents")
    assert text.returncode == 0 and "report-000.md" in text.stdout
    shown = cli(index, "show", "nope.md")
    assert shown.returncode == 1 and "citeline documents" in shown.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "--json"),  # missing argument: a usage error
        ("search", "--json", "--tag", "novalue", "x"),
        ("status", "--json"),  # not an index
        ("trace", "--json", "0000"),
        ("documents", "--json"),
        ("check", "--json"),
        ("config", "--json", "--bogus"),
        ("add", "--json", "/does/not/exist"),
        ("keys", "list", "--json"),
        ("ask", "--json", "   "),
    ],
)
def test_json_errors_are_json_on_stdout_with_a_nonzero_exit(tmp_path: Path, args: tuple[str, ...]) -> None:
    folder = tmp_path / "not-an-index"
    folder.mkdir()
    (folder / "photo.jpg").write_bytes(b"\xff\xd8")
    proc = cli(folder, *args)
    assert proc.returncode != 0, proc.stdout
    data = json.loads(proc.stdout)
    assert set(data["error"]) == {"code", "message", "exit_code"}
    assert data["error"]["exit_code"] == proc.returncode and data["error"]["message"]
    assert "Traceback" not in proc.stderr


def test_names_with_newlines_and_escape_codes_are_shown_escaped(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    evil = "evil\n0 added, 0 failed\x1b[2J\x1b]52;c;aGk=\x07\u202eobat.md"
    (docs / evil).write_text(
        "# \x1b[31mRed title\n\nThe zanzibar gauge reads \x1b[2J forty.\n", encoding="utf-8"
    )
    (docs / "bad\x1b[2J.txt").write_bytes(b"\x00" * 10)
    index = tmp_path / "index"
    added = cli(index, "add", str(docs))
    search = cli(index, "search", "zanzibar gauge")
    documents = cli(index, "documents")
    shown = cli(index, "show", str(docs / evil))
    for proc in (added, search, documents, shown):
        for stream in (proc.stdout, proc.stderr):
            assert "\x1b" not in stream and "\u202e" not in stream and "\x07" not in stream
    assert "\\x1b[2J" in added.stderr  # visible, not obeyed
    assert "evil\\n0 added" in documents.stdout  # one line per document
    assert documents.stdout.count("\n") == 1
    as_json = json.loads(cli(index, "documents", "--json").stdout)
    assert as_json["documents"][0]["source"].endswith(evil)  # JSON keeps the exact name
    assert "\\u202e" in cli(index, "documents", "--json").stdout  # escaped in the JSON text


def test_file_names_are_escaped_by_the_terminal_helpers() -> None:
    from citeline import terminal

    assert terminal.name("a\nb\tc\x1b[0m\x9b\u202e\\") == "a\\nb\\tc\\x1b[0m\\x9b\\u202e\\\\"
    assert terminal.text("line 1\nline\t2\r\x1b]0;x\x07") == "line 1\nline\t2\\r\\x1b]0;x\\x07"
    assert terminal.json_text('"\u202e\x85"') == '"\\u202e\\u0085"'


def test_mode_bits_of_special_files_are_recognised(tmp_path: Path) -> None:
    from citeline.ingest.files import not_regular

    os.mkfifo(tmp_path / "p")
    assert not_regular(tmp_path / "p") == "a named pipe (FIFO)"
    assert not_regular(tmp_path) == "a folder"
    assert not_regular("/dev/null") == "a character device"
    (tmp_path / "f").write_text("x")
    assert not_regular(tmp_path / "f") is None
    assert stat.S_ISREG(os.stat(tmp_path / "f").st_mode)
