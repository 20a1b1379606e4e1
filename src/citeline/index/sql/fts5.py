"""SQLite FTS5's tokenizer and its BM25, the keyword scoring both stores follow.

The embedded store indexes chunks with FTS5; its slice scorer (index/sqlite/search.py) and the
PostgreSQL store (index/postgres/text.py), which cannot run FTS5, tokenize with the very same code:
an in-memory FTS5 table read through its ``fts5vocab`` 'instance' view. BM25 is FTS5's
``bm25()``: k1 = 1.2, b = 0.75, IDF = ln((N - n + 0.5) / (n + 0.5)) clamped to 1e-6.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence

#: chunks_fts's tokenizer (index/sqlite/schema.py)
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"
K1 = 1.2
B = 0.75
_CACHED_PHRASES = 4096


class Fts5Tokenizer:
    """Tokens exactly as the embedded store's FTS5 table sees them (thread-safe)."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS5_TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        self._phrases: dict[str, tuple[str, ...]] = {}

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """The tokens of each text, in order."""
        out: list[list[str]] = [[] for _ in texts]
        if not texts:
            return out
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                self._conn.executemany(
                    "INSERT INTO t(rowid, x) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)]
                )
                rows = self._conn.execute("SELECT doc, term FROM v ORDER BY doc, offset").fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        for doc, term in rows:
            out[doc - 1].append(term)
        return out

    def phrase(self, phrase: str) -> tuple[str, ...]:
        """The tokens of one query phrase (cached: queries repeat their phrases)."""
        found = self._phrases.get(phrase)
        if found is None:
            found = tuple(self.tokenize([phrase])[0])
            if len(self._phrases) > _CACHED_PHRASES:
                self._phrases.clear()
            self._phrases[phrase] = found
        return found


_tokenizer: Fts5Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def tokenizer() -> Fts5Tokenizer:
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            _tokenizer = Fts5Tokenizer()
        return _tokenizer


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF of a phrase in ``hits`` of ``rows`` rows: ln((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0.0 else 1e-6


def term_weight(rows: int, hits: int) -> float:
    """A query term's weight for relevance and refusal (``Store.term_weights``): BM25's IDF in its
    always-positive form, ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))
