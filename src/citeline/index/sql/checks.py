"""`citeline check` for the SQL stores: one table of checks, run by one checker.

Each row names the problem's kind, the SQL that finds it in each store (a store whose dialect the
row does not name skips it) and the repair step that fixes it. What is not one query (FTS5's own
integrity check, vectors that are not finite numbers, the in-memory matrix, the derived engines)
is a probe the store answers (``SqlStore.check_probe``). The documents and chunks are the source
of truth; what a store derives from them (FTS5 or postings, the vector matrix or HNSW index, the
derived engines, the vector cache) is checked against them and rebuilt by ``repair``, and
documents that cannot be made whole are removed (reported: ``citeline add`` adds their files
again). Every write is one transaction, so what this finds after a crash is a bug, a full disk,
an interrupted bulk load or rows edited by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from citeline.index.base import EmbedderInfo, Problem
from citeline.index.sql.dialect import Session
from citeline.index.sql.writes import remove_documents

#: a problem found, with the repair step that fixes it (None: ``check`` cannot; "drop:ids" removes
#: those documents)
Found = tuple[Problem, str | None]
Rows = Sequence[Sequence[Any]]


class Checked(Protocol):
    """What the checks ask of a store (index/sql/store.py:SqlStore): its sessions and own steps."""

    def embedder_info(self) -> EmbedderInfo | None: ...

    def reading(self, snapshot: bool = False) -> AbstractContextManager[Session]: ...

    def writing(self) -> AbstractContextManager[Session]: ...

    def check_probe(
        self, name: str, s: Session, info: EmbedderInfo | None, found: Sequence[Found]
    ) -> list[Found]: ...

    def repair_derived(self, s: Session, steps: set[str], info: EmbedderInfo | None) -> None: ...

    def after_repair(self, steps: set[str], info: EmbedderInfo | None) -> None: ...


_SHOW = 5  # examples named per problem
SQLITE, POSTGRES = "sqlite", "postgresql"
BOTH = (SQLITE, POSTGRES)


def names(found: Rows) -> str:
    """Up to five examples (each row's last column), and how many more."""
    shown = ", ".join(str(r[-1]) for r in found[:_SHOW])
    return shown + (f" and {len(found) - _SHOW} more" if len(found) > _SHOW else "")


@dataclass(frozen=True)
class Query:
    """A check that is one query: ``detail`` reads its rows (None: nothing wrong)."""

    kind: str
    #: the query per store (dialect name); ``{id}`` stands for the documents' id column
    sql: Mapping[str, str]
    detail: Callable[[Rows, EmbedderInfo | None], str | None]
    #: the repair step; "drop" removes the documents named by the rows' first column
    repair: str | None = None
    #: run only once an embedder is bound; its parameters then
    embedder: Callable[[EmbedderInfo], tuple[Any, ...]] | None = None


@dataclass(frozen=True)
class Probe:
    """A check the store answers itself (``SqlStore.check_probe``)."""

    name: str
    stores: tuple[str, ...]


def _count(n: str) -> Callable[[Rows, EmbedderInfo | None], str | None]:
    """The detail of a count: ``n`` formatted with the count (and the embedder), when not 0."""
    return lambda found, info: n.format(found[0][0], info=info) if found[0][0] else None


def _orphans(table: str, stores: tuple[str, ...]) -> Query:
    sql = f"SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.{{id}} = t.document_id)"
    return Query(
        "orphan", dict.fromkeys(stores, sql), _count(f"{{}} rows of {table} belong to no document"), "orphans"
    )


def _integrity(found: Rows, info: EmbedderInfo | None) -> str | None:
    said = [str(r[0]) for r in found]
    if said == ["ok"]:
        return None
    return (
        "SQLite integrity_check: " + "; ".join(said[:5]) + " (if REINDEX does not fix it, add the documents "
        "again into a new index)"
    )


def _postings(found: Rows, info: EmbedderInfo | None) -> str | None:
    stray, mismatched = found[0]
    return (
        f"the postings disagree with {mismatched} chunks ({stray} postings of no chunk)"
        if stray or mismatched
        else None
    )


def _totals(found: Rows, info: EmbedderInfo | None) -> str | None:
    said_chunks, said_tokens, chunks, tokens = found[0]
    said = (-1 if said_chunks is None else int(said_chunks), -1 if said_tokens is None else int(said_tokens))
    if said == (int(chunks), int(tokens)):
        return None
    return f"BM25's totals say {said_chunks} chunks of {said_tokens} tokens; the index holds {chunks} of {tokens}"


def _hnsw(found: Rows, info: EmbedderInfo | None) -> str | None:
    if found and found[0][0]:
        return None
    return f"the HNSW index is {'missing' if not found else 'invalid'} (dense search scans exactly)"


def _wrong_dimension(found: Rows, info: EmbedderInfo | None) -> str | None:
    if not found or info is None:
        return None
    return (
        f"chunks of {len(found)} documents have vectors that are not of dimension {info.dim} "
        f"(embedder {info.name}): {names(found)}"
    )


_SPAN = {
    SQLITE: "SELECT DISTINCT d.id, d.source FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.start < 0 "
    'OR c."end" <= c.start OR c."end" > length(d.text) '
    "OR trim(substr(d.text, c.start + 1, c.\"end\" - c.start), ' \t\n\r') = ''",
    POSTGRES: "SELECT DISTINCT d.document_id, d.source FROM chunks c JOIN documents d "
    'ON d.document_id = c.document_id WHERE c.start < 0 OR c."end" <= c.start '
    'OR c."end" > length(d.text) '
    "OR btrim(substr(d.text, c.start + 1, c.\"end\" - c.start), E' \\t\\n\\r') = '' "
    "ORDER BY d.source",
}
_EMPTY = "SELECT d.{id}, d.source FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.{id})"
_UNUSED_VECTORS = (
    "SELECT COUNT(*) FROM embeddings e WHERE e.embedder = ? AND NOT EXISTS "
    "(SELECT 1 FROM chunks c WHERE c.text_hash = e.text_hash)"
)
# A pending chunk (progressive indexing: its fast vector stands in until `citeline embed`) is not missing one
_UNEMBEDDED = (
    "FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.text_hash = c.text_hash AND e.embedder = ?) "
    "AND NOT EXISTS (SELECT 1 FROM embeddings f WHERE f.text_hash = c.text_hash "
    "AND f.embedder = (SELECT value FROM meta WHERE key = 'pending_embedder'))"
)

#: every check, in the order problems are reported
CHECKS: tuple[Query | Probe, ...] = (
    Query("integrity", {SQLITE: "PRAGMA integrity_check(20)"}, _integrity, "reindex"),
    *(_orphans(table, BOTH) for table in ("doc_tags", "doc_acl", "chunks")),
    _orphans("postings", (POSTGRES,)),
    # -- keyword search: FTS5, or the postings and BM25's totals
    Probe("fts", (SQLITE,)),
    Query(
        "keyword-index",
        {
            POSTGRES: "SELECT (SELECT count(*) FROM postings p WHERE NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.document_id = p.document_id AND c.seq = p.seq)), "
            # each chunk: one posting per lexeme of its tsvector, frequencies summing to its length
            "(SELECT count(*) FROM chunks c LEFT JOIN (SELECT document_id, seq, count(*) AS lexemes, "
            "sum(tf) AS tokens, min(n_tokens) AS lo, max(n_tokens) AS hi FROM postings "
            "GROUP BY document_id, seq) p ON p.document_id = c.document_id AND p.seq = c.seq "
            "WHERE coalesce(p.lexemes, 0) <> length(c.tsv) OR coalesce(p.tokens, 0) <> c.n_tokens "
            "OR (p.lexemes IS NOT NULL AND (p.lo <> c.n_tokens OR p.hi <> c.n_tokens)))"
        },
        _postings,
        "keyword",
    ),
    Query(
        "keyword-index",
        {
            POSTGRES: "SELECT (SELECT value FROM counters WHERE name = 'chunks'), "
            "(SELECT value FROM counters WHERE name = 'tokens'), count(*), coalesce(sum(n_tokens), 0) FROM chunks"
        },
        _totals,
        "counters",
    ),
    # -- vectors
    Query(
        "vectors",
        dict.fromkeys(BOTH, "SELECT COUNT(*) FROM chunks"),
        lambda found, info: (
            f"{found[0][0]} chunks but no embedder recorded" if info is None and found[0][0] else None
        ),
    ),
    Probe("finite-vectors", (SQLITE,)),
    Query(
        "vectors",
        {SQLITE: f"SELECT COUNT(*) {_UNEMBEDDED}"},
        _count("{} chunks have no vector from {info.name}"),  # KnowledgeBase.check embeds them again
        embedder=lambda info: (info.name,),
    ),
    Query(
        "vectors",
        {
            POSTGRES: "SELECT DISTINCT d.document_id, d.source FROM chunks c JOIN documents d "
            "ON d.document_id = c.document_id WHERE vector_dims(c.embedding) <> ? ORDER BY d.source"
        },
        _wrong_dimension,
        "drop",
        embedder=lambda info: (info.dim,),
    ),
    Query(
        "vectors",
        {POSTGRES: "SELECT count(*) FROM embeddings WHERE embedder = ? AND vector_dims(vector) <> ?"},
        _count("{} cached vectors are not of dimension {info.dim}"),
        "bad-vectors",
        embedder=lambda info: (info.name, info.dim),
    ),
    Query(
        "vectors",
        {POSTGRES: f"SELECT count(DISTINCT c.text_hash) {_UNEMBEDDED}"},
        _count("{} chunk texts have no cached {info.name} vector"),
        "cache",
        embedder=lambda info: (info.name,),
    ),
    Query(
        "orphan",
        dict.fromkeys(BOTH, _UNUSED_VECTORS),
        _count("{} vectors belong to no chunk"),
        "vectors",
        embedder=lambda info: (info.name,),
    ),
    Probe("matrix", (SQLITE,)),
    Probe("engines", (SQLITE,)),
    Query(
        "vector-index",
        {
            POSTGRES: "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
            "WHERE c.relname = 'chunks_embedding_hnsw' AND c.relnamespace = current_schema()::regnamespace"
        },
        _hnsw,
        "hnsw",
        embedder=lambda info: (),
    ),
    # -- documents
    Query(
        "span",
        _SPAN,
        lambda found, info: (
            f"chunks whose span does not resolve in the text of {len(found)} documents: {names(found)}"
            if found
            else None
        ),
        "drop",
    ),
    Query(
        "document",
        {SQLITE: _EMPTY, POSTGRES: _EMPTY + " ORDER BY d.source"},
        lambda found, info: f"{len(found)} documents have no chunks: {names(found)}" if found else None,
        "drop",
    ),
    Query(
        "orphan",
        dict.fromkeys(
            BOTH,
            "SELECT COUNT(*) FROM blobs b WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.content_hash = b.content_hash)",
        ),
        _count("{} original files belong to no document"),
        "blobs",
    ),
)

#: the repair steps in the order they run, each the SQL it runs per store (``?`` is the embedder's
#: name: a step that needs it is skipped while none is bound); "drop" removes documents (no SQL of
#: its own), and the store's own steps (``SqlStore.repair_derived``) come last
_RECACHE = (
    "INSERT INTO embeddings (text_hash, embedder, vector) SELECT DISTINCT ON (c.text_hash) "
    "c.text_hash, ?, c.embedding FROM chunks c WHERE vector_dims(c.embedding) = "
    "(SELECT value::int FROM meta WHERE key = 'embedder_dim') "
    "ORDER BY c.text_hash ON CONFLICT (text_hash, embedder) DO NOTHING"
)
REPAIRS: tuple[tuple[str, Mapping[str, Sequence[str]]], ...] = (
    ("reindex", {SQLITE: ["REINDEX"]}),
    (
        "orphans",
        {
            store: [
                f"DELETE FROM {table} WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.{{id}} = {table}.document_id)"
                for table in ("doc_tags", "doc_acl", "chunks", *(("postings",) if store == POSTGRES else ()))
            ]
            for store in BOTH
        },
    ),
    ("drop", {}),
    (
        "bad-vectors",
        {
            POSTGRES: [
                "DELETE FROM embeddings WHERE embedder = ? AND vector_dims(vector) <> "
                "(SELECT value::int FROM meta WHERE key = 'embedder_dim')",
                _RECACHE,
            ]
        },
    ),
    ("cache", {POSTGRES: [_RECACHE]}),
    (
        "vectors",
        dict.fromkeys(
            BOTH,
            (
                "DELETE FROM embeddings WHERE embedder = ? AND NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.text_hash = embeddings.text_hash)",
            ),
        ),
    ),
    (
        "blobs",
        dict.fromkeys(
            BOTH,
            (
                "DELETE FROM blobs WHERE NOT EXISTS "
                "(SELECT 1 FROM documents d WHERE d.content_hash = blobs.content_hash)",
            ),
        ),
    ),
)


def find(store: Checked, s: Session, info: EmbedderInfo | None) -> list[Found]:
    """Run every check of the table that concerns ``store``."""
    dialect = s.dialect
    found: list[Found] = []
    for check in CHECKS:
        if isinstance(check, Probe):
            if dialect.name in check.stores:
                found += store.check_probe(check.name, s, info, found)
            continue
        sql = check.sql.get(dialect.name)
        if sql is None or (check.embedder is not None and info is None):
            continue
        params = () if check.embedder is None or info is None else check.embedder(info)
        result = s.rows(sql.replace("{id}", dialect.document_id), params)
        detail = check.detail(result, info)
        if detail is None:
            continue
        step = check.repair
        if step == "drop":
            step = "drop:" + ",".join(str(r[0]) for r in result)
        found.append((Problem(check.kind, detail), step))
    return found


def repair(store: Checked, s: Session, steps: set[str], info: EmbedderInfo | None) -> None:
    """The SQL repair steps, documents dropped, then the store's own steps (``repair_derived``)."""
    dialect = s.dialect
    for step, sql in REPAIRS:
        if step == "drop":
            drop = {doc for st in steps if st.startswith("drop:") for doc in st[5:].split(",") if doc}
            if drop:
                remove_documents(s, sorted(drop))
            continue
        for statement in sql.get(dialect.name, ()) if step in steps else ():
            if "?" not in statement:
                s.execute(statement.replace("{id}", dialect.document_id))
            elif info is not None:
                s.execute(statement, (info.name,))
    store.repair_derived(s, steps, info)


def check_store(store: Checked, fix: bool = False) -> list[Problem]:
    """Consistency problems (none: an empty list); ``fix`` repairs what it can and reports each
    problem with ``repaired`` set when a step fixed it."""
    info = store.embedder_info()
    with store.reading(snapshot=True) as s:  # the counts and the rows they count agree
        found = find(store, s, info)
    if not fix or not found:
        return [p for p, _ in found]
    steps = {step for _, step in found if step is not None}
    with store.writing() as s:
        repair(store, s, steps, info)
    store.after_repair(steps, info)
    return [Problem(p.kind, p.detail, repaired=step is not None) for p, step in found]
