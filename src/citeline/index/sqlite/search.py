"""The embedded store's search: FTS5 BM25 and exact cosine over an in-memory matrix, both pre-filtered.

A mixin of SqliteStore (store.py). The matrix is derived from the vectors in SQLite and
rebuilt when the index's generation counter moves (any write bumps it).

BM25 for a principal who is not an admin is computed over the chunks it may read only (its
"slice"): FTS5's own ``bm25()`` takes the number of rows, the average length and each term's
document frequency from the whole table, so a document the principal may not read would change
the scores and the order of what it does see (and tell it, by probing, which words that document
holds). The slice scorer uses FTS5's formula and FTS5's own tokens and lengths (the ``fts5vocab``
instance table and the ``docsize`` table): over a slice that is the whole index it gives the same
scores as ``bm25()``.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from citeline.filters import Filter
from citeline.index.base import Vector
from citeline.index.sql.dialect import SQLITE
from citeline.index.sql.filters import filter_sql
from citeline.index.sql.fts5 import K1, B, idf, term_weight, tokenizer
from citeline.index.sql.store import SqlStore
from citeline.index.sql.writes import PENDING_KEY
from citeline.index.sqlite import dense
from citeline.index.sqlite.changelog import log_position
from citeline.index.sqlite.connections import SqliteConnections
from citeline.index.sqlite.dense import DenseMatrix
from citeline.index.sqlite.engines import Engines, EngineState
from citeline.index.sqlite.schema import snapshot
from citeline.text.terms import fts_match_expression, fts_quote, keyword_phrases

log = logging.getLogger(__name__)
_VOCAB = "temp.citeline_fts_instances"


def _varint(blob: bytes) -> int:
    """The first SQLite varint of ``blob`` (an FTS5 docsize record: the row's token count)."""
    value = 0
    for i, byte in enumerate(blob[:9]):
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            break
    return value


def _locate(
    known: npt.NDArray[np.int64], rowids: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """Where each rowid is in the sorted array ``known``, and whether it is there at all."""
    if len(known) == 0:
        return np.zeros(len(rowids), dtype=np.intp), np.zeros(len(rowids), dtype=bool)
    at = np.searchsorted(known, rowids)
    clipped = np.minimum(at, len(known) - 1)
    return clipped, known[clipped] == rowids


if TYPE_CHECKING:
    from citeline.query.analysis import Query


class SqliteSearch(SqliteConnections, SqlStore):
    _lock: threading.RLock
    _dense: DenseMatrix | None
    _dense_generation: int
    _engines: Engines
    folder: Path
    location: str
    read_only: bool
    #: (generation, the pending chunks' fast vectors): progressive indexing
    _pending: tuple[int, DenseMatrix] | None = None
    #: (generation, rowids sorted, FTS token count of each): the lengths BM25 needs
    _lengths: tuple[int, npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None

    def _dense_matrix(self) -> DenseMatrix:
        with self._lock, snapshot(self.conn):  # the key and the rows it names agree
            generation = int(self.meta("generation") or 0)
            if self._dense is None or generation != self._dense_generation:
                self._dense = self._read_dense(generation)
                self._dense_generation = generation
            return self._dense

    def _read_dense(self, generation: int) -> DenseMatrix:
        """The matrix saved by the last process that read this generation, else from SQLite
        (then saved for the next one; index/sqlite/dense.py)."""
        name = self.meta("embedder")
        dim = int(self.meta("embedder_dim") or 0)
        count, top = self.conn.execute("SELECT COUNT(*), MAX(rowid) FROM chunks").fetchone()
        key = f"{generation}:{name}:{dim}:{count}:{top}:{log_position(self.conn)}"
        saved = self.folder / dense.SAVED_NAME
        found = dense.load_saved(saved, key)
        if found is not None:
            return found
        rows = self.conn.execute(
            "SELECT c.rowid, e.vector FROM chunks c JOIN embeddings e "
            "ON e.text_hash = c.text_hash AND e.embedder = ? ORDER BY c.rowid",
            (name,),
        ).fetchall()
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
        found = DenseMatrix(rowids, matrix)
        if not self.read_only:
            dense.save(saved, key, found)
        return found

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

    def _engine_tag(self) -> str:
        """The embedder the vector engine was built with (rebuilt when it changes)."""
        return f"{self.meta('embedder')}@{self.meta('embedder_version') or ''}@{self.meta('embedder_dim')}"

    def _engine_state(self) -> EngineState | None:
        """The derived engines' state when they serve this index (index/sqlite/engines.py), else None:
        FTS5 and the matrix do. An engine that cannot be read or brought up to date is logged and
        left out (SQLite answers)."""
        meta = dict(
            self.conn.execute(
                "SELECT key, value FROM meta WHERE key IN "
                "('generation', 'embedder', 'embedder_version', 'embedder_dim')"
            ).fetchall()
        )
        generation, name = int(meta.get("generation") or 0), meta.get("embedder")
        if name is None or not self._engines.wanted(self.conn, generation):
            return None
        dim = int(meta.get("embedder_dim") or 0)
        tag = f"{name}@{meta.get('embedder_version') or ''}@{dim}"
        try:
            keyword, vector = self._engines.catch_up(self.conn, name, dim, tag)
        except Exception as exc:  # a damaged engine file: whatever its library raises
            log.warning("%s: the derived engines are not usable (%s); searching SQLite", self.location, exc)
            return None
        return EngineState(generation, keyword, vector, name, dim)

    def keyword_search(self, query: Query | str, flt: Filter, k: int) -> list[tuple[str, float]]:
        expression = fts_match_expression(query)
        if expression is None or k <= 0:
            return []
        state = self._engine_state()
        if state is not None and state.keyword and flt.principal.admin:
            hits = self._engines.keyword_search(self.conn, keyword_phrases(query), flt, k, state.generation)
            return self._ids_for_rowids(hits)
        if not flt.principal.admin:
            with snapshot(self.conn):
                return self._slice_bm25(keyword_phrases(query), expression, flt, k)
        cond, params = filter_sql(flt, "c.document_id", SQLITE)
        sql = (
            "SELECT c.id, -bm25(chunks_fts) AS score FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? {'AND ' + cond if cond else ''} ORDER BY bm25(chunks_fts), c.rowid LIMIT ?"
        )
        return [(r[0], float(r[1])) for r in self.conn.execute(sql, [expression, *params, k])]

    # -- BM25 over the slice a principal may read ---------------------------------------------

    def _token_lengths(self, generation: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        with self._lock:
            if self._lengths is None or self._lengths[0] != generation:
                rows = self.conn.execute("SELECT id, sz FROM chunks_fts_docsize ORDER BY id").fetchall()
                rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                lengths = np.fromiter((_varint(r[1]) for r in rows), dtype=np.float64, count=len(rows))
                self._lengths = (generation, rowids, lengths)
            return self._lengths[1], self._lengths[2]

    def _lengths_of(self, rowids: npt.NDArray[np.int64], generation: int) -> npt.NDArray[np.float64]:
        """The FTS token count of each row (0 for a row FTS5 does not hold)."""
        known, lengths = self._token_lengths(generation)
        at, found = _locate(known, rowids)
        if not found.all():  # written by another connection since the lengths were read
            known, lengths = self._token_lengths(-1)
            at, found = _locate(known, rowids)
        out = np.zeros(len(rowids), dtype=np.float64)
        out[found] = lengths[at[found]]
        return out

    def _instances(self, token: str) -> list[tuple[int, int]]:
        """(rowid, token offset) of every occurrence of an indexed token."""
        if not getattr(self._local, "vocab", False):  # a temp table: one per connection
            self.conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, chunks_fts, instance)"
            )
            self._local.vocab = True
        return [
            (int(r[0]), int(r[1]))
            for r in self.conn.execute(f"SELECT doc, offset FROM {_VOCAB} WHERE term = ?", (token,))
        ]

    def _phrase_counts(self, tokens: tuple[str, ...], wanted: set[int]) -> Counter[int]:
        """How often the phrase occurs in each wanted row (FTS5 counts every start position)."""
        first = [(doc, off) for doc, off in self._instances(tokens[0]) if doc in wanted]
        if len(tokens) == 1:
            return Counter(doc for doc, _ in first)
        docs = {doc for doc, _ in first}
        later: list[dict[int, set[int]]] = []
        for token in tokens[1:]:
            positions: dict[int, set[int]] = defaultdict(set)
            for doc, off in self._instances(token):
                if doc in docs:
                    positions[doc].add(off)
            later.append(positions)
            docs &= set(positions)
        return Counter(
            doc
            for doc, off in first
            if doc in docs and all(off + j in later[j - 1][doc] for j in range(1, len(tokens)))
        )

    def _slice_bm25(
        self, phrases: Sequence[str], expression: str, flt: Filter, k: int
    ) -> list[tuple[str, float]]:
        """FTS5's BM25 with every statistic (rows, average length, document frequencies) taken
        over the chunks ``flt.principal`` may read; ranked within ``flt``."""
        generation = int(self.meta("generation") or 0)
        acl_cond, acl_params = filter_sql(Filter(principal=flt.principal), "c.document_id", SQLITE)
        slice_rowids = np.fromiter(
            (r[0] for r in self.conn.execute(f"SELECT c.rowid FROM chunks c WHERE {acl_cond}", acl_params)),
            dtype=np.int64,
        )
        n = len(slice_rowids)
        if n == 0:
            return []
        avgdl = max(float(self._lengths_of(np.sort(slice_rowids), generation).sum()) / n, 1e-9)
        cond, params = filter_sql(flt, "c.document_id", SQLITE)
        candidates = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT c.rowid FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                f"WHERE chunks_fts MATCH ? AND {cond}",
                [expression, *params],
            )
        ]
        if not candidates:
            return []
        position = {rowid: i for i, rowid in enumerate(candidates)}
        wanted = set(candidates)
        dl = self._lengths_of(np.asarray(candidates, dtype=np.int64), generation)
        norm = K1 * (1.0 - B + B * dl / avgdl)
        scores = np.zeros(len(candidates), dtype=np.float64)
        for phrase in phrases:
            tokens = tokenizer().phrase(phrase)
            if not tokens:
                continue
            hits = int(
                self.conn.execute(
                    "SELECT COUNT(*) FROM chunks_fts JOIN chunks c ON c.rowid = chunks_fts.rowid "
                    f"WHERE chunks_fts MATCH ? AND {acl_cond}",
                    [fts_quote(phrase), *acl_params],
                ).fetchone()[0]
            )
            weight = idf(n, min(hits, n))
            for rowid, freq in self._phrase_counts(tokens, wanted).items():
                i = position[rowid]
                scores[i] += weight * (freq * (K1 + 1.0)) / (freq + norm[i])
        order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i]))[:k]
        return self._ids_for_rowids([(candidates[i], float(scores[i])) for i in order])

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        state = self._engine_state()
        if state is not None and state.vector and k > 0:
            hits = self._engines.vector_search(self.conn, vector, flt, k, state)
            return self._ids_for_rowids(hits)
        dense = self._dense_matrix()
        allowed = self._allowed_rowids(flt)
        return self._ids_for_rowids(dense.search(np.asarray(vector, dtype=np.float32), k, allowed))

    def pending_vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        fast = self.meta(PENDING_KEY)
        if fast is None or k <= 0:
            return []
        pending = self._pending_matrix(fast)
        if len(pending) == 0:
            return []
        allowed = self._allowed_rowids(flt)
        return self._ids_for_rowids(pending.search(np.asarray(vector, dtype=np.float32), k, allowed))

    def _allowed_rowids(self, flt: Filter) -> np.ndarray | None:
        """The rowids of the chunks ``flt`` lets the asker read (None: every chunk)."""
        if flt.is_empty:
            return None
        cond, params = filter_sql(flt, "document_id", SQLITE)
        return np.fromiter(
            (r[0] for r in self.conn.execute(f"SELECT rowid FROM chunks WHERE {cond}", params)),
            dtype=np.int64,
        )

    def _pending_matrix(self, fast: str) -> DenseMatrix:
        """The fast vectors of the pending chunks, read again whenever the generation moves (a
        full vector added moves it). Kept in memory only: it shrinks to nothing as the pass runs."""
        with self._lock, snapshot(self.conn):
            generation = int(self.meta("generation") or 0)
            if self._pending is None or self._pending[0] != generation:
                rows = self.conn.execute(
                    "SELECT c.rowid, f.vector FROM chunks c JOIN embeddings f ON f.text_hash = c.text_hash "
                    "AND f.embedder = ? WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.text_hash = "
                    "c.text_hash AND e.embedder = (SELECT value FROM meta WHERE key = 'embedder')) "
                    "ORDER BY c.rowid",
                    (fast,),
                ).fetchall()
                dim = len(rows[0][1]) // 4 if rows else 0
                rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dim)
                self._pending = (generation, DenseMatrix(rowids, matrix))
            return self._pending[1]

    def term_weights(self, terms: Sequence[str], flt: Filter) -> dict[str, float]:
        """IDF of each term over chunks, as BM25 computes it: rare terms weigh more.

        Counted over the chunks ``flt`` lets through only, so documents a principal may not read
        do not change the weights (and so the relevance scores and refusals) that it sees.
        """
        with snapshot(self.conn):
            return self._term_weights(terms, flt)

    def _term_weights(self, terms: Sequence[str], flt: Filter) -> dict[str, float]:
        n = self.count_chunks(flt)
        cond, params = filter_sql(flt, "c.document_id", SQLITE)
        weights: dict[str, float] = {}
        state = self._engine_state() if terms and flt.principal.admin else None
        if state is not None and state.keyword:
            for term in terms:
                phrases = keyword_phrases(term)
                df = self._engines.term_count(self.conn, phrases, flt, state.generation) if phrases else 0
                weights[term] = term_weight(n, df)
            return weights
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
            weights[term] = term_weight(n, df)
        return weights
