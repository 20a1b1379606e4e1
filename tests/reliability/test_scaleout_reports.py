"""What the shared store's commands say when things go wrong (issue 35, "Scale-out"): a missing
password, a bulk load that was interrupted, two adds of one folder at once. Real PostgreSQL (and
the embedded store), real `citeline` processes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

import citeline
from conftest import STORES

from .util import cli, cli_env, generation, hold_write_lock, write_docs


def _without_password(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1@", url, count=1)


def test_a_missing_password_is_a_login_error_not_unavailable(pg_url: str, tmp_path: Path) -> None:
    """README: a wrong password or database is exit code 1 (trying again will not help); a
    missing one was exit 4, "cannot be reached now ... run again"."""
    url = _without_password(pg_url)
    proc = cli(url, "status", PGPASSFILE=str(tmp_path / "no-pgpass"), PGPASSWORD="")
    assert proc.returncode == 1, proc.stderr
    assert "refused the login (fe_sendauth: no password supplied)" in proc.stderr
    assert "~/.pgpass or PGPASSWORD" in proc.stderr and "cannot be reached" not in proc.stderr


def _hnsw_present(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_class WHERE relname = 'chunks_embedding_hnsw'").fetchone()
    return row is not None


def test_a_re_add_after_an_interrupted_bulk_load_builds_the_vector_index(pg_url: str, tmp_path: Path) -> None:
    """A bulk load into an empty PostgreSQL index (`migrate`, Ray ingestion) drops the HNSW index and
    builds it at the end; killed in between, it leaves the index without one. The next `add`
    builds it and says so (it was: `check` reported it missing until `check --repair`)."""
    docs, local = tmp_path / "docs", tmp_path / "local"
    write_docs(docs, 240, paragraphs=2)
    assert cli(local, "add", str(docs)).returncode == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "citeline", "migrate", "--from", str(local), "--to", pg_url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    )
    deadline = time.monotonic() + 120
    while generation(pg_url) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # documents are being written: the HNSW index is gone until the end
    assert proc.poll() is None, "migrate finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert not _hnsw_present(pg_url)
    before = cli(pg_url, "check", "--json")
    assert before.returncode == 1
    assert [p["kind"] for p in json.loads(before.stdout)["problems"]] == ["vector-index"]

    again = cli(pg_url, "add", str(docs))
    assert again.returncode == 0, again.stderr
    assert "the vector index (HNSW) was missing, as an interrupted bulk load leaves it" in again.stderr
    assert _hnsw_present(pg_url)
    assert cli(pg_url, "check").returncode == 0
    quiet = cli(pg_url, "add", str(docs))  # a whole index: nothing to say
    assert quiet.returncode == 0 and "vector index" not in quiet.stderr


def _counts(out: str) -> dict[str, int]:
    found = re.search(r"(\d+) added, (\d+) updated, (\d+) unchanged, (\d+) failed", out)
    assert found, out
    return dict(zip(("added", "updated", "unchanged", "failed"), map(int, found.groups()), strict=True))


def _waiting_writers(index: str) -> int:
    """PostgreSQL: the sessions waiting for the writer lock."""
    with psycopg.connect(index, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.parametrize("store", STORES)
def test_two_adds_of_one_folder_at_once_each_say_what_they_did(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Both adds look the documents up before either writes (another writer holds the lock until
    then), so both find them absent and both embed them; then the writes take turns. Each document
    is added by one of them, and the other says it replaced it (updated). It was: both printed
    "N added"."""
    n = 60
    docs, other = tmp_path / "docs", tmp_path / "other"
    write_docs(docs, n, paragraphs=2)
    write_docs(other, 1, paragraphs=1)
    index = request.getfixturevalue("pg_url") if store == "postgresql" else str(tmp_path / "index")
    assert cli(index, "add", str(other)).returncode == 0  # the index exists, its embedder is bound
    release = hold_write_lock(index)
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "citeline", "--index", index, "add", str(docs)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(CITELINE_LOCK_TIMEOUT_S="300"),
            )
            for _ in range(2)
        ]
        deadline = time.monotonic() + (120 if store == "postgresql" else 30)
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            if store == "postgresql" and _waiting_writers(index) == 2:
                break  # both looked their documents up and wait to write them
            time.sleep(0.2)
    finally:
        release()
    results = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-500:] for _, err in results]
    counts = [_counts(out) for out, _ in results]
    assert sum(c["added"] for c in counts) == n, counts  # each document added once, by one of them
    if store == "postgresql":  # both seen waiting for the lock: both wrote every document
        assert sum(c["updated"] for c in counts) == n, counts  # the second write replaced the first
    for c, (_, err) in zip(counts, results, strict=True):
        assert c["added"] + c["updated"] + c["unchanged"] == n and c["failed"] == 0
        if c["updated"]:
            assert "changed in the index while this add ran (another writer" in err, err
    kb = citeline.open(index, read_only=True)
    try:
        assert kb.store.stats()["documents"] == n + 1
    finally:
        kb.close()
