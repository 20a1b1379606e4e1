"""kill -9 during ingest leaves an index that opens, answers, and holds only whole documents."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import citeline
from citeline.retrieval.filters import Filter
from conftest import ADMIN


def _make_docs(folder: Path, n: int) -> None:
    folder.mkdir()
    for i in range(n):
        paragraphs = "\n\n".join(
            f"Section {j} of report {i} explains how component C{i}-{j} handles retries and timeouts." * 3
            for j in range(12)
        )
        (folder / f"report-{i:03d}.md").write_text(f"# Report {i}\n\n{paragraphs}\n", encoding="utf-8")


def test_kill_during_ingest_leaves_consistent_index(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _make_docs(docs, 40)
    index = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-m", "citeline", "--index", str(index), "add", str(docs)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = index / "citeline.db"
    deadline = time.time() + 240
    kb = None
    # Wait until some documents are committed, then kill without warning.
    while time.time() < deadline:
        time.sleep(0.5)
        if db.exists():
            try:
                kb = citeline.open(index, create=False)
                if kb.store.stats()["documents"] >= 3:
                    break
                kb.close()
                kb = None
            except citeline.CitelineError:
                kb = None
    assert proc.poll() is None, "ingest finished before it could be killed; make the corpus bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    if kb is not None:
        kb.close()
    kb = citeline.open(index, create=False)
    stats = kb.store.stats()
    assert 3 <= stats["documents"] < 40
    for doc in kb.store.documents(Filter.admin()):
        text = kb.store.document_text(doc.id)
        ids = kb.store.document_chunks(doc.id)
        assert ids  # a document is never stored without its chunks
        covered = "".join(c.text for c, _ in sorted(kb.store.chunks(ids).values(), key=lambda x: x[0].start))
        assert "Section 0 " in covered and "Section 11 " in covered  # first and last: all of it
        assert text.startswith("# Report")
    assert stats["vectors"] >= stats["chunks"] // 2  # every chunk text has its vector (dedup allowed)
    answer = kb.ask("How does component C1-3 handle retries?", ADMIN)
    assert answer.citations or answer.refused
    # and ingestion resumes where it stopped
    report = kb.add([docs])
    assert len(report.added) + len(report.unchanged) == 40 and len(report.unchanged) == stats["documents"]
