"""How the command ends when the user or the system gets in the way (issue 35, "Command line"):
each case through a real `citeline` subprocess, with the exit code and the one line it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import citeline
from conftest import ADMIN

NOT_UTF8_NAME = b"caf\xe9.md"  # Latin-1 "café.md": not valid UTF-8


def run(index: Path | str, *args: str | bytes, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env["CITELINE_EMBEDDER"] = "hashing"  # fast: these tests are about exits, not answers
    return subprocess.run(
        [sys.executable, "-m", "citeline", "--index", str(index), *args],
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=180,
    )


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("exits")
    docs = folder / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"pump-{i}.md").write_text(
            f"# Pump {i}\n\nPump {i} delivers {10 + i} litres a minute. Service it every {i + 2} months.\n",
            encoding="utf-8",
        )
    added = run(folder / "index", "add", str(docs))
    assert added.returncode == 0, added.stderr
    return folder / "index"


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("a-file/index", "a part of its path is a file"),  # under a regular file
        ("/proc/citeline-index", "folders cannot be made there"),
        ("/dev/null/index", "a part of its path is a file"),
    ],
)
def test_an_index_folder_that_cannot_be_created_is_a_clear_error(
    tmp_path: Path, where: str, reason: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    (tmp_path / "doc.md").write_text("# Doc\n\nSome text.\n", encoding="utf-8")
    folder = where if where.startswith("/") else str(tmp_path / where)
    proc = run(folder, "add", str(tmp_path / "doc.md"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "internal error" not in proc.stderr
    assert f"Cannot create the index folder {folder}: {reason}" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("documents",),
        ("documents", "--json"),
        ("search", "pump litres"),
        ("search", "--json", "pump litres"),
        ("ask", "How many litres a minute does pump 1 deliver?"),
        ("ask", "--json", "How many litres a minute does pump 1 deliver?"),
    ],
)
def test_a_closed_pipe_stops_the_command_quietly(index: Path, args: tuple[str, ...]) -> None:
    """`citeline documents | head -1`: the reader went away before the command wrote. It stops
    quietly with 141 (128 + SIGPIPE, as `yes | head -1` gives), not 1 with nothing said."""
    read, write = os.pipe()
    os.close(read)  # whatever the command writes now meets a closed pipe, every time
    try:
        proc = run(index, *args, stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_a_read_only_index_answers_without_a_python_warning(index: Path) -> None:
    kb = citeline.open(index, read_only=True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = kb.ask("How many litres a minute does pump 1 deliver?", ADMIN)
    finally:
        kb.close()
    assert answer.trace_id is None and answer.citations
    assert [str(w.message) for w in caught] == []  # was: "Could not write the trace (...)"


def test_a_read_only_mount_asks_with_one_line_at_most(index: Path, tmp_path: Path) -> None:
    view = tmp_path / "ro"
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(index), str(view)], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here (not root or no CAP_SYS_ADMIN)")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        plain = run(view, "ask", "How many litres a minute does pump 1 deliver?")
        assert plain.returncode == 0 and "[1]" in plain.stdout
        assert plain.stderr == ""  # was: "answerer.py:217: UserWarning: Could not write the trace"
        explained = run(view, "ask", "--explain", "How many litres a minute does pump 1 deliver?")
        assert explained.returncode == 0
        assert explained.stderr == "note: no trace was stored for this answer (the index is read-only here)\n"
    finally:
        subprocess.run(["umount", str(view)], capture_output=True)


def test_a_file_name_that_is_not_utf8_is_named_and_reported(index: Path, tmp_path: Path) -> None:
    docs = tmp_path / "latin1"
    docs.mkdir()
    (docs / "ok.md").write_text("# Ok\n\nThe ok file is fine.\n", encoding="utf-8")
    bad = os.path.join(os.fsencode(docs), NOT_UTF8_NAME)
    with open(bad, "wb") as f:
        f.write(b"# Cafe\n\nThe cafe opens at nine.\n")
    os.mkdir(os.path.join(os.fsencode(docs), b"dir\xff"))
    reason = "its name is not valid UTF-8, so it cannot be stored as a source; rename it (convmv) to index it"

    folder = run(tmp_path / "idx", "add", str(docs))
    assert folder.returncode == 3, folder.stderr  # some files failed; the others are added
    assert "1 added" in folder.stdout
    assert f"failed: {docs}/caf\\udce9.md: {reason}\n" in folder.stderr
    assert f"failed: {docs}/dir\\udcff: a folder: {reason} (nothing under it was read)\n" in folder.stderr
    assert "codec" not in folder.stderr

    named = run(tmp_path / "idx", "add", "--json", os.fsdecode(bad))
    assert named.returncode == 3, named.stderr
    report = json.loads(named.stdout)
    assert report["failed"] == [{"source": os.fsdecode(bad), "reason": reason}]

    shown = run(index, "show", os.fsdecode(bad))
    assert shown.returncode == 1 and "No document" in shown.stderr and "\\udce9" in shown.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("ask", ""), "The question is empty"),
        (("ask", "   "), "The question is empty"),
        (("ask", "--json", ""), '"exit_code": 2'),
        (("search", " "), "The query is empty"),
        (
            ("show", "{docs}/pump-1.md", "--span", "40:10"),
            "40:10 is reversed: START comes first (did you mean 10:40?)",
        ),
    ],
)
def test_usage_mistakes_exit_2(index: Path, args: tuple[str, ...], needle: str) -> None:
    proc = run(index, *(a.format(docs=index.parent / "docs") for a in args))
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
