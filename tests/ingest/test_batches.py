"""Cross-file embedding batches (citeline.ingest.batches): several files' chunks embedded in one
sorted pass, each document written alone, failures kept to the file that caused them."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import citeline
import citeline.ingest.batches as batches
from citeline.embedding.hashing import HashingEmbedder
from citeline.errors import IndexBusyError
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.types import text_hash


def _docs(folder: Path, n: int, sections: int = 2) -> list[Path]:
    folder.mkdir(exist_ok=True)
    out = []
    for i in range(n):
        body = "\n\n".join(
            f"## Part {j}\n\nThe part {i}-{j} fits valve V{i}{j} and opens at {i + j + 10} bar"
            + " under load" * (i % 4)
            + "."
            for j in range(sections)
        )
        p = folder / f"doc{i:03d}.md"
        p.write_text(f"# Doc {i}\n\n{body}\n", encoding="utf-8")
        out.append(p)
    return out


class Poisoned(HashingEmbedder):
    """Fails on every call that holds a text with ``poison``."""

    def __init__(self, poison: str) -> None:
        super().__init__()
        self.poison = poison

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.poison in t for t in texts):
            raise RuntimeError("onnxruntime: a bad input")
        return super().embed(texts)


def _kb_with(tmp_path: Path, embedder: HashingEmbedder) -> KnowledgeBase:
    base = citeline.open(tmp_path / "index", embedder="hashing")
    assert base.embedder.name == embedder.name  # binds the index to it
    return KnowledgeBase(base.settings, base.store, embedder=embedder)


@pytest.fixture()
def hkb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    yield kb
    kb.close()


def _vectors(kb: KnowledgeBase) -> dict[str, np.ndarray]:
    hashes = [
        text_hash(chunk.index_text)
        for d in kb.store.documents(Filter.admin())
        for chunk, _ in kb.store.chunks(kb.store.document_chunks(d.id)).values()
    ]
    return dict(kb.store.cached_vectors(hashes))


def test_small_files_share_embedder_calls_and_get_the_same_vectors(tmp_path: Path) -> None:
    """The real embedder: one call for 12 files (not 12), vectors equal to one file at a time."""
    docs = tmp_path / "docs"
    paths = _docs(docs, 12, sections=3)
    calls: list[int] = []
    together = citeline.open(tmp_path / "together")
    report = together.add([docs], progress=lambda e, n: calls.append(n) if e == "chunks" else None)
    assert len(report.added) == 12 and sum(calls) == report.chunks_embedded == report.chunks_written
    assert len(calls) == -(-report.chunks_embedded // 64)  # batches of 64 across files
    alone = citeline.open(tmp_path / "alone")
    alone_calls: list[int] = []
    for p in paths:  # one file per add: the per-file embedding
        alone.add(
            [p], root=docs.parent, progress=lambda e, n: alone_calls.append(n) if e == "chunks" else None
        )
    assert len(alone_calls) == 12
    a, b = _vectors(together), _vectors(alone)
    assert a.keys() == b.keys() and len(a) == report.chunks_embedded
    diff = max(float(np.abs(a[h] - b[h]).max()) for h in a)
    assert diff < 1e-5, diff  # the embedder's own tolerance (tests/embedding/test_batching.py)
    together.close()
    alone.close()


def test_a_file_that_cannot_be_parsed_fails_alone(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 3)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (docs / "empty.md").write_text("  \n", encoding="utf-8")
    files: list[int] = []
    report = hkb.add([docs], root=docs, progress=lambda e, n: files.append(n) if e == "file" else None)
    assert sorted(report.added) == ["doc000.md", "doc001.md", "doc002.md"]
    assert sorted(s for s, _ in report.failed) == ["broken.pdf"]
    assert [s for s, _ in report.skipped] == ["empty.md"]  # nothing wrong with it: no text to index
    assert sum(files) == 5


def test_embedding_failure_in_a_shared_batch_fails_only_that_file(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 5)
    (docs / "doc002.md").write_text(
        "# Bad\n\n## Part\n\nThis one holds POISON for the model.\n", encoding="utf-8"
    )
    kb = _kb_with(tmp_path, Poisoned("POISON"))
    files: list[int] = []
    report = kb.add([docs], root=docs, progress=lambda e, n: files.append(n) if e == "file" else None)
    assert [s for s, _ in report.failed] == ["doc002.md"] and "failed on a batch of" in report.failed[0][1]
    assert sorted(report.added) == ["doc000.md", "doc001.md", "doc003.md", "doc004.md"]
    assert report.chunks_written == report.chunks_embedded == 8 and sum(files) == 5
    assert kb.check().ok and kb.store.stats()["vectors"] == kb.store.stats()["chunks"]
    healthy = KnowledgeBase(kb.settings, kb.store, embedder=HashingEmbedder())
    (docs / "doc002.md").write_text("# Good\n\n## Part\n\nThis one is fine now.\n", encoding="utf-8")
    assert healthy.add([docs], root=docs).added == ["doc002.md"]
    kb.close()


def test_an_unavailable_index_stops_the_batch_with_the_report(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 5)
    real = hkb.store.replace_document
    writes: list[str] = []

    def busy(document: Any, *args: Any, **kw: Any) -> None:
        if len(writes) == 2:
            raise IndexBusyError("another writer held the index")
        writes.append(document.source)
        real(document, *args, **kw)

    monkeypatch.setattr(hkb.store, "replace_document", busy)
    with pytest.raises(IndexBusyError) as caught:
        hkb.add([docs], root=docs)
    report = caught.value.report  # type: ignore[attr-defined]
    assert report.added == writes == ["doc000.md", "doc001.md"] and not report.failed
    assert hkb.store.count_documents(Filter.admin()) == 2


def test_batches_are_bounded_and_stage_seconds_add_up(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 2 * batches.BATCH_FILES + 22)
    sizes: list[int] = []
    real = batches.fill_vectors

    def spy(store: Any, embedder: Any, chunks: Any, *args: Any) -> None:
        chunks = list(chunks)
        sizes.append(len({c.document_id for c in chunks}))
        real(store, embedder, chunks, *args)

    monkeypatch.setattr(batches, "fill_vectors", spy)
    events: dict[str, int] = {"file": 0, "chunks": 0}
    t0 = time.perf_counter()
    report = hkb.add([docs], root=docs, progress=lambda e, n: events.__setitem__(e, events[e] + n))
    wall = time.perf_counter() - t0
    n = 2 * batches.BATCH_FILES + 22
    assert len(report.added) == n and events == {"file": n, "chunks": report.chunks_embedded}
    assert sizes == [batches.BATCH_FILES, batches.BATCH_FILES, 22]  # at most BATCH_FILES files a batch
    assert all(v > 0 for v in report.seconds.values()) and sum(report.seconds.values()) <= wall
