"""Crash safety of the derived engines (index/sqlite/engines.py): a process writing and searching an index
with tantivy and faiss forced on is killed with SIGKILL at random points (mid-write, mid tantivy
commit, mid faiss checkpoint), again and again. After every kill the index opens, `citeline check`
passes (the engines catch up from the change log and match the chunks), and the engines answer
what SQLite holds: every document's unique word finds that document's chunks, removed versions are
never found, and a chunk's own vector finds that chunk. `make test` kills twice, `make stress`
CITELINE_TEST_KILLS times.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from citeline.filters import Filter
from citeline.index.sqlite import DB_NAME, SqliteStore
from citeline.settings import Settings
from citeline.wiring import open_store

from .engine_worker import DIM, vector
from .util import cli, cli_env, report_figures, size

ADMIN = Filter.admin()


def _start(index: Path, seed: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("engine_worker.py")), str(index), str(seed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )


def _generation(index: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{index / DB_NAME}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return -1
    return int(row[0]) if row else 0


def _verify(index: Path, rng: random.Random) -> int:
    store = open_store(str(index), create=False)
    assert isinstance(store, SqliteStore)  # a folder index: its engines are what this test checks
    store.configure(Settings(engine_min_chunks=0))
    try:
        assert store.check() == []
        docs = store.documents(ADMIN)
        for doc in rng.sample(docs, min(5, len(docs))):
            ids = store.document_chunks(doc.id)
            word = store.chunks(ids[:1])[ids[0]][0].text.split()[0]  # uniq{number}v{version}
            hits = {c for c, _ in store.keyword_search(word, ADMIN, 50)}
            assert hits == set(ids), (doc.source, word)
            number, version = (int(x) for x in word[4:].split("v"))
            old = f"uniq{number}v{version - 1}"
            assert not set(c for c, _ in store.keyword_search(old, ADMIN, 5)) - set(ids)
            found = store.vector_search(vector(number, version, 0), ADMIN, 1)
            assert found and found[0][0] == ids[0]
        assert store._engines.keyword is not None and store._engines.vector is not None  # they answered
        return len(docs)
    finally:
        store.close()


def test_kill_during_engine_updates_again_and_again(tmp_path: Path) -> None:
    kills = size("KILLS", 2)
    rng = random.Random(int(os.environ.get("CITELINE_TEST_SEED", "14")))
    index = tmp_path / "index"
    figures = {"kills": 0, "checks_passed": 0, "cli_checks_passed": 0}
    for round_ in range(1, kills + 1):
        before = max(_generation(index), 0)
        proc = _start(index, round_)
        deadline = time.monotonic() + 120
        while _generation(index) <= before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # started and committed a first write: then a random moment of its work
        time.sleep(rng.uniform(0.0, 2.0))
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        figures["kills"] += 1
        documents = _verify(index, rng)
        figures["checks_passed"] += 1
        checked = cli(index, "check", CITELINE_ENGINE_MIN_CHUNKS="0")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        figures["cli_checks_passed"] += 1
    assert (index / "engines" / "keyword.json").exists()
    report_figures("engine_crash_loop", {**figures, "documents": documents, "dim": DIM})
