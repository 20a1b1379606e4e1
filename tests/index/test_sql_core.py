"""The SQL core both stores share (index/sql/): the dialect's spelling of shared SQL, and the one
checker's table run against each store's real database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from citeline.filters import Filter
from citeline.index.sql.dialect import POSTGRES, SQLITE, Dialect
from citeline.index.sqlite.store import SqliteStore
from citeline.wiring import open_store
from index.test_store_contract import DIM, put

if TYPE_CHECKING:  # psycopg is imported only where the PostgreSQL store runs
    from citeline.index.postgres.store import PostgresStore


@pytest.mark.parametrize(
    ("dialect", "shared", "native"),
    [
        (SQLITE, "SELECT value FROM meta WHERE key = ?", "SELECT value FROM meta WHERE key = ?"),
        (POSTGRES, "SELECT value FROM meta WHERE key = ?", "SELECT value FROM meta WHERE key = %s"),
        # psycopg reads % as the start of a placeholder: a literal one is doubled
        (
            POSTGRES,
            "SELECT key FROM meta WHERE key LIKE 'emb%' AND value = ?",
            "SELECT key FROM meta WHERE key LIKE 'emb%%' AND value = %s",
        ),
        (SQLITE, "SELECT key FROM meta WHERE key LIKE 'emb%'", "SELECT key FROM meta WHERE key LIKE 'emb%'"),
    ],
)
def test_shared_sql_is_spelled_for_each_driver(dialect: Dialect, shared: str, native: str) -> None:
    assert dialect.sql(shared) == native


@pytest.mark.parametrize(
    ("dialect", "condition", "params"),
    [
        (SQLITE, "id IN (?,?,?)", ["a", "b", "c"]),
        (POSTGRES, "id = ANY(?)", [["a", "b", "c"]]),
    ],
)
def test_a_list_of_values_is_an_in_list_or_one_array(
    dialect: Dialect, condition: str, params: list[object]
) -> None:
    assert dialect.in_list("id", ["a", "b", "c"]) == (condition, params)
    assert [list(part) for part in dialect.batches(list(range(dialect.batch + 1)))] == [
        list(range(dialect.batch)),
        [dialect.batch],
    ]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqliteStore | PostgresStore]:
    """Each store on the shared SQL core, as open_store builds it."""
    location = str(tmp_path / "index") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    s = open_store(location)
    if request.param == "sqlite":
        assert isinstance(s, SqliteStore)
    else:
        from citeline.index.postgres.store import PostgresStore

        assert isinstance(s, PostgresStore)
    s.bind_embedder("test-embedder", "1", DIM)
    yield s
    s.close()


def test_shared_sql_with_a_literal_percent_runs_on_each_driver(store: SqliteStore | PostgresStore) -> None:
    with store.reading() as s:
        assert s.value("SELECT 'a%b' || ?", ("c",)) == "a%bc"
        cond, params = s.dialect.in_list("key", ["embedder", "embedder_dim", "no-such-key"])
        assert sorted(r[0] for r in s.rows(f"SELECT key FROM meta WHERE {cond}", params)) == [
            "embedder",
            "embedder_dim",
        ]


def test_the_one_checker_finds_and_repairs_the_same_problems_in_each_store(
    store: SqliteStore | PostgresStore,
) -> None:
    """Rows edited by hand, through shared SQL: a tag of no document, an original and a vector
    nothing uses, a document whose chunks are gone. Both stores report them in the same words;
    repair removes the broken document and leaves the index whole."""
    put(store, "a.md", ["gamma ray burst detector"], seed=1)
    broken = put(store, "b.md", ["beta decay", "of gamma sources"], seed=2, original=b"raw")
    before = store.keyword_search("gamma detector", Filter.admin(), 10)
    assert store.check() == []
    d = store.dialect
    if d is SQLITE:  # its foreign keys keep orphans out: a hand edit turns them off first
        with store.reading() as s:
            s.execute("PRAGMA foreign_keys=OFF")
    with store.writing() as s:
        s.execute("INSERT INTO doc_tags (document_id, key, value) VALUES ('nobody', 'k', 'v')")
        s.execute("INSERT INTO blobs (content_hash, data) VALUES ('deadbeef', ?)", (b"\x00",))
        s.execute(
            "INSERT INTO embeddings (text_hash, embedder, vector) "
            "SELECT 'unused', embedder, vector FROM embeddings WHERE embedder = 'test-embedder' LIMIT 1"
        )
        for table in (*d.derived_tables, "chunks"):
            s.execute(f"DELETE FROM {table} WHERE document_id = ?", (broken.id,))
    if d is SQLITE:
        with store.reading() as s:
            s.execute("PRAGMA foreign_keys=ON")
    details = {p.detail for p in store.check()}
    assert {
        "1 rows of doc_tags belong to no document",
        "1 original files belong to no document",
        "3 vectors belong to no chunk",  # the one added, and the two of b.md's chunks
        "1 documents have no chunks: b.md",
    } <= details, details
    repaired = store.check(repair=True)
    assert repaired and all(p.repaired for p in repaired)
    assert store.check() == []
    assert store.get_document(broken.id) is None and store.original(broken.id) is None
    assert store.count_documents(Filter.admin()) == 1 and store.count_chunks(Filter.admin()) == 1
    assert [c for c, _ in store.keyword_search("gamma detector", Filter.admin(), 10)] == [
        c for c, _ in before if not c.startswith(broken.id[:12])
    ]
