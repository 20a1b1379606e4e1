"""The embedded store's search: FTS5 BM25 and exact cosine over an in-memory matrix, both pre-filtered.

A mixin of SqliteStore (index/sqlite.py). The matrix is derived from the vectors in SQLite and
rebuilt when the index's generation counter moves (any write bumps it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from citeline.index.base import Vector
from citeline.index.dense import DenseMatrix
from citeline.index.sql_filter import filter_sql
from citeline.index.sqlite_records import SqliteRecords
from citeline.retrieval.bm25 import fts_match_expression
from citeline.retrieval.filters import Filter

if TYPE_CHECKING:
    from citeline.retrieval.query import Query


class SqliteSearch(SqliteRecords):
    _dense: DenseMatrix | None
    _dense_generation: int

    def _dense_matrix(self) -> DenseMatrix:
        generation = int(self.meta("generation") or 0)
        with self._lock:
            if self._dense is None or generation != self._dense_generation:
                name = self.meta("embedder")
                dim = int(self.meta("embedder_dim") or 0)
                rows = self.conn.execute(
                    "SELECT c.rowid, e.vector FROM chunks c JOIN embeddings e "
                    "ON e.text_hash = c.text_hash AND e.embedder = ? ORDER BY c.rowid",
                    (name,),
                ).fetchall()
                rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
                self._dense = DenseMatrix(rowids, matrix)
                self._dense_generation = generation
            return self._dense

    def _ids_for_rowids(self, hits: list[tuple[int, float]]) -> list[tuple[str, float]]:
        if not hits:
            return []
        rows = dict(
            self.conn.execute(
                f"SELECT rowid, id FROM chunks WHERE rowid IN ({','.join('?' * len(hits))})",
                [r for r, _ in hits],
            ).fetchall()
        )
        return [(rows[r], s) for r, s in hits if r in rows]

    def keyword_search(self, query: Query | str, flt: Filter, k: int) -> list[tuple[str, float]]:
        expression = fts_match_expression(query)
        if expression is None or k <= 0:
            return []
        cond, params = filter_sql(flt, "c.document_id")
        sql = (
            "SELECT c.id, -bm25(chunks_fts) AS score FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? {'AND ' + cond if cond else ''} ORDER BY bm25(chunks_fts), c.rowid LIMIT ?"
        )
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, [expression, *params, k])]

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        dense = self._dense_matrix()
        allowed = None
        if not flt.is_empty:
            cond, params = filter_sql(flt, "document_id")
            allowed = np.fromiter(
                (r[0] for r in self.conn.execute(f"SELECT rowid FROM chunks WHERE {cond}", params)),
                dtype=np.int64,
            )
        return self._ids_for_rowids(dense.search(np.asarray(vector, dtype=np.float32), k, allowed))

    def term_weights(self, terms: Sequence[str], flt: Filter) -> dict[str, float]:
        """IDF of each term over chunks, as BM25 computes it: rare terms weigh more.

        Counted over the chunks ``flt`` lets through only, so documents a principal may not read
        do not change the weights (and so the relevance scores and refusals) that it sees.
        """
        n = self.count_chunks(flt)
        cond, params = filter_sql(flt, "c.document_id")
        weights: dict[str, float] = {}
        for term in terms:
            expression = fts_match_expression(term)
            df = 0
            if expression is not None:
                df = int(
                    self.conn.execute(
                        "SELECT COUNT(*) FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                        f"WHERE chunks_fts MATCH ? {'AND ' + cond if cond else ''}",
                        (expression, *params),
                    ).fetchone()[0]
                )
            weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return weights

    def count_chunks(self, flt: Filter) -> int:
        cond, params = filter_sql(flt, "document_id")
        sql = f"SELECT COUNT(*) FROM chunks {'WHERE ' + cond if cond else ''}"
        return int(self.conn.execute(sql, params).fetchone()[0])
