"""Re-adding: a file whose size and modification time match its document is not read (unless it
was modified within RACY_S of being indexed, or trust_mtime is off); documents are looked up in bulk."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import citeline
import citeline.ingest.pipeline as pipeline
from citeline.kb import KnowledgeBase
from citeline.retrieval.filters import Filter

OLD = time.time() - 3600  # a modification time well before indexing


def _write(path: Path, text: str, mtime: float | None = OLD) -> None:
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def _docs(folder: Path, n: int = 4, mtime: float | None = OLD) -> list[Path]:
    folder.mkdir(exist_ok=True)
    paths = []
    for i in range(n):
        p = folder / f"doc{i}.md"
        _write(p, f"# Doc {i}\n\n## Part\n\nThe part number {i} fits the valve V{i}.\n", mtime)
        paths.append(p)
    return paths


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources whose bytes the pipeline read."""
    seen: list[str] = []
    real = pipeline.read_regular

    def counting(path: Path, source: str, limit: int) -> tuple[bytes, float]:
        seen.append(source)
        return real(path, source, limit)

    monkeypatch.setattr(pipeline, "read_regular", counting)
    return seen


@pytest.fixture()
def hkb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    yield kb
    kb.close()


def _add(kb: KnowledgeBase, folder: Path, **kw: Any) -> pipeline.IngestReport:
    return kb.add([folder], root=folder, **kw)


def test_unchanged_files_are_not_read_and_looked_up_in_bulk(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 5)
    assert len(_add(hkb, docs).added) == 5 and len(reads) == 5
    reads.clear()
    single: list[str] = []
    bulk: list[int] = []
    real_get, real_bulk = hkb.store.get_document, hkb.store.get_documents
    monkeypatch.setattr(hkb.store, "get_document", lambda i: single.append(i) or real_get(i))
    monkeypatch.setattr(hkb.store, "get_documents", lambda ids: bulk.append(len(ids)) or real_bulk(ids))
    report = _add(hkb, docs)
    assert len(report.unchanged) == 5 and not report.updated and not report.added and not report.failed
    assert reads == [] and single == [] and bulk == [5]
    assert report.chunks_embedded == 0


def test_same_size_and_mtime_is_trusted_only_when_indexed_well_after_it(
    tmp_path: Path, reads: list[str]
) -> None:
    """The rsync/git rule: different bytes of the same size with the mtime put back are taken as
    unchanged when the document was indexed more than RACY_S after that mtime; trust_mtime=False
    (or CITELINE_TRUST_MTIME=false) always reads and hashes."""
    docs = tmp_path / "docs"
    (p,) = _docs(docs, 1)
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    _add(kb, docs)
    text = p.read_text(encoding="utf-8")
    _write(p, text.replace("valve", "VALVE"), OLD)  # same size, same mtime
    reads.clear()
    assert _add(kb, docs).unchanged == ["doc0.md"] and reads == []
    kb.close()
    strict = citeline.open(tmp_path / "index", embedder="hashing", trust_mtime=False)
    report = _add(strict, docs)
    assert report.updated == ["doc0.md"] and reads == ["doc0.md"]
    reads.clear()
    assert _add(strict, docs).unchanged == ["doc0.md"] and reads == ["doc0.md"]  # still read
    strict.close()


def test_a_changed_file_with_a_new_mtime_is_reindexed(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str]
) -> None:
    docs = tmp_path / "docs"
    paths = _docs(docs, 3)
    _add(hkb, docs)
    reads.clear()
    _write(paths[1], paths[1].read_text(encoding="utf-8") + "\nA new line.\n", OLD + 10)
    _write(paths[2], paths[2].read_text(encoding="utf-8"), OLD + 10)  # touched, same bytes
    report = _add(hkb, docs)
    assert report.updated == ["doc1.md"] and sorted(report.unchanged) == ["doc0.md", "doc2.md"]
    assert sorted(reads) == ["doc1.md", "doc2.md"]  # a new mtime is read and hashed


def test_racy_file_modified_just_before_indexing_is_hashed_again(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str]
) -> None:
    docs = tmp_path / "docs"
    (p,) = _docs(docs, 1, mtime=None)  # modified now: indexed within RACY_S of its mtime
    _add(hkb, docs)
    doc = hkb.store.get_documents([d.id for d in hkb.store.documents(Filter.admin())])
    (stored,) = doc.values()
    assert stored.mtime == p.stat().st_mtime and stored.updated_at - stored.mtime <= pipeline.RACY_S
    mtime = p.stat().st_mtime
    _write(p, p.read_text(encoding="utf-8").replace("valve", "VALVE"), mtime)  # same size and mtime
    reads.clear()
    report = _add(hkb, docs)
    assert report.updated == ["doc0.md"] and reads == ["doc0.md"]
    assert "VALVE" in hkb.store.document_text(stored.id)


def test_tags_and_acl_change_without_reading(hkb: KnowledgeBase, tmp_path: Path, reads: list[str]) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 2)
    _add(hkb, docs)
    reads.clear()
    report = _add(hkb, docs, tags={"team": "ops"}, acl=["group:ops"])
    assert len(report.unchanged) == 2 and reads == []
    for d in hkb.store.documents(Filter.admin()):
        assert d.tags == {"team": "ops"} and d.acl == ("group:ops",)


def test_a_file_named_twice_in_one_add_is_indexed_once(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 2)
    report = hkb.add([docs, docs / "doc1.md"], root=docs)
    assert sorted(report.added) == ["doc0.md", "doc1.md"] and report.unchanged == ["doc1.md"]
    assert hkb.store.count_documents(Filter.admin()) == 2


def test_a_file_above_a_lowered_limit_is_still_refused(tmp_path: Path, reads: list[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    _write(docs / "big.md", "# Big\n\n" + "The valve opens at ten bar. " * 100)
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    _add(kb, docs)
    kb.close()
    small = citeline.open(tmp_path / "index", embedder="hashing", max_file_mb=0.001)
    report = _add(small, docs)
    assert report.failed and "limit" in report.failed[0][1]
    small.close()


def test_cli_rehash_reads_every_file(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from citeline.cli import main

    docs = tmp_path / "docs"
    _docs(docs, 2)
    monkeypatch.chdir(docs)
    monkeypatch.setenv("CITELINE_EMBEDDER", "hashing")
    index = str(tmp_path / "index")
    assert CliRunner().invoke(main, ["--index", index, "add", "."]).exit_code == 0
    reads.clear()
    assert CliRunner().invoke(main, ["--index", index, "add", "."]).exit_code == 0
    assert reads == []
    result = CliRunner().invoke(main, ["--index", index, "add", "--rehash", "--json", "."])
    assert result.exit_code == 0, result.output
    assert sorted(reads) == ["doc0.md", "doc1.md"] and '"unchanged"' in result.output
