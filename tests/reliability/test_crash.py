"""Crash safety: `citeline add` killed with SIGKILL at random points, again and again.

After every kill the index opens, passes `citeline check`, holds only whole documents (each one's
text is exactly one version its file ever had, and its chunks cover it), and running `add` again
completes the work. The loop runs on both stores (an index folder, and a database on the test
session's PostgreSQL server, where the killed client's transaction is rolled back by the server).
`make test` kills 3 times; `make stress` 50 (CITELINE_TEST_KILLS).
`citeline check --repair` is tested on an index damaged by hand (the PostgreSQL store's own damage
test is in tests/index/test_postgres.py).
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import citeline
from citeline.filters import Filter, Principal
from citeline.index.sqlite import DB_NAME
from citeline.types import REFUSAL
from conftest import OpenIndex

from .util import (
    Index,
    cli,
    cli_env,
    document,
    generation,
    matches_folder,
    report_figures,
    size,
    verify_whole,
    write_docs,
)

ADMIN = Principal.local_admin()


def _start_add(index: Index, docs: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "citeline", "--index", str(index), "add", str(docs), "--prune"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=cli_env(),
    )


def test_kill_during_ingest_again_and_again(open_index: OpenIndex, tmp_path: Path) -> None:
    kills = size("KILLS", 3)
    rng = random.Random(int(os.environ.get("CITELINE_TEST_SEED", "15")))
    docs, index = tmp_path / "docs", open_index.location("index")
    n_docs = 40
    texts = write_docs(docs, n_docs, version=0, paragraphs=10)
    versions: dict[str, set[str]] = {name: {text} for name, text in texts.items()}
    t = time.perf_counter()
    first = cli(index, "add", str(docs), timeout=600)
    full = time.perf_counter() - t
    assert first.returncode == 0, first.stderr
    figures: dict[str, Any] = {
        "kills": 0,
        "killed_mid_run": 0,
        "killed_after_a_commit": 0,
        "checks_passed": 0,
        "readds_completed": 0,
        "full_add_s": round(full, 2),
        "store": open_index.store,
    }
    next_new = n_docs
    for round_ in range(1, kills + 1):
        # change the folder: edit a third of the files, delete two, add two
        names = sorted(p.name for p in docs.iterdir())
        # even rounds edit every file: a run long enough to commit before its last step
        edited = names if round_ % 2 == 0 else rng.sample(names, len(names) // 3)
        for name in edited:
            i = int(name[7:10])
            text = document(i, version=round_, paragraphs=10)
            (docs / name).write_text(text, encoding="utf-8")
            versions[name].add(text)
        for name in rng.sample(names, 2):
            (docs / name).unlink()
        for _ in range(2):
            name = f"report-{next_new:03d}.md"
            text = document(next_new, version=round_, paragraphs=10)
            (docs / name).write_text(text, encoding="utf-8")
            versions[name] = {text}
            next_new += 1
        before = generation(index)
        proc = _start_add(index, docs)
        if round_ % 2:  # a random moment of the run, start-up included
            time.sleep(rng.uniform(0.05, max(full, 0.5)))
        else:  # once it has committed something: in the middle of the work
            deadline = time.monotonic() + 120
            while generation(index) == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.002)
            # killed at once: re-adds got fast enough that a random pause let a loaded CI run finish
            # first, leaving no kill after a commit
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            figures["killed_mid_run"] += 1
            figures["killed_after_a_commit"] += int(generation(index) != before)
        proc.wait(timeout=60)
        figures["kills"] += 1
        counts = verify_whole(index, versions)
        figures["checks_passed"] += 1
        if round_ % 3 == 0 or round_ == kills:  # and ingestion completes the work
            again = cli(index, "add", str(docs), "--prune", timeout=600)
            assert again.returncode == 0, again.stderr
            figures["readds_completed"] += 1
            matches_folder(index, docs)
    kb = citeline.open(index, create=False)
    # the last round re-added the folder: the index finds report 3 while it is there (the hashing
    # embedder's relevance is too weak for the extractive answer, which may refuse: then exactly so)
    question = "How often does component C3-4 retry?"
    hits = kb.search(question, ADMIN, k=3)
    answer = kb.ask(question, ADMIN)
    if (docs / "report-003.md").exists():
        assert (
            hits[0].source.endswith("report-003.md") and "C3-4 retries every 6 seconds" in hits[0].chunk.text
        )
        assert answer.answer == REFUSAL if answer.refused else "6 seconds" in answer.answer, answer
        assert answer.refused or any(c.source.endswith("report-003.md") for c in answer.citations)
    else:
        assert not any(h.source.endswith("report-003.md") for h in hits)
    kb.close()
    report_figures(f"crash_loop_{open_index.store}", {**figures, **counts})
    assert figures["killed_after_a_commit"] >= 1


def _damage(index: Path) -> dict[str, str]:
    """Break the index by hand in every way `check` looks for; returns a victim's source."""
    conn = sqlite3.connect(index / DB_NAME, isolation_level=None)
    conn.execute("PRAGMA foreign_keys=OFF")
    doc_ids = [r[0] for r in conn.execute("SELECT id FROM documents ORDER BY source")]
    span_victim, vector_victim = doc_ids[0], doc_ids[1]
    conn.execute(
        "INSERT INTO chunks_fts(rowid, index_text) VALUES (9999999, 'ghost words nobody wrote')"
    )  # a keyword row of no chunk
    rowid, text_hash = conn.execute(
        "SELECT rowid, text_hash FROM chunks WHERE document_id = ? LIMIT 1", (vector_victim,)
    ).fetchone()
    conn.execute("DELETE FROM embeddings WHERE text_hash = ?", (text_hash,))  # a chunk without vector
    conn.execute(
        'UPDATE chunks SET "end" = "end" + 100000 WHERE rowid = (SELECT MIN(rowid) FROM chunks WHERE document_id = ?)',
        (span_victim,),
    )
    conn.execute("INSERT INTO doc_acl (document_id, entry) VALUES ('no-such-document', 'group:x')")
    conn.execute("INSERT INTO blobs (content_hash, data) VALUES ('deadbeef', x'00')")
    conn.execute(
        "INSERT INTO embeddings (text_hash, embedder, vector) SELECT 'orphan', embedder, vector FROM embeddings LIMIT 1"
    )
    source = conn.execute("SELECT source FROM documents WHERE id = ?", (span_victim,)).fetchone()[0]
    conn.close()
    del rowid
    return {"span_victim": source}


def test_check_finds_damage_and_repair_rebuilds(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    write_docs(docs, 4)
    assert cli(index, "add", str(docs)).returncode == 0
    clean = cli(index, "check")
    assert clean.returncode == 0 and "ok: 4 documents" in clean.stdout
    victim = _damage(index)["span_victim"]
    found = cli(index, "check", "--json")
    assert found.returncode == 1
    kinds = {p["kind"] for p in json.loads(found.stdout)["problems"]}
    assert kinds >= {"keyword-index", "vectors", "span", "orphan"}, kinds
    text = cli(index, "check")
    assert text.returncode == 1 and "check --repair" in text.stdout
    repaired = cli(index, "check", "--repair", "--json")
    data = json.loads(repaired.stdout)
    assert repaired.returncode == 0 and data["ok"] and data["remaining"] == [], data
    assert all(p["repaired"] for p in data["problems"])
    assert cli(index, "check").returncode == 0
    kb = citeline.open(index, create=False)
    left = {d.source for d in kb.documents(Filter.admin())}
    assert victim not in left and len(left) == 3  # the document that could not be whole was removed
    kb.close()
    readd = cli(index, "add", str(docs))  # and is added again from its file
    assert readd.returncode == 0 and "1 added" in readd.stdout
    assert cli(index, "check").returncode == 0


def test_check_on_a_read_only_index_checks_without_writing(open_index: OpenIndex, tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", open_index.location("index")
    write_docs(docs, 2)
    assert cli(index, "add", str(docs)).returncode == 0
    kb = citeline.open(index, read_only=True)
    try:
        assert kb.store.read_only and kb.check().ok
    finally:
        kb.close()
