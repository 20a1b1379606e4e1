"""The PostgreSQL store's search: BM25 over a GIN-indexed tsvector and cosine over pgvector, both
filtered in SQL before ranking. A mixin of PostgresStore (store.py).

Keyword side: chunks are tokenised exactly as FTS5 does (text.py) into a tsvector (GIN:
matching, phrases, filtered term counts) and postings (lexeme, chunk, frequency, chunk length;
a covering index per lexeme). A search reads the postings of the query's single lexemes and the
tsvector positions of rows holding a multi-token phrase (compound identifiers), filtered in SQL
by the documents the Filter lets through, and scores each candidate with FTS5's bm25(): N, the
average length (counters kept by every write) and each phrase's document frequency (counted from
the postings or the GIN index, cached per index generation) over the whole table, as FTS5 does.
For a principal who is not an admin, the three come from the chunks it may read only (its
"slice", as the embedded store's slice scorer): a document it may not read changes no score or
rank it sees. Ties go to the older row (``seq``), as SQLite's rowid.

Dense side: exact cosine over the allowed rows when they are few (at most ``pg_exact_scan_rows``,
or, before pgvector 0.8, at most ``pg_exact_scan_fraction`` of the chunks: measured in
benchmarks/results/bench_pg.md, a post-filtered HNSW list comes back short and with poor recall
below half), else the HNSW index with ``hnsw.ef_search`` raised so that the post-filtered
candidate list still holds k rows (with 0.8's iterative scans the index keeps going); an index
scan that still returns fewer than k rows is redone exactly.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.filters import Filter
from citeline.index.base import Vector
from citeline.index.postgres.connection import PostgresConnections
from citeline.index.postgres.schema import of_dimension
from citeline.index.postgres.text import KeywordQuery
from citeline.index.sql.dialect import POSTGRES
from citeline.index.sql.filters import filter_sql
from citeline.index.sql.fts5 import K1, B, idf, term_weight
from citeline.index.sql.store import SqlStore
from citeline.index.sql.writes import PENDING_KEY
from citeline.text.terms import keyword_phrases

if TYPE_CHECKING:
    from citeline.query.analysis import Query


def _bm25_sql(keyword: KeywordQuery, chunk_cond: str, posting_cond: str) -> str:
    """FTS5's bm25() over the rows holding any phrase: single lexemes from the postings (an
    index-only scan per lexeme), phrases from the matching rows' tsvector positions (GIN). The
    sum runs over the phrases in query order with FTS5's arithmetic, so scores, and so ties, are
    the embedded store's."""
    singles = [i for i, p in enumerate(keyword.phrases) if len(p) == 1]
    multi = [i for i, p in enumerate(keyword.phrases) if len(p) > 1]
    parts, columns = [], []
    if singles:
        tfs = ", ".join(f"max(p.tf) FILTER (WHERE p.lexeme = %(l{i}_0)s) AS tf{i}" for i in singles)
        parts.append(
            f"single AS (SELECT p.seq, min(p.document_id) AS document_id, min(p.n_tokens) AS n_tokens, {tfs} "
            f"FROM postings p WHERE p.lexeme = ANY(%(singles)s) {'AND ' + posting_cond if posting_cond else ''} "
            "GROUP BY p.seq)"
        )
    if multi:
        counts = []
        for i in multi:
            follows = " AND ".join(
                f"EXISTS (SELECT 1 FROM unnest(c.tsv) b WHERE b.lexeme = %(l{i}_{j})s AND p + {j} = ANY(b.positions))"
                for j in range(1, len(keyword.phrases[i]))
            )
            counts.append(
                f"(CASE WHEN c.tsv @@ %(q{i})s::tsquery THEN (SELECT count(*) FROM unnest(c.tsv) a, "
                f"unnest(a.positions) p WHERE a.lexeme = %(l{i}_0)s AND {follows}) END) AS tf{i}"
            )
        parts.append(
            f"multi AS (SELECT c.seq, c.document_id, c.n_tokens, {', '.join(counts)} FROM chunks c "
            f"WHERE c.tsv @@ %(multi)s::tsquery {'AND ' + chunk_cond if chunk_cond else ''})"
        )
    if singles and multi:
        source = "single s FULL JOIN multi m ON m.seq = s.seq"
        key = ["coalesce(s.seq, m.seq) AS seq", "coalesce(s.document_id, m.document_id) AS document_id"]
        key.append("coalesce(s.n_tokens, m.n_tokens) AS n_tokens")
    else:
        source = "single s" if singles else "multi m"
        key = [f"{source[-1]}.seq", f"{source[-1]}.document_id", f"{source[-1]}.n_tokens"]
    for i in range(len(keyword.phrases)):
        columns.append(f"coalesce({'s' if i in singles else 'm'}.tf{i}, 0)::float8 AS tf{i}")
    parts.append(f"cand AS (SELECT {', '.join(key + columns)} FROM {source})")
    terms = " + ".join(
        f"%(idf{i})s * ((tf{i} * %(k1p1)s) / (tf{i} + %(k1)s * (1 - %(b)s + %(b)s * n_tokens / %(avgdl)s)))"
        for i in range(len(keyword.phrases))
    )
    parts.append(
        f"top AS (SELECT seq, document_id, 0.0::float8 + {terms} AS score FROM cand "
        "ORDER BY score DESC, seq LIMIT %(k)s)"
    )
    return (
        f"WITH {', '.join(parts)} SELECT c.chunk_id, top.score FROM top "
        "JOIN chunks c ON c.document_id = top.document_id AND c.seq = top.seq ORDER BY top.score DESC, top.seq"
    )


class PostgresSearch(PostgresConnections, SqlStore):
    exact_scan_rows: int
    exact_scan_fraction: float
    ef_search: int
    iterative_scan: bool
    #: redo an HNSW search exactly when the filter left fewer than k rows (off only to measure)
    hnsw_fallback: bool = True
    _df_cache: OrderedDict[tuple[int, tuple[str, ...]], int]
    _df_lock: threading.Lock

    def _filter(self, flt: Filter, column: str = "c.document_id") -> tuple[str, list[Any]]:
        cond, params = filter_sql(flt, column, POSTGRES)
        return POSTGRES.sql(cond), params

    def _dim(self) -> int:
        return int(self.meta("embedder_dim") or 0)

    @staticmethod
    def _totals(conn: Any) -> dict[str, int]:
        return {str(k): int(v) for k, v in conn.execute("SELECT name, value FROM counters").fetchall()}

    def _document_frequencies(
        self, conn: Any, generation: int, phrases: Sequence[tuple[str, ...]]
    ) -> list[int]:
        """Rows holding each phrase, over the whole table (GIN), cached per generation."""
        keys = [(generation, p) for p in phrases]
        with self._df_lock:
            known = {key: self._df_cache[key] for key in keys if key in self._df_cache}
        missing = list(dict.fromkeys(key for key in keys if key not in known))
        if missing:
            lexemes = sorted({p[0] for _, p in missing if len(p) == 1})
            counted_rows: dict[tuple[str, ...], int] = {}
            if lexemes:
                rows = conn.execute(
                    "SELECT lexeme, count(*) FROM postings WHERE lexeme = ANY(%s) GROUP BY lexeme", (lexemes,)
                ).fetchall()
                counted_rows = {(str(lex),): int(n) for lex, n in rows}
            phrases = [p for _, p in missing if len(p) > 1]
            if phrases:
                selects = ", ".join("(SELECT count(*) FROM chunks WHERE tsv @@ %s::tsquery)" for _ in phrases)
                row = conn.execute(
                    f"SELECT {selects}", [KeywordQuery.phrase_tsquery(p) for p in phrases]
                ).fetchone()
                counted_rows.update(zip(phrases, (int(v) for v in row), strict=True))
            row = [counted_rows.get(p, 0) for _, p in missing]
            counted = dict(zip(missing, (int(v) for v in row), strict=True))
            known.update(counted)
            with self._df_lock:
                self._df_cache.update(counted)
                while len(self._df_cache) > 50_000:
                    self._df_cache.popitem(last=False)
        return [known[key] for key in keys]

    def keyword_search(self, query: Query | str, flt: Filter, k: int) -> list[tuple[str, float]]:
        keyword = KeywordQuery.of(keyword_phrases(query))
        if keyword.is_empty or k <= 0:
            return []
        with self._snapshot() as conn:
            built = self._bm25(conn, keyword, flt, k)
            if built is None:
                return []
            result = conn.execute(*built).fetchall()
        return [(str(r[0]), float(r[1])) for r in result]

    def _bm25(
        self, conn: Any, keyword: KeywordQuery, flt: Filter, k: int
    ) -> tuple[str, dict[str, Any]] | None:
        """The BM25 statement and its parameters (None on an empty index)."""
        totals = self._totals(conn)
        rows, tokens = totals.get("chunks", 0), totals.get("tokens", 0)
        if rows <= 0:
            return None
        if flt.principal.admin:
            dfs = self._document_frequencies(conn, totals.get("generation", 0), keyword.phrases)
        else:
            rows, tokens, dfs = self._slice_statistics(conn, keyword, flt)
            if rows <= 0:
                return None
        named: dict[str, Any] = {
            "singles": sorted({p[0] for p in keyword.phrases if len(p) == 1}),
            "multi": " | ".join(KeywordQuery.phrase_tsquery(p) for p in keyword.phrases if len(p) > 1),
            "k1": K1,
            "k1p1": K1 + 1.0,
            "b": B,
            "avgdl": tokens / rows,
            "k": k,
        }
        for i, (phrase, df) in enumerate(zip(keyword.phrases, dfs, strict=True)):
            named[f"idf{i}"] = idf(rows, df)
            named[f"q{i}"] = KeywordQuery.phrase_tsquery(phrase)
            named.update({f"l{i}_{j}": lexeme for j, lexeme in enumerate(phrase)})
        cond, params = self._filter(flt, "DOC")
        for i, value in enumerate(params):  # the filter's positional parameters become named ones
            named[f"f{i}"] = value
            cond = cond.replace("%s", f"%(f{i})s", 1)
        chunk_cond, posting_cond = (
            cond.replace("DOC", "c.document_id", 1),
            cond.replace("DOC", "p.document_id", 1),
        )
        return _bm25_sql(keyword, chunk_cond, posting_cond), named

    def _slice_statistics(self, conn: Any, keyword: KeywordQuery, flt: Filter) -> tuple[int, int, list[int]]:
        """(rows, tokens, document frequency of each phrase) over the chunks ``flt.principal``
        may read, whatever else ``flt`` narrows (that narrows the ranking, not the statistics)."""
        reader = Filter(principal=flt.principal)
        cond, params = self._filter(reader)
        where = f"WHERE {cond}" if cond else ""
        row = conn.execute(
            f"SELECT count(*), coalesce(sum(c.n_tokens), 0) FROM chunks c {where}", params
        ).fetchone()
        rows, tokens = int(row[0]), int(row[1])
        if rows <= 0:
            return 0, 0, [0] * len(keyword.phrases)
        counted: dict[tuple[str, ...], int] = {}
        lexemes = sorted({p[0] for p in keyword.phrases if len(p) == 1})
        if lexemes:
            posting_cond, posting_params = self._filter(reader, "p.document_id")
            found = conn.execute(
                "SELECT lexeme, count(*) FROM postings p WHERE lexeme = ANY(%s) "
                f"{'AND ' + posting_cond if posting_cond else ''} GROUP BY lexeme",
                [lexemes, *posting_params],
            ).fetchall()
            counted.update({(str(lex),): int(n) for lex, n in found})
        phrases = list(dict.fromkeys(p for p in keyword.phrases if len(p) > 1))
        if phrases:
            extra = f"AND {cond}" if cond else ""
            selects = ", ".join(
                f"(SELECT count(*) FROM chunks c WHERE c.tsv @@ %s::tsquery {extra})" for _ in phrases
            )
            flat: list[Any] = []
            for phrase in phrases:
                flat += [KeywordQuery.phrase_tsquery(phrase), *params]
            values = conn.execute(f"SELECT {selects}", flat).fetchone()
            counted.update(zip(phrases, (int(v) for v in values), strict=True))
        return rows, tokens, [counted.get(p, 0) for p in keyword.phrases]

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        dim = self._dim()
        if k <= 0 or dim == 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        cond, params = self._filter(flt)
        with self._snapshot() as conn:
            total = self._totals(conn).get("chunks", 0)
            allowed = total
            if cond:
                allowed = int(
                    conn.execute(f"SELECT count(*) FROM chunks c WHERE {cond}", params).fetchone()[0]
                )
            if allowed == 0:
                return []
            # pgvector < 0.8 filters after the index scan: below this share it comes back short
            # (benchmarks/results/bench_pg.md), so scan exactly; 0.8's iterative scans do not need it.
            share = 0.0 if self.iterative_scan else self.exact_scan_fraction
            exact = allowed <= max(self.exact_scan_rows, k) or allowed <= share * total
            where = f"WHERE {cond}" if cond else ""
            rows: list[Any] = []
            if not exact:
                # Enough candidates that ~k survive the filter, within pgvector's limit of 1000.
                ef = min(1000, max(self.ef_search, k, math.ceil(2 * k * total / allowed)))
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                expr = f"(c.embedding::vector({dim})) <=> %s::vector({dim})"
                indexed = of_dimension(dim, "c.embedding")  # the partial index's predicate (schema.py)
                if not cond or self.iterative_scan:
                    if self.iterative_scan:  # pgvector >= 0.8 keeps scanning until k rows pass
                        conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)")
                    rows = conn.execute(
                        f"SELECT c.chunk_id, {expr} AS d FROM chunks c WHERE {indexed} "
                        f"{'AND ' + cond if cond else ''} ORDER BY {expr} LIMIT %s",
                        [query, *params, query, k],
                    ).fetchall()
                else:  # the index's ef nearest, then the filter (what pgvector < 0.8 does anyway)
                    outer, outer_params = self._filter(flt, "x.document_id")
                    rows = conn.execute(
                        f"SELECT x.chunk_id, x.d FROM (SELECT c.chunk_id, c.document_id, {expr} AS d "
                        f"FROM chunks c WHERE {indexed} ORDER BY {expr} LIMIT %s) x WHERE {outer} "
                        "ORDER BY x.d LIMIT %s",
                        [query, query, ef, *outer_params, k],
                    ).fetchall()
            if exact or (self.hnsw_fallback and len(rows) < min(k, allowed)):
                # No cast: the HNSW index (on the cast expression) cannot serve this ordering.
                rows = conn.execute(
                    "SELECT chunk_id, d FROM (SELECT c.chunk_id, c.seq, c.embedding <=> %s AS d "
                    f"FROM chunks c {where}) x WHERE d IS NOT NULL ORDER BY d, seq LIMIT %s",
                    [query, *params, k],
                ).fetchall()
        # a pending chunk (progressive indexing) has no vector here: the HNSW index leaves it out
        return [(str(r[0]), float(1.0 - r[1])) for r in rows if r[1] is not None]

    def pending_vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        """Exact, over the pending chunks only (no vector of the index's embedder: NULL here)."""
        fast = self.meta(PENDING_KEY)
        if fast is None or k <= 0:
            return []
        cond, params = self._filter(flt)
        with self._snapshot() as conn:
            rows = conn.execute(
                "SELECT c.chunk_id, f.vector <=> %s AS d FROM chunks c JOIN embeddings f "
                "ON f.text_hash = c.text_hash AND f.embedder = %s "
                f"WHERE c.embedding IS NULL {'AND ' + cond if cond else ''} ORDER BY d, c.seq LIMIT %s",
                [np.asarray(vector, dtype=np.float32), fast, *params, k],
            ).fetchall()
        return [(str(r[0]), float(1.0 - r[1])) for r in rows]

    def term_weights(self, terms: Sequence[str], flt: Filter) -> dict[str, float]:
        """IDF of each term over the chunks ``flt`` lets through, as BM25 computes it."""
        n = self.count_chunks(flt)
        cond, params = self._filter(flt)
        queries = [KeywordQuery.of(keyword_phrases(term)) for term in terms]
        counted = [i for i, q in enumerate(queries) if not q.is_empty]
        dfs = [0] * len(queries)
        if counted:
            selects = ", ".join(
                f"(SELECT count(*) FROM chunks c WHERE c.tsv @@ %s::tsquery {'AND ' + cond if cond else ''})"
                for _ in counted
            )
            flat: list[Any] = []
            for i in counted:
                flat += [queries[i].tsquery(), *params]
            with self._read() as conn:
                row = conn.execute(f"SELECT {selects}", flat).fetchone()
            for i, value in zip(counted, row, strict=True):
                dfs[i] = int(value)
        return {term: term_weight(n, df) for term, df in zip(terms, dfs, strict=True)}

    def count_chunks(self, flt: Filter) -> int:
        cond, params = self._filter(flt)
        with self._read() as conn:
            if not cond:
                return self._totals(conn).get("chunks", 0)
            return int(conn.execute(f"SELECT count(*) FROM chunks c WHERE {cond}", params).fetchone()[0])
