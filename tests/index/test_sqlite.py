"""The SQLite store: schema versions, refusal of foreign folders, pre-filtered exact search."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from citeline.errors import NotAnIndexError, SchemaTooNewError
from citeline.index.sqlite import SqliteStore
from citeline.index.sqlite.dense import DenseMatrix
from citeline.index.sqlite.schema import SCHEMA_VERSION


def test_new_index_uses_wal_and_records_schema_version(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "idx")
    assert store.meta("schema_version") == str(SCHEMA_VERSION)
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()
    assert SqliteStore(tmp_path / "idx", create=False).meta("schema_version") == str(SCHEMA_VERSION)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "idx")
    store.conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    store.close()
    with pytest.raises(SchemaTooNewError, match="Upgrade citeline"):
        SqliteStore(tmp_path / "idx")


def test_foreign_sqlite_database_is_not_touched(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    folder.mkdir()
    conn = sqlite3.connect(folder / "citeline.db")
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(NotAnIndexError, match="other tables"):
        SqliteStore(folder)


def test_missing_index_without_create(tmp_path: Path) -> None:
    with pytest.raises(NotAnIndexError, match="citeline add"):
        SqliteStore(tmp_path / "none", create=False)


def test_dense_search_is_exact_and_respects_allowed_rows() -> None:
    rng = np.random.default_rng(7)
    m = rng.normal(size=(500, 16)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    ids = np.arange(1000, 1500, dtype=np.int64)
    dense = DenseMatrix(ids, m)
    q = m[42]
    top = dense.search(q, 5)
    assert top[0][0] == 1042 and abs(top[0][1] - 1.0) < 1e-5
    brute = sorted(((int(i), float(s)) for i, s in zip(ids, m @ q, strict=True)), key=lambda x: -x[1])[:5]
    assert [i for i, _ in top] == [i for i, _ in brute]
    allowed = ids[::100]  # 1% of rows still yields k results, the exact best among them
    filtered = dense.search(q, 3, allowed)
    expected = sorted(((int(i), float(m[i - 1000] @ q)) for i in allowed), key=lambda x: -x[1])[:3]
    assert [i for i, _ in filtered] == [i for i, _ in expected]


def test_dense_matrix_is_saved_for_the_next_process_and_never_read_stale(tmp_path: Path) -> None:
    """The matrix read from SQLite is saved (dense-matrix.bin) and read back by the next store
    opened on the index; after a write its key differs and SQLite is read again."""
    from citeline.filters import Filter
    from citeline.index.sqlite import dense
    from index.test_store_contract import DIM, _vector, put

    location = tmp_path / "index"
    first = SqliteStore(location)
    first.bind_embedder("test-embedder", "1", DIM)
    put(first, "a.md", ["Alpha one.", "Alpha two."], seed=1)
    query = _vector(100)
    hits = first.vector_search(query, Filter.admin(), 5)
    saved = location / dense.SAVED_NAME
    assert saved.is_file()
    first.close()

    reads: list[int] = []
    real_save = dense.save
    second = SqliteStore(location)
    try:

        def counted_save(*a, **k):
            reads.append(1)
            return real_save(*a, **k)

        dense.save = counted_save
        assert second.vector_search(query, Filter.admin(), 5) == hits
        assert reads == []  # loaded from the saved file, not SQLite
        put(second, "b.md", ["Beta one."], seed=2)
        after = second.vector_search(_vector(200), Filter.admin(), 5)
        assert reads == [1]  # the write changed the key: read from SQLite and saved again
        assert len(second._dense_matrix()) == 3
        b = second.find_document("b.md")
        assert b is not None
        assert {h for h, _ in after} >= set(second.document_chunks(b.id))
    finally:
        dense.save = real_save
        second.close()


def test_a_damaged_saved_matrix_is_ignored(tmp_path: Path) -> None:
    from citeline.filters import Filter
    from index.test_store_contract import DIM, _vector, put

    location = tmp_path / "index"
    store = SqliteStore(location)
    store.bind_embedder("test-embedder", "1", DIM)
    put(store, "a.md", ["Alpha one.", "Alpha two."], seed=1)
    (location / "dense-matrix.bin").write_bytes(b"not a matrix file")
    assert len(store.vector_search(_vector(1), Filter.admin(), 5)) == 2
    store.close()
