"""Incremental ingestion: unchanged files cost nothing, edits re-embed only what changed."""

from __future__ import annotations

import os
from pathlib import Path

from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from conftest import ADMIN


def _embedded(kb: KnowledgeBase) -> int:
    return int(kb.embedder.texts_embedded)


def test_readding_unchanged_folder_embeds_nothing(kb: KnowledgeBase, docs_dir: Path) -> None:
    first = kb.add([docs_dir])
    assert sorted(Path(s).name for s in first.added) == ["alpha.md", "beta.md", "notes.txt"]
    calls_before = kb.embedder.calls
    texts_before = _embedded(kb)
    second = kb.add([docs_dir])
    assert second.unchanged and not second.added and not second.updated
    assert second.chunks_embedded == 0
    assert kb.embedder.calls == calls_before
    assert _embedded(kb) == texts_before
    assert second.summary() == "0 added, 0 updated, 3 unchanged, 0 failed"


def test_editing_one_paragraph_reembeds_only_changed_chunks(kb: KnowledgeBase, docs_dir: Path) -> None:
    kb.add([docs_dir])
    doc = kb.store.find_document(os.path.abspath(docs_dir / "alpha.md"))
    assert doc is not None
    chunks_before = len(kb.store.document_chunks(doc.id))
    assert chunks_before == 3  # one per section
    path = docs_dir / "alpha.md"
    path.write_text(path.read_text().replace("at most 900 jobs", "at most 1200 jobs"), encoding="utf-8")
    before = _embedded(kb)
    report = kb.add([docs_dir])
    assert [Path(s).name for s in report.updated] == ["alpha.md"]
    assert report.chunks_embedded == 1
    assert _embedded(kb) - before == 1
    hits = kb.search("How many jobs does the alpha queue hold?", ADMIN, k=3)
    assert "1200" in hits[0].chunk.text


def test_removing_a_file_removes_it_from_bm25_and_vectors(kb: KnowledgeBase, docs_dir: Path) -> None:
    kb.add([docs_dir])
    assert any("ZX-7781" in h.chunk.text for h in kb.search("ZX-7781", ADMIN, k=5))
    report = kb.remove([docs_dir / "alpha.md"])
    assert [Path(s).name for s in report.removed] == ["alpha.md"]
    assert kb.store.keyword_search("ZX-7781 alpha queue", Filter.admin(), 10) == [] or all(
        "alpha" not in cid for cid, _ in kb.store.keyword_search("ZX-7781", Filter.admin(), 10)
    )
    assert not kb.store.keyword_search("ZX-7781", Filter.admin(), 10)
    vector = kb.embedder.embed(["alpha queue full error"])[0]
    remaining = {
        kb.store.chunks([cid])[cid][1].source for cid, _ in kb.store.vector_search(vector, Filter.admin(), 50)
    }
    assert remaining and not any(s.endswith("alpha.md") for s in remaining)
    # its vectors are gone too, not just unreachable
    assert kb.store.stats()["vectors"] == kb.store.stats()["chunks"]


def test_exact_token_in_one_document_ranks_it_first(samples_kb: KnowledgeBase) -> None:
    hits = samples_kb.search("LDG-6100", ADMIN, k=5)
    assert hits[0].source.endswith("error-codes.md")
    assert "LDG-6100" in hits[0].chunk.index_text  # in its heading, which is indexed with it
    assert hits[0].stages["bm25"].rank == 1


def test_every_chunk_span_quotes_the_stored_text(samples_kb: KnowledgeBase) -> None:
    for doc in samples_kb.store.documents(Filter.admin()):
        text = samples_kb.store.document_text(doc.id)
        ids = samples_kb.store.document_chunks(doc.id)
        for chunk, _ in samples_kb.store.chunks(ids).values():
            assert text[chunk.start : chunk.end] == chunk.text
            assert chunk.text.strip() == chunk.text and chunk.text
            assert chunk.index_text.endswith(chunk.text) or "|" in chunk.text


def test_no_chunk_is_truncated_by_the_embedder(samples_kb: KnowledgeBase) -> None:
    embedder = samples_kb.embedder
    ids = [
        cid
        for d in samples_kb.store.documents(Filter.admin())
        for cid in samples_kb.store.document_chunks(d.id)
    ]
    texts = [c.index_text for c, _ in samples_kb.store.chunks(ids).values()]
    counts = embedder.count_tokens(texts)
    assert max(counts) <= embedder.max_tokens
    # and the target (~200 incl. prefix) holds for ordinary prose
    assert sum(c <= 210 for c in counts) / len(counts) > 0.95


def test_bad_inputs_fail_alone_with_reasons_and_empty_ones_are_skipped(
    kb: KnowledgeBase, docs_dir: Path, tmp_path: Path
) -> None:
    (docs_dir / "empty.md").write_text("", encoding="utf-8")
    (docs_dir / "binary.txt").write_bytes(b"\x00\x01\x02PK\x03\x04" * 100)
    (docs_dir / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me is served at the kiosk.\n".encode("latin-1"))
    (docs_dir / "broken.md").write_bytes(b"# Title\n\nBad bytes \xff\xfe\xfa here but readable text.\n")
    missing = tmp_path / "does-not-exist.md"
    report = kb.add([docs_dir, missing])
    failed = dict(report.failed)
    # an empty file has nothing wrong with it: skipped with the reason, not failed
    assert "no text to index" in dict(report.skipped)[str(docs_dir / "empty.md")]
    assert str(docs_dir / "empty.md") not in failed
    assert "binary" in failed[str(docs_dir / "binary.txt")]
    assert "no such file" in failed[str(missing)]
    names = {Path(s).name for s in report.added}
    assert {"alpha.md", "beta.md", "notes.txt", "latin1.txt", "broken.md"} <= names
    latin = kb.store.find_document(os.path.abspath(docs_dir / "latin1.txt"))
    assert latin is not None and "Café crème" in kb.store.document_text(latin.id)


def test_huge_file_is_refused_with_the_limit_named(tmp_path: Path, docs_dir: Path) -> None:
    import citeline

    big = docs_dir / "huge.txt"
    with big.open("w", encoding="utf-8") as f:
        line = "The quick brown fox jumps over the lazy dog near the river bank.\n"
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            f.write(line)
    kb = citeline.open(tmp_path / "idx")
    report = kb.add([docs_dir])
    reason = dict(report.failed)[str(big)]
    assert "limit" in reason and "CITELINE_MAX" in reason
    assert len(report.added) == 3


def test_uploads_go_through_the_same_checks_and_keep_their_own_metadata(
    kb: KnowledgeBase, docs_dir: Path
) -> None:
    """add_bytes (the server's uploads) runs the file pipeline's job/prepare/write: the size,
    empty and text-length limits apply, the parser is picked by the name, an upload keeps the
    caller's metadata and no file path, and the same bytes again are unchanged."""
    text = b"# Canteen\n\nThe canteen opens at eight and closes at three.\n"
    report = kb.add_bytes(
        "notes/canteen.md", text, collection="uploads/alice", metadata={"uploaded_by": "alice"}
    )
    assert report.added == ["notes/canteen.md"] and not report.failed
    doc = kb.store.find_document("notes/canteen.md", "uploads/alice")
    assert doc is not None and doc.format == "markdown" and doc.title == "Canteen"
    assert doc.metadata["uploaded_by"] == "alice" and "path" not in doc.metadata
    assert doc.metadata["pipeline"] and kb.store.original(doc.id) == text
    again = kb.add_bytes(
        "notes/canteen.md", text, collection="uploads/alice", metadata={"uploaded_by": "alice"}
    )
    assert again.unchanged == ["notes/canteen.md"] and again.chunks_embedded == 0

    assert "empty" in dict(kb.add_bytes("blank.md", b"  \n", collection="uploads/alice").failed)["blank.md"]
    small = kb._ingestor()
    small.settings = kb.settings.replace(max_file_mb=0.001, max_text_chars=20)
    assert "MB limit" in dict(small.add_bytes("big.md", b"x" * 2000).failed)["big.md"]
    assert (
        "characters of text" in dict(small.add_bytes("long.md", b"# T\n\n" + b"word " * 50).failed)["long.md"]
    )

    kb.add([docs_dir])
    filed = kb.store.find_document(os.path.abspath(docs_dir / "alpha.md"))
    assert filed is not None and filed.metadata["path"] == os.path.abspath(docs_dir / "alpha.md")
    assert "uploaded_by" not in filed.metadata


def test_report_times_each_stage(kb: KnowledgeBase, docs_dir: Path) -> None:
    report = kb.add([docs_dir])
    assert set(report.seconds) == {"parse", "chunk", "embed", "write"}
    assert all(s >= 0 for s in report.seconds.values()) and report.seconds["embed"] > 0
