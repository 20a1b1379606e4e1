"""The embedded store's derived engines (index/sqlite/engines.py): tombstones and compaction, catching up
from the change log (also past a compacted log), `check` and `check --repair`, filtered recall.
The Store contract runs against them too (tests/index/test_store_contract.py, "sqlite-engines");
kills: tests/reliability/test_engine_crash.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from citeline.filters import Filter, Principal
from citeline.index.base import DocumentWrite
from citeline.index.sqlite import SqliteStore
from citeline.index.sqlite.changelog import compact, log_floor, log_position
from citeline.index.sqlite.engine_keyword import KeywordEngine
from citeline.index.sqlite.schema import transaction
from citeline.settings import Settings
from citeline.types import document_id_for, text_hash
from citeline.wiring import open_store
from reliability.engine_worker import document_write

ADMIN = Filter.admin()
DIM = 16


def _unit(rng: np.random.Generator, center: np.ndarray | None = None) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32) * (0.35 if center is not None else 1.0)
    if center is not None:
        v += center
    return (v / np.linalg.norm(v)).astype(np.float32)


def _write(number: int, rng: np.random.Generator, centers: np.ndarray, per_doc: int = 4) -> DocumentWrite:
    return document_write(
        f"doc-{number:05d}.md",
        [f"word{number} part{j} shared corpus text" for j in range(per_doc)],
        [_unit(rng, centers[(number * per_doc + j) % len(centers)]) for j in range(per_doc)],
        f"h{number}",
        {f"s{p}": "1" for p in (10, 50) if number % 100 < p},
    )


def _store(path: Path, **settings: int) -> SqliteStore:
    store = open_store(str(path))
    assert isinstance(store, SqliteStore)
    store.configure(Settings(engine_min_chunks=0).replace(**settings))
    store.bind_embedder("test", "1", DIM)
    return store


def _fill(store: SqliteStore, docs: int, seed: int = 0, per_doc: int = 4) -> None:
    rng = np.random.default_rng(seed)
    centers = np.stack([_unit(rng) for _ in range(40)])
    writes = [_write(i, rng, centers, per_doc) for i in range(docs)]
    for lo in range(0, len(writes), 100):
        store.replace_documents(writes[lo : lo + 100])


def _chunk_vector(store: SqliteStore, chunk_id: str) -> np.ndarray:
    chunk = store.chunks([chunk_id])[chunk_id][0]
    return store.cached_vectors([text_hash(chunk.index_text)])[text_hash(chunk.index_text)]


def _first_chunk(store: SqliteStore, source: str) -> str:
    """The id of the first chunk of a document the test wrote."""
    doc = store.find_document(source)
    assert doc is not None, source
    return store.document_chunks(doc.id)[0]


def test_below_the_threshold_nothing_is_derived_and_the_log_stays_empty(tmp_path: Path) -> None:
    store = _store(tmp_path / "i", engine_min_chunks=10_000)
    _fill(store, 20)
    assert store.keyword_search("word3", ADMIN, 5) and store.vector_search(np.ones(DIM, np.float32), ADMIN, 5)
    assert not (tmp_path / "i" / "engines").exists()
    assert store.conn.execute("SELECT COUNT(*) FROM changes").fetchone()[0] == 0
    store.close()


def test_deletes_are_tombstoned_then_compacted(tmp_path: Path) -> None:
    store = _store(tmp_path / "i")
    _fill(store, 30)
    store.keyword_search("word1", ADMIN, 5)  # builds the engines
    gone = [store.find_document(f"doc-{i:05d}.md") for i in range(5)]
    gone_chunks = [c for d in gone if d is not None for c in store.document_chunks(d.id)]
    probe = _chunk_vector(store, gone_chunks[0])
    for doc in gone:
        assert doc is not None
        store.remove_document(doc.id)
    assert store.keyword_search("word2", ADMIN, 5) == []
    vec = store._engines.vector
    assert vec is not None and len(vec.tombstones) == len(gone_chunks)
    assert int(vec.index.ntotal) == 30 * 4  # still in the lists, left out of every search
    assert not {c for c, _ in store.vector_search(probe, ADMIN, 50)} & set(gone_chunks)
    assert store.check() == []
    vec.compact()
    assert not vec.tombstones and int(vec.index.ntotal) == 25 * 4
    assert store.check() == []
    # a rowid SQLite reuses (the highest one was removed) is a new chunk to the engines
    last = store.find_document("doc-00029.md")
    assert last is not None
    store.remove_document(last.id)
    rng = np.random.default_rng(9)
    store.replace_documents([_write(777, rng, np.stack([_unit(rng)]))])
    new_ids = set(store.document_chunks(document_id_for("default", "doc-00777.md")))
    assert {c for c, _ in store.keyword_search("word777", ADMIN, 10)} == new_ids
    assert store.keyword_search("word29", ADMIN, 10) == []
    assert store.check() == []
    store.close()


def test_engines_catch_up_on_open_and_past_a_compacted_log(tmp_path: Path) -> None:
    store = _store(tmp_path / "i")
    _fill(store, 10)
    store.keyword_search("word1", ADMIN, 5)
    store.close()
    # another process writes without the engines: the log keeps what their files do not hold
    other = _store(tmp_path / "i", engine_min_chunks=10**9)
    rng = np.random.default_rng(3)
    other.replace_documents([_write(500, rng, np.stack([_unit(rng)]))])
    assert log_position(other.conn) > log_floor(other.conn)
    reopened = _store(tmp_path / "i")
    assert len(reopened.keyword_search("word500", ADMIN, 10)) == 4  # caught up on open
    reopened.close()
    # the log compacted past the engines' position: they cannot replay it and are rebuilt
    other.replace_documents([_write(501, rng, np.stack([_unit(rng)]))])
    with transaction(other.conn):
        compact(other.conn, log_position(other.conn))
    other.close()
    again = _store(tmp_path / "i")
    assert len(again.keyword_search("word501", ADMIN, 10)) == 4
    assert again.check() == []
    again.close()


def test_check_finds_damaged_engines_and_repair_rebuilds_them(tmp_path: Path) -> None:
    store = _store(tmp_path / "i")
    _fill(store, 10)
    store.keyword_search("word1", ADMIN, 5)
    kw, vec = store._engines.keyword, store._engines.vector
    assert kw is not None and vec is not None
    writer = kw._index.writer(15_000_000, 1)
    writer.add_document(kw._document(999_999, "ghost words nobody wrote"))  # a row of no chunk
    writer.commit()
    del writer
    kw._index.reload()
    vec.index.remove_ids(vec.faiss.IDSelectorBatch(np.asarray([1, 2], dtype=np.int64)))  # lost vectors
    kinds = {p.kind for p in store.check()}
    assert kinds == {"keyword-index", "vector-index"}
    repaired = store.check(repair=True)
    assert repaired and all(p.repaired for p in repaired)
    assert store.check() == []
    assert store.keyword_search("ghost", ADMIN, 5) == []
    store.close()
    # a checkpoint file that cannot be read: the vector engine is built again from SQLite
    for f in (tmp_path / "i" / "engines").glob("vectors-*.faiss"):
        f.write_bytes(b"not a faiss index")
    store = _store(tmp_path / "i")
    assert store.check() == [] and len(store.vector_search(np.ones(DIM, np.float32), ADMIN, 5)) == 5
    store.close()


def test_filtered_ann_keeps_recall_against_exact(tmp_path: Path) -> None:
    """Above engine_exact_rows the IVF index searches the allowed rowids only, probing more lists
    the more selective the filter: recall@10 against exact search over the same slice >= 0.95,
    and nothing outside the filter."""
    exact = _store(tmp_path / "i", engine_min_chunks=10**9)
    _fill(exact, 1500, seed=1)  # 6,000 chunks in 40 clusters, written without the engines
    store = _store(tmp_path / "i", engine_exact_rows=0)
    for share in (10, 50):
        flt = Filter(principal=Principal.local_admin(), tags={f"s{share}": "1"})
        allowed = {c for d in store.documents(flt) for c in store.document_chunks(d.id)}
        rng = np.random.default_rng(5)
        recalls = []
        for _ in range(30):
            q = _unit(rng)
            want = [c for c, _ in exact.vector_search(q, flt, 10)]
            got = [c for c, _ in store.vector_search(q, flt, 10)]
            assert set(got) <= allowed  # pre-filtering: nothing the filter does not let through
            recalls.append(len(set(want) & set(got)) / len(want))
        assert float(np.mean(recalls)) >= 0.95, (share, recalls)
    assert store._engines.vector is not None and store._engines.vector.index.nlist > 1
    exact.close()
    store.close()


def test_many_small_updates_keep_the_keyword_engine_merged(tmp_path: Path) -> None:
    """Each write is one tantivy commit; the merges a commit schedules must finish, or every
    update leaves one more segment and writes and searches slow down as the index grows
    (without waiting for them: 30-80 segments here)."""
    engine = KeywordEngine(tmp_path / "engines")
    engine.build([], position=0)
    for batch in range(80):
        rows = [(batch * 10 + j, f"word{batch} part{j} shared text") for j in range(10)]
        engine.apply(np.asarray([r for r, _ in rows], dtype=np.int64), rows, position=batch + 1)
    assert engine._index is not None
    assert engine._index.searcher().num_segments <= 10
    assert engine.count(["shared"]) == 800
    assert [r for r, _ in engine.search(["word7"], 20)] == list(range(70, 80))


def test_a_closed_writer_leaves_a_checkpoint_the_next_process_maps_and_can_still_change(
    tmp_path: Path,
) -> None:
    """A writer's close saves the vector engine at the log's position; the next store maps that
    checkpoint (no read, no replay) and reads it into memory before its own first change (a
    change to a mapped faiss index would abort the process)."""
    store = _store(tmp_path / "i")
    _fill(store, 30)
    store.keyword_search("word1", ADMIN, 5)  # builds the engines
    _fill(store, 40, seed=1)  # more writes after the first checkpoint
    store.close()
    state = json.loads((tmp_path / "i" / "engines" / "vectors.json").read_text(encoding="utf-8"))
    again = _store(tmp_path / "i")
    assert state["position"] == log_position(again.conn)
    probe = _chunk_vector(again, _first_chunk(again, "doc-00003.md"))
    assert again.vector_search(probe, ADMIN, 3)
    vec = again._engines.vector
    assert vec is not None and vec.mapped
    rng = np.random.default_rng(9)
    again.replace_documents([_write(500, rng, np.stack([_unit(rng) for _ in range(4)]))])
    new_chunk = _first_chunk(again, "doc-00500.md")
    assert again.vector_search(_chunk_vector(again, new_chunk), ADMIN, 1)[0][0] == new_chunk
    assert not vec.mapped  # read into memory to take the change
    assert again.check() == []
    again.close()
