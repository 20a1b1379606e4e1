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
        conn = sqlite3.connect(f"file:{Path(index) / DB_NAME}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return -1
    return int(row[0]) if row else 0


def hold_write_lock(index: Index) -> Callable[[], None]:
    """Be another writer in the middle of a long transaction; returns what ends it (a rollback)."""
    if is_postgres(index):
        import psycopg

        from citeline.index.postgres_records import WRITER_LOCK

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
