"""Re-adding: a file whose size and modification time match its document is not read (unless it
was modified within RACY_S of being indexed, or trust_mtime is off); a folder's documents are
looked up once, files named one by one a group at a time; nothing is written for unchanged files."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import citeline
import citeline.ingest.pipeline as pipeline
from citeline.filters import Filter
from citeline.ingest.files import read_regular
from citeline.kb import KnowledgeBase
from citeline.types import Document

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

    def counting(path: Path, source: str, limit: int) -> tuple[bytes, float]:
        seen.append(source)
        return read_regular(path, source, limit)

    monkeypatch.setattr(pipeline, "read_regular", counting)
    return seen


@pytest.fixture()
def hkb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    yield kb
    kb.close()


def _add(kb: KnowledgeBase, folder: Path, **kw: Any) -> pipeline.IngestReport:
    return kb.add([folder], root=folder, **kw)


class StoreCalls:
    """Counts the store's document lookups and writes during a re-add (a wrapper on the store)."""

    LOOKUPS = ("get_document", "get_documents", "find_document", "documents", "stored_files")
    WRITES = ("replace_document", "replace_documents", "update_access", "remove_document")

    def __init__(self, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[str] = []
        for name in self.LOOKUPS + self.WRITES:
            real = getattr(kb.store, name)

            def counted(*args: Any, _name: str = name, _real: Any = real, **kw: Any) -> Any:
                self.calls.append(_name)
                return _real(*args, **kw)

            monkeypatch.setattr(kb.store, name, counted)

    def writes(self) -> list[str]:
        return [c for c in self.calls if c in self.WRITES]


def test_unchanged_files_are_not_read_and_looked_up_in_bulk(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    paths = _docs(docs, 5)
    assert len(_add(hkb, docs).added) == 5 and len(reads) == 5
    reads.clear()
    calls = StoreCalls(hkb, monkeypatch)
    report = _add(hkb, docs)
    assert len(report.unchanged) == 5 and not report.updated and not report.added and not report.failed
    # a folder: the collection's stored files as the first add left them (read back after its
    # writes), reused to reconcile; no query per file
    assert reads == [] and calls.calls == []
    assert report.chunks_embedded == 0
    calls.calls.clear()
    report = hkb.add(paths, root=docs)  # files named one by one: one look-up per group
    assert len(report.unchanged) == 5 and reads == [] and calls.calls == ["get_documents"]


def _indexed(kb: KnowledgeBase, tmp_path: Path, n: int) -> tuple[Path, Document]:
    """A folder of ``n`` files added to ``kb``, and the document of its first file."""
    docs = tmp_path / "docs"
    _docs(docs, n)
    _add(kb, docs)
    first = kb.store.find_document("doc0.md")
    assert first is not None
    return docs, first


def _remove_elsewhere(index: Path, document_id: str) -> None:
    """Another process's write, as another connection to the index makes it."""
    other = citeline.open(index, embedder="hashing")
    try:
        other.store.remove_document(document_id)
    finally:
        other.close()


def test_adds_in_one_process_reuse_the_stored_files_while_no_one_else_writes(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 6)
    _add(hkb, docs)
    first = hkb.store.documents(Filter.admin())[0]
    calls = StoreCalls(hkb, monkeypatch)
    reads.clear()
    assert len(_add(hkb, docs).unchanged) == 6 and calls.calls == [] and reads == []
    # an edit: its own write is read back (that document only), the next add reads nothing
    _write(docs / "doc2.md", "# Doc 2\n\nThe part number 2 now fits the valve W2.\n")
    assert _add(hkb, docs).updated == ["doc2.md"]
    assert [c for c in calls.calls if c in StoreCalls.LOOKUPS] == ["get_documents"]
    calls.calls.clear()
    assert len(_add(hkb, docs).unchanged) == 6 and calls.calls == []
    found = hkb.store.find_document("doc2.md")
    assert found is not None and "W2" in hkb.store.document_text(found.id)
    # new tags are written and read back; the same tags again write and read nothing
    assert len(_add(hkb, docs, tags={"team": "ops"}).retagged) == 6
    calls.calls.clear()
    assert _add(hkb, docs, tags={"team": "ops"}).retagged == [] and calls.calls == []
    _remove_elsewhere(tmp_path / "index", first.id)  # the next add sees it gone
    report = _add(hkb, docs, tags={"team": "ops"})
    assert calls.calls[0] == "stored_files" and report.added == [first.source] and len(report.unchanged) == 5


def test_a_write_from_elsewhere_during_an_add_is_not_hidden_by_the_reused_stored_files(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, gone = _indexed(hkb, tmp_path, 6)
    real = hkb.store.replace_document

    def meanwhile(*args: Any, **kw: Any) -> Any:  # doc0 is removed elsewhere during the add
        _remove_elsewhere(tmp_path / "index", gone.id)
        return real(*args, **kw)

    monkeypatch.setattr(hkb.store, "replace_document", meanwhile)
    _write(docs / "doc3.md", "# Doc 3\n\nThe part number 3 now fits the valve W3.\n")
    assert _add(hkb, docs).updated == ["doc3.md"]
    monkeypatch.setattr(hkb.store, "replace_document", real)
    assert _add(hkb, docs).added == ["doc0.md"]  # seen missing, not taken from before the add


def test_a_removal_between_adds_is_seen_even_when_the_next_add_names_one_file(
    hkb: KnowledgeBase, tmp_path: Path
) -> None:
    docs, gone = _indexed(hkb, tmp_path, 4)
    hkb.store.remove_document(gone.id)  # this process, this thread: the same connection
    _write(docs / "doc1.md", "# Doc 1\n\nThe part number 1 now fits the valve W1.\n")
    assert hkb.add([docs / "doc1.md"], root=docs).updated == ["doc1.md"]  # no whole read here
    assert _add(hkb, docs).added == ["doc0.md"]


def test_a_readd_writes_nothing_when_tags_and_acl_are_the_same(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 3)
    _add(hkb, docs, tags={"team": "ops"}, acl=["group:b", "group:a"])
    calls = StoreCalls(hkb, monkeypatch)
    assert len(_add(hkb, docs, tags={"team": "ops"}, acl=["group:a", "group:b"]).unchanged) == 3
    assert calls.writes() == []
    report = _add(hkb, docs, tags={"team": "dev"}, acl=["group:a", "group:b"])  # tags changed: written
    assert len(report.unchanged) == 3 and calls.writes() == ["update_access"] * 3
    assert {d.tags["team"] for d in hkb.store.documents(Filter.admin())} == {"dev"}


def test_an_edit_rereads_only_the_edited_file_and_drops_its_old_original(
    hkb: KnowledgeBase, tmp_path: Path, reads: list[str]
) -> None:
    docs = tmp_path / "docs"
    paths = _docs(docs, 3)
    paths.append(docs / "copy.md")
    _write(paths[3], paths[0].read_text(encoding="utf-8"))  # the same bytes as doc0: one original
    _add(hkb, docs)
    before = {d.source: d for d in hkb.store.documents(Filter.admin())}
    reads.clear()
    _write(paths[1], paths[1].read_text(encoding="utf-8") + "\nA sentence appended.\n", OLD + 10)
    _write(paths[3], paths[3].read_text(encoding="utf-8") + "\nThe copy differs now.\n", OLD + 10)
    report = _add(hkb, docs)
    assert sorted(report.updated) == ["copy.md", "doc1.md"] and reads == sorted(reads) == [
        "copy.md",
        "doc1.md",
    ]
    store = hkb.store
    assert store.original(before["doc1.md"].id) == paths[1].read_bytes()
    assert store.original(before["doc0.md"].id) == paths[0].read_bytes()  # still used by doc0
    conn = store.conn  # type: ignore[attr-defined]
    held = {r[0] for r in conn.execute("SELECT content_hash FROM blobs")}
    assert before["doc1.md"].content_hash not in held and before["doc0.md"].content_hash in held
    assert held == {d.content_hash for d in store.documents(Filter.admin())}


def test_a_document_re_read_from_another_path_is_not_reconciled_away(
    hkb: KnowledgeBase, tmp_path: Path
) -> None:
    """A source added in this run is never gone, even when the document read before the run
    names a path under the folder whose file was deleted (it was added from another root)."""
    top = tmp_path / "top"
    top.mkdir()
    (sub,) = _docs(top / "sub", 1)
    hkb.add([top / "sub"], root=top / "sub")  # source doc0.md, path top/sub/doc0.md
    _write(top / "doc0.md", "# Doc 0\n\nThe same source under another root.\n")
    sub.unlink()
    report = hkb.add([top], root=top)  # source doc0.md again: its path moves to top/doc0.md
    assert report.updated == ["doc0.md"] and report.removed == [] and not report.missing
    (doc,) = hkb.store.documents(Filter.admin())
    assert doc.metadata["path"] == str(top / "doc0.md")


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
    documents = hkb.store.documents(Filter.admin())
    assert len(documents) == 2
    for d in documents:
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

    from citeline.cli.main import main

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


def _skim_case(tmp_path: Path, **change: Any) -> list[str]:
    """The sources ``pass_changed`` hands on for the slow path: one stored, unchanged file whose
    stored state, stat, tags, ACL or ``done`` set is changed as ``change`` says."""
    from dataclasses import replace

    from citeline.index.base import StoredFile
    from citeline.ingest.files import FileList, Sources
    from citeline.ingest.readd import KnownFiles, pass_changed

    p = tmp_path / "doc.md"
    _write(p, "# Doc\n\nText.\n")
    info = os.stat(p)
    stored = StoredFile("id", "doc.md", "h", info.st_size, info.st_mtime, OLD + 60, str(p), "sig")
    stored = replace(stored, **change.get("stored", {}))
    known = KnownFiles.__new__(KnownFiles)
    known.whole, known.by_source = change.get("whole", True), {"doc.md": stored}
    report = pipeline.IngestReport()
    stamped = not change.get("no_stat")
    found = [FileList([str(p)], [info.st_size if stamped else None], [info.st_mtime if stamped else None])]
    passed = pass_changed(
        found,
        known,
        Sources(tmp_path),
        set(change.get("done", ())),
        report,
        None,
        signature="sig",
        limit=change.get("limit", 10**6),
        tags=change.get("tags", {}),
        acl=(),
    )
    out = [Path(path).name for files in passed for path in files.paths]
    assert len(report.unchanged) == 1 - len(out)
    return out


@pytest.mark.parametrize(
    ("change", "slow"),
    [
        ({}, []),  # the same stamp, tags and ACL: counted unchanged, never looked at again
        ({"stored": {"mtime": OLD - 1}}, ["doc.md"]),
        ({"stored": {"size": 1}}, ["doc.md"]),
        ({"stored": {"pipeline": "other"}}, ["doc.md"]),
        ({"stored": {"path": "/elsewhere/doc.md"}}, ["doc.md"]),
        ({"stored": {"updated_at": OLD + 1}}, ["doc.md"]),  # indexed within RACY_S of its mtime
        ({"stored": {"acl": ("group:ops",)}}, ["doc.md"]),  # the slow path rewrites the ACL
        ({"tags": {"team": "ops"}}, ["doc.md"]),
        ({"limit": 1}, ["doc.md"]),  # above the size limit: the slow path refuses it
        ({"done": ["doc.md"]}, ["doc.md"]),  # named twice: compared with what the first wrote
        ({"no_stat": True}, ["doc.md"]),  # a file named by the caller: not stat()ed yet
        ({"whole": False}, ["doc.md"]),  # files named one by one are looked up in groups
    ],
)
def test_only_files_whose_stamp_tags_and_acl_match_skip_the_slow_path(
    tmp_path: Path, change: dict[str, Any], slow: list[str]
) -> None:
    assert _skim_case(tmp_path, **change) == slow


def _age(*folders: Path) -> None:
    """Folders last changed an hour ago (their listing is then reused by the next add)."""
    for folder in folders:
        os.utime(folder, (OLD, OLD))


def test_an_unchanged_folder_is_not_listed_again(
    hkb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import citeline.ingest.files as files

    docs = tmp_path / "docs"
    _docs(docs, 3)
    (docs / "sub").mkdir()
    _write(docs / "sub" / "deep.md", "# Deep\n\nThe deep valve V9 opens slowly.\n")
    _age(docs, docs / "sub")
    _add(hkb, docs)
    listed: list[str] = []
    real = files._list

    def listing(top, exts):
        listed.append(top)
        return real(top, exts)

    monkeypatch.setattr(files, "_list", listing)
    report = _add(hkb, docs)
    assert len(report.unchanged) == 4 and listed == []
    # a file created in the subfolder moves that folder's time: listed again, the file added
    _write(docs / "sub" / "new.md", "# New\n\nThe new valve V10 opens fast.\n")
    report = _add(hkb, docs)
    assert report.added == ["sub/new.md"] and listed == [str(docs / "sub")]
    # a file removed from the top folder: listed again, its document removed
    _age(docs / "sub")
    _add(hkb, docs)
    listed.clear()
    (docs / "doc1.md").unlink()
    report = _add(hkb, docs)
    assert report.removed == ["doc1.md"] and listed == [str(docs)]


def test_a_renamed_file_in_an_old_folder_is_seen(hkb: KnowledgeBase, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    _docs(docs, 2)
    _age(docs)
    _add(hkb, docs)
    _add(hkb, docs)  # its listing is reused from here on
    (docs / "doc0.md").rename(docs / "renamed.md")
    report = _add(hkb, docs)
    assert report.added == ["renamed.md"] and report.removed == ["doc0.md"]


@pytest.mark.parametrize(
    ("age_s", "moved_ns", "exts", "reused"),
    [
        (3600.0, 0, None, True),
        (3600.0, 1, None, False),  # its time moved: an entry was made, removed or renamed
        (1.0, 0, None, False),  # listed within RACY_S of its time: it may change unseen
        (3600.0, 0, frozenset({".txt"}), False),  # other extensions are read now
    ],
)
def test_a_listing_is_reused_only_for_the_same_folder_time_and_extensions(
    tmp_path: Path, age_s: float, moved_ns: int, exts: frozenset[str] | None, reused: bool
) -> None:
    from citeline.ingest.files import Listing, Listings

    info = os.stat(tmp_path)
    listings = Listings()
    listed_exts = frozenset({".md"})
    listings.put(str(tmp_path), info, info.st_mtime + age_s, listed_exts, Listing(["a.md"], []))
    now = info
    if moved_ns:
        os.utime(tmp_path, ns=(info.st_atime_ns, info.st_mtime_ns + moved_ns))
        now = os.stat(tmp_path)
    got = listings.get(str(tmp_path), now, exts or listed_exts)
    assert (got is not None) == reused


def test_a_listing_is_not_reused_for_another_folder_moved_to_the_same_path(tmp_path: Path) -> None:
    from citeline.ingest.files import Listing, Listings

    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    os.utime(second, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns))  # the same time
    listings = Listings()
    exts = frozenset({".md"})
    listings.put(str(first), first.stat(), first.stat().st_mtime + 3600, exts, Listing(["a.md"], []))
    assert listings.get(str(first), first.stat(), exts) is not None
    first.rename(tmp_path / "old")
    second.rename(first)  # another folder, same path and time: its inode differs
    assert listings.get(str(first), first.stat(), exts) is None


def test_a_reused_listing_reports_its_skipped_entries_again(tmp_path: Path) -> None:
    """A folder whose listing is reused (added again in one process) still says what it skips."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nThe relay keeps its queue on disk.\n", encoding="utf-8")
    (docs / "prices.csv").write_text("item,price\n", encoding="utf-8")
    old = time.time() - 3600  # older than the racy window: the listing may be reused
    os.utime(docs, (old, old))
    kb = citeline.open(tmp_path / "index", embedder="hashing")
    try:
        first = kb.add([docs], root=tmp_path)
        second = kb.add([docs], root=tmp_path)
    finally:
        kb.close()
    assert first.added == ["docs/a.md"] and second.unchanged == ["docs/a.md"]
    for report in (first, second):
        assert [(s, r.split(";")[0]) for s, r in report.skipped] == [
            (str(docs / "prices.csv"), "unsupported file type '.csv'")
        ]
