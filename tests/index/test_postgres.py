"""The PostgreSQL store beyond the shared contract: a Citus-ready schema (checked on the live
catalog), migrations, the HNSW path, passwords that never show, and a writer racing readers
(that one on both stores)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from citeline.cli.main import main
from citeline.errors import CitelineError, SchemaTooNewError
from citeline.filters import Filter, Principal
from citeline.index.postgres.schema import DISTRIBUTION, REFERENCE_TABLES, SCHEMA_VERSION
from citeline.wiring import open_store
from conftest import ADMIN, OpenIndex

ALICE_LIKE = Principal(user="alice", groups=("eng",))


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def test_every_key_of_a_distributed_table_holds_its_distribution_column(pg_url: str) -> None:
    open_store(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace"
            )
        }
        assert tables == set(DISTRIBUTION) | set(REFERENCE_TABLES)  # every table is classified
        unique = conn.execute(
            "SELECT t.relname, i.relname, array_agg(a.attname::text) FROM pg_index x "
            "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = ANY(x.indkey) "
            "WHERE x.indisunique AND t.relnamespace = current_schema()::regnamespace "
            "GROUP BY t.relname, i.relname"
        ).fetchall()
        constraints = conn.execute(
            "SELECT t.relname, c.conname, c.contype FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid "
            "WHERE c.contype IN ('p', 'u', 'x', 'f') AND t.relnamespace = current_schema()::regnamespace"
        ).fetchall()
    checked = 0
    for table, index, columns in unique:  # primary keys and unique constraints are unique indexes
        if table in DISTRIBUTION:
            assert DISTRIBUTION[table] in columns, f"{table}.{index} lacks {DISTRIBUTION[table]}: {columns}"
            checked += 1
    assert checked >= len(DISTRIBUTION)  # each distributed table has at least its primary key
    # no foreign keys (Citus needs them co-located) and no exclusion constraints
    assert all(contype in ("p", "u") for _, _, contype in constraints)


def test_schema_is_versioned_and_a_newer_one_is_refused(pg_url: str) -> None:
    open_store(pg_url).close()
    open_store(pg_url).close()  # reopening migrates nothing
    with psycopg.connect(pg_url, autocommit=True) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM citeline_schema ORDER BY version")]
        assert versions == list(range(1, SCHEMA_VERSION + 1))
        conn.execute("INSERT INTO citeline_schema VALUES (%s, 0)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaTooNewError):
        open_store(pg_url)


def test_hnsw_serves_wide_searches_and_narrow_filters_stay_exact(pg_url: str, tmp_path: Path) -> None:
    from citeline.index.base import DocumentWrite
    from citeline.types import Chunk, Document, document_id_for, text_hash

    store = open_store(pg_url)
    dim, rng = 16, np.random.default_rng(3)
    store.bind_embedder("test", "1", dim)
    writes = []
    for i in range(400):
        doc_id = document_id_for("default", f"d{i}.md")
        chunks, vectors = [], {}
        for j in range(3):
            text = f"doc {i} part {j}"
            chunks.append(Chunk(f"{doc_id[:12]}-{j:012d}", doc_id, j, 0, 4, "text", text, (), "paragraph"))
            v = rng.standard_normal(dim).astype(np.float32)
            vectors[text_hash(text)] = v / np.linalg.norm(v)
        doc = Document(doc_id, f"d{i}.md", "t", "text", f"h{i}", 4, 0.0, None, tags={"half": str(i % 2)})
        writes.append(DocumentWrite(doc, "text", chunks, vectors))
    store.replace_documents(writes)
    query = rng.standard_normal(dim).astype(np.float32)
    exact = store.vector_search(query, Filter.admin(), 10)
    half = Filter(principal=ADMIN, tags={"half": "1"})
    exact_half = store.vector_search(query, half, 10)
    narrow = Filter(principal=ADMIN, documents=(writes[5].document.id,))
    # Force the index: no exact scans unless the index comes back short.
    store.exact_scan_rows, store.exact_scan_fraction = 0, 0.0  # type: ignore[attr-defined]
    approx = store.vector_search(query, Filter.admin(), 10)
    assert len({c for c, _ in approx} & {c for c, _ in exact}) >= 9
    approx_half = store.vector_search(query, half, 10)
    assert len(approx_half) == 10 and len({c for c, _ in approx_half} & {c for c, _ in exact_half}) >= 9
    assert len(store.vector_search(query, narrow, 10)) == 3  # filtered out of the index: redone exactly
    with psycopg.connect(pg_url) as conn:
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                f"EXPLAIN SELECT chunk_id FROM chunks WHERE vector_dims(embedding) = {dim} "
                f"ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT 10",
                (str(query.tolist()),),
            )
        )
    assert "chunks_embedding_hnsw" in plan
    store.close()


def test_passwords_never_show(pg_url: str, tmp_path: Path, docs_dir: Path) -> None:
    password = _password(pg_url)
    runner = CliRunner()
    outputs = []
    for args in (
        ["add", str(docs_dir)],
        ["status", "--json"],
        ["config"],
        ["config", "--json"],
        ["search", "alpha queue", "--json"],
        ["ask", "How many jobs does the alpha queue hold?", "--json", "--explain"],
        ["trace", "--json"],
    ):
        result = runner.invoke(main, ["--index", pg_url, *args], env={"CITELINE_EMBEDDER": "hashing"})
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    wrong = pg_url.replace(password, "not-the-password")
    result = runner.invoke(main, ["--index", wrong, "status"])
    assert result.exit_code != 0
    outputs.append(result.output)
    store = open_store(pg_url)
    outputs += [store.location, repr(store.stats())]
    store.close()
    with pytest.raises(CitelineError) as caught:
        open_store(wrong)
    outputs.append(str(caught.value))
    for text in outputs:
        assert password not in text and "not-the-password" not in text
    assert any("***" in text for text in outputs)


def test_a_writer_never_shows_readers_half_a_document(open_index: OpenIndex, tmp_path: Path) -> None:
    """One writer replaces a document over and over; readers on their own connections only ever
    see one whole version of it, in listings, counts and both searches."""
    docs = tmp_path / "docs"
    docs.mkdir()
    path = docs / "moving.md"
    versions = {
        "a": "# Moving\n\n" + "\n\n".join(f"## Part {i}\n\nalpha version paragraph {i}." for i in range(6)),
        "b": "# Moving\n\n" + "\n\n".join(f"## Section {i}\n\nbeta version text {i}." for i in range(3)),
    }
    (docs / "still.md").write_text("# Still\n\nNothing here moves at all.\n", encoding="utf-8")
    writer = open_index("shared", embedder="hashing")
    shapes: dict[str, frozenset[str]] = {}
    for name, text in versions.items():
        path.write_text(text, encoding="utf-8")
        writer.add([docs], root=docs)
        doc = writer.store.find_document("moving.md")
        assert doc is not None
        shapes[name] = frozenset(writer.store.document_chunks(doc.id))
    assert doc is not None  # the document of the last version
    doc_id = doc.id
    other = writer.store.count_chunks(Filter.admin()) - len(shapes["b"])
    stop, errors, reads = threading.Event(), [], [0]

    def read(kb: Any) -> None:
        vector = kb.embedder.embed(["version paragraph text"])[0]
        try:
            while not stop.is_set():
                ids = frozenset(kb.store.document_chunks(doc_id))
                assert ids in shapes.values(), f"half a document: {len(ids)} chunks"
                assert kb.store.count_chunks(Filter.admin()) - other in (len(shapes["a"]), len(shapes["b"]))
                found = {c for c, _ in kb.store.keyword_search("version", Filter.admin(), 20)}
                assert found in (set(shapes["a"]), set(shapes["b"])), f"mixed keyword hits: {len(found)}"
                dense = {c for c, _ in kb.store.vector_search(vector, Filter.admin(), 20)}
                mine = dense & (shapes["a"] | shapes["b"])
                assert mine <= shapes["a"] or mine <= shapes["b"], "mixed dense hits"
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)

    readers = [
        threading.Thread(target=read, args=(open_index("shared", embedder="hashing"),)) for _ in range(3)
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + 20
    writes = 0
    while time.monotonic() < deadline and writes < 30 and not errors:
        name = "ab"[writes % 2]
        path.write_text(versions[name], encoding="utf-8")
        report = writer.add([docs], root=docs)
        assert not report.failed, report.failed
        writes += 1
    stop.set()
    for t in readers:
        t.join(timeout=60)
    assert not errors, errors[0]
    assert writes >= 4 and reads[0] >= 10


def test_keyword_scores_equal_the_embedded_store_on_tricky_text(pg_url: str, tmp_path: Path) -> None:
    """Codes, versions, diacritics, repeated and hyphenated tokens: the same hits, the same BM25."""
    from index.test_store_contract import DIM, put

    texts = [
        ["Error LDG-4012 means the ledger is locked.", "Run ldg 4012 repair, then LDG-4012 clears."],
        ["Café naïve résumé über alles", "cafe naive resume"],
        ["Release v2.1.0 fixes sync_batch_size; 2.1.0 is stable.", "sync batch size tuning"],
        ["a-a-a pattern a a a", "the a-a case and a-b-a"],
        ["running runners run", "ran quickly, runs often"],
    ]
    stores = [open_store(str(tmp_path / "embedded")), open_store(pg_url)]
    for store in stores:
        store.bind_embedder("test-embedder", "1", DIM)
        for i, paragraphs in enumerate(texts):
            put(store, f"t{i}.md", paragraphs, seed=i)
        # one document alice may not read: her scores come from the chunks she may read (her slice)
        put(store, "secret.md", ["LDG-4012 café runs the a-a sync_batch_size"] * 3, acl=("group:hr",), seed=9)
    queries = [
        "LDG-4012",
        "ldg 4012 ledger",
        "café resume",
        "v2.1.0 sync_batch_size",
        "a-a",
        "a-b-a a",
        "runs",
        "the",
    ]
    for query in queries:
        sqlite_hits, pg_hits = (s.keyword_search(query, Filter.admin(), 20) for s in stores)
        assert [c for c, _ in pg_hits] == [c for c, _ in sqlite_hits], query
        assert [s for _, s in pg_hits] == pytest.approx([s for _, s in sqlite_hits], rel=1e-12), query
        sqlite_hits, pg_hits = (s.keyword_search(query, Filter(principal=ALICE_LIKE), 20) for s in stores)
        assert [c for c, _ in pg_hits] == [c for c, _ in sqlite_hits], query
        assert [s for _, s in pg_hits] == pytest.approx([s for _, s in sqlite_hits], rel=1e-9), query
        weights = [s.term_weights(query.split(), Filter(principal=ALICE_LIKE)) for s in stores]
        assert weights[1] == pytest.approx(weights[0]), query
    for store in stores:
        store.close()


def test_check_finds_and_repairs_what_a_crash_or_a_hand_edit_leaves(pg_url: str) -> None:
    """Postings of no chunk, a chunk without postings, totals that drifted, an orphan tag, a
    missing HNSW index (an interrupted bulk load), an uncached vector: check names each one,
    repair rebuilds them from the chunks, and search answers as before."""
    from index.test_store_contract import DIM, put

    store = open_store(pg_url)
    store.bind_embedder("test-embedder", "1", DIM)
    put(store, "a.md", ["gamma ray burst detector", "beta decay of gamma sources"], seed=1)
    put(store, "b.md", ["gamma spectrometer calibration"], seed=2, acl=("group:eng",))
    before = store.keyword_search("gamma detector", Filter.admin(), 10)
    assert store.check() == []
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT min(seq) FROM chunks").fetchone()
        assert row is not None and row[0] is not None  # the store holds chunks
        seq = row[0]
        conn.execute("DELETE FROM postings WHERE seq = %s", (seq,))
        conn.execute("INSERT INTO postings VALUES ('nobody', 'gamma', 999999, 1, 1)")
        conn.execute("UPDATE counters SET value = value + 5 WHERE name = 'chunks'")
        conn.execute("INSERT INTO doc_tags VALUES ('nobody', 'k', 'v')")
        conn.execute("DROP INDEX chunks_embedding_hnsw")
        conn.execute("DELETE FROM embeddings WHERE text_hash = (SELECT min(text_hash) FROM chunks)")
    kinds = sorted(p.kind for p in store.check())
    assert kinds == ["keyword-index", "keyword-index", "orphan", "orphan", "vector-index", "vectors"], kinds
    repaired = store.check(repair=True)
    assert repaired and all(p.repaired for p in repaired)
    assert store.check() == []
    assert store.keyword_search("gamma detector", Filter.admin(), 10) == before
    assert store.count_chunks(Filter.admin()) == 3
    store.close()


def test_a_second_writer_waits_then_fails_as_busy(pg_url: str) -> None:
    """lock_timeout_s bounds the wait for another writer's transaction: then IndexBusyError
    (exit code 4), nothing written."""
    from citeline.errors import IndexBusyError
    from citeline.index.postgres.connection import WRITER_LOCK
    from citeline.settings import Settings

    store = open_store(pg_url)
    store.configure(Settings().replace(lock_timeout_s=0.2))
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        started = time.monotonic()
        with pytest.raises(IndexBusyError, match="busy"):
            store.save_settings({"top_k": 7})
        assert time.monotonic() - started < 5
    store.save_settings({"top_k": 7})  # the other writer is gone
    assert store.stored_settings() == {"top_k": 7}
    store.close()
