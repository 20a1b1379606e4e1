"""Helpers of the reliability tests: the CLI in a subprocess, document folders, figures.

Long versions of these tests run under `make stress` / `make fuzz`, which raise the sizes
read here from CITELINE_TEST_* variables (never settings: the settings loader ignores that prefix).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import citeline
from citeline.filters import Filter

#: an index location: a folder (the embedded store) or a postgresql:// URL
Index = str | Path


def is_postgres(index: Index) -> bool:
    return str(index).startswith(("postgresql://", "postgres://"))


def size(name: str, default: int) -> int:
    """A loop size: CITELINE_TEST_<NAME> under `make stress` / `make fuzz`, else the CI default."""
    return int(os.environ.get(f"CITELINE_TEST_{name}", default))


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a `citeline` subprocess: the fast hashing embedder for new indexes."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("CITELINE_") or k.startswith("CITELINE_TEST_")
    }
    env["CITELINE_EMBEDDER"] = "hashing"
    env.update(extra)
    return env


def cli(index: Index, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline", "--index", str(index), *args],
        capture_output=True,
        text=True,
        env=cli_env(**env),
        timeout=timeout,
    )


def report_figures(name: str, figures: dict[str, Any]) -> None:
    """Print the figures a test measured, and keep them under $CITELINE_TEST_ARTIFACTS/reliability."""
    print(f"\n[figures] {name}: {json.dumps(figures, sort_keys=True)}")
    folder = os.environ.get("CITELINE_TEST_ARTIFACTS")
    if folder:
        out = Path(folder) / "reliability"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}.json").write_text(json.dumps(figures, indent=2, sort_keys=True), encoding="utf-8")


def document(i: int, version: int = 0, paragraphs: int = 6) -> str:
    """A Markdown document whose every paragraph names its number and version."""
    body = "\n\n".join(
        f"## Part {j}\n\nRevision {version} of report {i}: component C{i}-{j} retries every {j + 2} seconds "
        f"and gives up after {j + 5} attempts; the quorum of cluster Q{i} is {j + 3} nodes."
        for j in range(paragraphs)
    )
    return f"# Report {i}\n\n{body}\n"


def write_docs(folder: Path, n: int, version: int = 0, paragraphs: int = 6) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    texts = {}
    for i in range(n):
        text = document(i, version, paragraphs)
        (folder / f"report-{i:03d}.md").write_text(text, encoding="utf-8")
        texts[f"report-{i:03d}.md"] = text
    return texts


# -- the same loops on both stores: what differs is how a test peeks under the store ----------------


def generation(index: Index) -> int:
    """The index's write counter (every committed write bumps it), read without taking the writer
    lock; -1 while the index cannot be read (not created yet)."""
    if is_postgres(index):
        import psycopg

        try:
            with psycopg.connect(str(index), autocommit=True, connect_timeout=10) as conn:
                row = conn.execute("SELECT value FROM counters WHERE name = 'generation'").fetchone()
        except psycopg.Error:
            return -1
        return int(row[0]) if row else 0
    from citeline.index.sqlite import DB_NAME

    try:
        db = sqlite3.connect(f"file:{Path(index) / DB_NAME}?mode=ro", uri=True, timeout=5)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return -1
    return int(row[0]) if row else 0


def hold_write_lock(index: Index) -> Callable[[], None]:
    """Be another writer in the middle of a long transaction; returns what ends it (a rollback)."""
    if is_postgres(index):
        import psycopg

        from citeline.index.postgres.connection import WRITER_LOCK

        pg = psycopg.connect(str(index))  # not autocommit: the lock lasts until the rollback
        pg.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))

        def release_pg() -> None:
            pg.rollback()
            pg.close()

        return release_pg
    from citeline.index.sqlite import DB_NAME

    conn = sqlite3.connect(Path(index) / DB_NAME, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")

    def release() -> None:
        conn.execute("ROLLBACK")
        conn.close()

    return release


def verify_whole(index: Index, versions: dict[str, set[str]]) -> dict[str, int]:
    """The index opens, passes check, and every document is one whole version of its file (one of
    ``versions[name]``), its chunks resolving in its text and covering it to its end."""
    kb = citeline.open(index, create=False)
    try:
        report = kb.check()
        assert report.ok, [p.detail for p in report.problems]
        docs = kb.documents(Filter.admin())
        chunks = 0
        for doc in docs:
            name = Path(doc.source).name
            assert name in versions, f"{name} was never a file of the folder"
            text = kb.text(doc)
            assert text in versions[name], f"{name}: the stored text is no version of the file"
            ids = kb.store.document_chunks(doc.id)
            assert ids, f"{name} has no chunks"
            resolved = sorted(kb.store.chunks(ids).values(), key=lambda pair: pair[0].start)
            assert all(text[c.start : c.end] == c.text for c, _ in resolved)
            ending = text.rstrip()[-50:]
            assert any(ending in c.text for c, _ in resolved), f"{name} is cut short"
            chunks += len(ids)
        return {"documents": len(docs), "chunks": chunks}
    finally:
        kb.close()


def matches_folder(index: Index, docs: Path) -> None:
    """The index holds exactly the folder's files, each as it is now."""
    kb = citeline.open(index, create=False)
    try:
        stored = {Path(d.source).name: kb.text(d) for d in kb.documents(Filter.admin())}
        on_disk = {p.name: p.read_text(encoding="utf-8") for p in docs.iterdir()}
        assert stored == on_disk
    finally:
        kb.close()
