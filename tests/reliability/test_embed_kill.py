"""Progressive indexing's background pass (`citeline embed`) killed with SIGKILL at random moments,
again and again, then resumed: after every kill the index passes `citeline check`, searches answer,
and no full vector is lost; the run that finishes embeds exactly the chunk texts still pending (a
committed vector is never computed again) and leaves every chunk with its full vector.

On both stores (an index folder, and a database on the test session's PostgreSQL server).
`make test` kills 3 times; `make stress` CITELINE_TEST_KILLS times (the SciFact figure, 10 kills
of the pass over 13,463 chunks, is in benchmarks/results/progressive.md).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TypedDict

import citeline
from citeline.filters import Principal
from conftest import OpenIndex

from .util import cli, cli_env, generation, report_figures, size, write_docs


class Embedders(TypedDict):
    """The embedder settings of a `citeline` subprocess (so `cli(..., **FULL)` type-checks)."""

    CITELINE_EMBEDDER: str
    CITELINE_FAST_EMBEDDER: str


#: a slow full embedder (the pass takes seconds) beside the fast one of progressive indexing
FULL: Embedders = {"CITELINE_EMBEDDER": "minilm-int8", "CITELINE_FAST_EMBEDDER": "minilm-static"}


def _status(index: str) -> dict[str, object]:
    done = cli(index, "status", "--json", **FULL)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_background_pass_killed_again_and_again_resumes(open_index: OpenIndex, tmp_path: Path) -> None:
    kills = size("KILLS", 3)
    rng = random.Random(int(os.environ.get("CITELINE_TEST_SEED", "37")))
    docs, index = tmp_path / "docs", open_index.location("index")
    write_docs(docs, 24, paragraphs=12)
    added = cli(index, "add", "--progressive", str(docs), timeout=300, **FULL)
    assert added.returncode == 0, added.stderr
    first = _status(index)
    chunks = int(str(first["chunks"]))
    assert first["full_vectors"] == 0 and first["pending_vectors"] == {
        "chunks": chunks,
        "embedder": "minilm-static",
    }
    found = cli(index, "search", "-k", "3", "--json", "component C3-4 retries", **FULL)
    assert found.returncode == 0 and json.loads(found.stdout), found.stderr  # searchable before the pass

    full = [0]
    for _ in range(kills):
        child = subprocess.Popen(
            [sys.executable, "-m", "citeline", "--index", str(index), "embed"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=cli_env(**FULL),
        )
        # a random moment once the pass has committed a batch (it loads its model first)
        start, deadline = generation(index), time.monotonic() + 120
        while generation(index) == start and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(rng.uniform(0.0, 2.0))
        child.send_signal(signal.SIGKILL)
        child.wait()
        checked = cli(index, "check", **FULL)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        now = int(str(_status(index)["full_vectors"]))
        assert full[-1] <= now <= chunks  # what was committed stays
        full.append(now)
    kb = citeline.open(index, create=False)
    try:
        pending_texts = len(kb.store.unembedded(10**6))
    finally:
        kb.close()
    done = cli(index, "embed", "--json", timeout=600, **FULL)
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout)
    kb = citeline.open(index, create=False)
    try:
        texts = len(kb.store.all_text_hashes())
        stats = kb.status()
        assert kb.check().ok
        assert stats["full_vectors"] == chunks and stats["pending_vectors"] is None
        assert kb.store.pending_embedder() is None and kb.store.unembedded(10) == []
        # one full vector per chunk text, and the finishing run embedded only what was pending
        assert len(kb.store.cached_vectors(h for h, _ in kb.store.all_text_hashes())) == texts
        assert last["embedded"] == pending_texts
        hits = kb.search("component C3-4 retries", Principal.local_admin(), k=3)
        assert hits and all("dense_fast" not in h.stages and "rescored" not in h.stages for h in hits)
    finally:
        kb.close()
    assert full[-1] > 0  # the kills came in the middle of the pass, not before it began
    report_figures(
        "embed_kill",
        {
            "kills": kills,
            "chunks": chunks,
            "full_after_each_kill": full,
            "last_run_embedded": last["embedded"],
        },
    )
