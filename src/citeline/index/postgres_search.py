"""The PostgreSQL store's search: BM25 over a GIN-indexed tsvector and cosine over pgvector, both
filtered in SQL before ranking. A mixin of PostgresStore (index/postgres.py).

Keyword side: the candidates are the rows whose tsvector matches the query's tsquery (GIN) and
that the filter lets through; each is scored in SQL by FTS5's bm25() from its stored length and
the positions of the query's lexemes (phrases counted from consecutive positions), with N, the
average length (counters kept by every write) and each phrase's document frequency (counted by
the GIN index, cached per index generation) over the whole table, as FTS5 does. Ties go to the
older row (``seq``), as SQLite's rowid.

Dense side: exact cosine over the allowed rows when they are few (below ``pg_exact_scan_rows`` or
``pg_exact_scan_fraction`` of the chunks), else the HNSW index with ``hnsw.ef_search`` raised so
that the post-filtered candidate list still holds k rows (pgvector < 0.8 filters after the
index scan; with 0.8's iterative scans the index keeps going); an index scan that still returns
fewer than k rows is redone exactly.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from citeline.index.base import Vector
from citeline.index.postgres_records import PostgresRecords
from citeline.index.postgres_text import K1, B, KeywordQuery, idf
from citeline.index.sql_filter import filter_sql
from citeline.retrieval.bm25 import keyword_phrases
from citeline.retrieval.filters import Filter

if TYPE_CHECKING:
    from citeline.retrieval.query import Query

_BM25_SQL = """
WITH terms AS (
    SELECT * FROM unnest(%(t_phrase)s::int[], %(t_off)s::int[], %(t_lexeme)s::text[]) AS t(phrase, off, lexeme)
), phrases AS (
    SELECT * FROM unnest(%(p_phrase)s::int[], %(p_len)s::int[], %(p_idf)s::float8[]) AS p(phrase, len, idf)
), cand AS (
    SELECT c.seq, c.chunk_id, c.n_tokens, ts_filter(setweight(c.tsv, 'A', %(lexemes)s::text[]), '{a}') AS hits
    FROM chunks c WHERE c.tsv @@ %(tsquery)s::tsquery {filter}
), occ AS (
    SELECT cand.seq, t.phrase, pos - t.off AS start
    FROM cand CROSS JOIN LATERAL unnest(cand.hits) u
    JOIN terms t ON t.lexeme = u.lexeme CROSS JOIN LATERAL unnest(u.positions) pos
), freq AS (
    SELECT o.seq, o.phrase, count(*)::float8 AS tf FROM (
        SELECT o.seq, o.phrase, o.start FROM occ o JOIN phrases p ON p.phrase = o.phrase
        GROUP BY o.seq, o.phrase, o.start, p.len HAVING count(*) = p.len
    ) o GROUP BY o.seq, o.phrase
)
SELECT cand.chunk_id, sum(p.idf * (f.tf * %(k1p1)s) / (f.tf + %(k1)s * (1 - %(b)s + %(b)s * cand.n_tokens / %(avgdl)s))) AS score
FROM freq f JOIN phrases p ON p.phrase = f.phrase JOIN cand ON cand.seq = f.seq
GROUP BY cand.seq, cand.chunk_id ORDER BY score DESC, cand.seq LIMIT %(k)s
"""


class PostgresSearch(PostgresRecords):
    exact_scan_rows: int
    exact_scan_fraction: float
    ef_search: int
    iterative_scan: bool
    #: redo an HNSW search exactly when the filter left fewer than k rows (off only to measure)
    hnsw_fallback: bool = True
    _df_cache: OrderedDict[tuple[int, tuple[str, ...]], int]
    _df_lock: threading.Lock

    def _filter(self, flt: Filter, column: str = "c.document_id") -> tuple[str, list[Any]]:
        return filter_sql(flt, column, placeholder="%s", id_column="document_id")

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
            selects = ", ".join("(SELECT count(*) FROM chunks WHERE tsv @@ %s::tsquery)" for _ in missing)
            row = conn.execute(
                f"SELECT {selects}", [KeywordQuery.phrase_tsquery(p) for _, p in missing]
            ).fetchone()
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
        cond, params = self._filter(flt)
        with self._read() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            totals = self._totals(conn)
            rows, tokens = totals.get("chunks", 0), totals.get("tokens", 0)
            if rows <= 0:
                return []
            dfs = self._document_frequencies(conn, totals.get("generation", 0), keyword.phrases)
            named: dict[str, Any] = {
                "t_phrase": [i for i, p in enumerate(keyword.phrases) for _ in p],
                "t_off": [j for p in keyword.phrases for j in range(len(p))],
                "t_lexeme": [t for p in keyword.phrases for t in p],
                "p_phrase": list(range(len(keyword.phrases))),
                "p_len": [len(p) for p in keyword.phrases],
                "p_idf": [idf(rows, df) for df in dfs],
                "lexemes": keyword.lexemes(),
                "tsquery": keyword.tsquery(),
                "k1": K1,
                "k1p1": K1 + 1.0,
                "b": B,
                "avgdl": tokens / rows,
                "k": k,
            }
            # The filter's positional parameters become named ones.
            for i, value in enumerate(params):
                named[f"f{i}"] = value
                cond = cond.replace("%s", f"%(f{i})s", 1)
            sql = _BM25_SQL.replace("{filter}", f"AND {cond}" if cond else "")
            result = conn.execute(sql, named).fetchall()
        return [(str(r[0]), float(r[1])) for r in result]

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        dim = self._dim()
        if k <= 0 or dim == 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        cond, params = self._filter(flt)
        with self._read() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            total = self._totals(conn).get("chunks", 0)
            allowed = total
            if cond:
                allowed = int(
                    conn.execute(f"SELECT count(*) FROM chunks c WHERE {cond}", params).fetchone()[0]
                )
            if allowed == 0:
                return []
            exact = allowed <= max(self.exact_scan_rows, k) or allowed <= self.exact_scan_fraction * total
            where = f"WHERE {cond}" if cond else ""
            rows: list[Any] = []
            if not exact:
                # Enough candidates that ~k survive the filter, within pgvector's limit of 1000.
                ef = max(self.ef_search, k, math.ceil(2 * k * total / allowed))
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(ef, 1000)),))
                if self.iterative_scan:
                    conn.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true)")
                expr = f"(c.embedding::vector({dim}))"
                rows = conn.execute(
                    f"SELECT c.chunk_id, {expr} <=> %s::vector({dim}) AS d FROM chunks c {where} "
                    f"ORDER BY {expr} <=> %s::vector({dim}) LIMIT %s",
                    [query, *params, query, k],
                ).fetchall()
            if exact or (self.hnsw_fallback and len(rows) < min(k, allowed)):
                # No cast: the HNSW index (on the cast expression) cannot serve this ordering.
                rows = conn.execute(
                    "SELECT chunk_id, d FROM (SELECT c.chunk_id, c.seq, c.embedding <=> %s AS d "
                    f"FROM chunks c {where}) x ORDER BY d, seq LIMIT %s",
                    [query, *params, k],
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
        return {
            term: math.log(1.0 + (n - df + 0.5) / (df + 0.5)) for term, df in zip(terms, dfs, strict=True)
        }

    def count_chunks(self, flt: Filter) -> int:
        cond, params = self._filter(flt)
        with self._read() as conn:
            if not cond:
                return self._totals(conn).get("chunks", 0)
            return int(conn.execute(f"SELECT count(*) FROM chunks c WHERE {cond}", params).fetchone()[0])
