"""The embedded store's tokenisation and BM25, for PostgreSQL's full-text search.

PostgreSQL's own parser and snowball stemmer split and stem differently from SQLite FTS5's
``porter unicode61 remove_diacritics 2`` (hyphenated words, version numbers, stopwords, Porter vs
Porter2), so ``to_tsvector``/``websearch_to_tsquery`` would rank differently from the embedded
store. Instead the tokens are computed here by SQLite's own tokenizer (an in-memory FTS5 table
read through its ``fts5vocab`` 'instance' view: the exact same code the embedded store runs) and
stored as a tsvector of ready lexemes with their positions, indexed by GIN, and as postings for
BM25 (postgres_write.py). A query becomes a tsquery over the same lexemes: each quoted unit of the keyword search (``keyword_phrases``) is a
lexeme or a ``<->`` phrase, OR-ed, exactly as the embedded store's MATCH expression.

BM25 then follows FTS5's ``bm25()`` (k1 = 1.2, b = 0.75, IDF = ln((N - n + 0.5) / (n + 0.5)),
clamped to 1e-6; N, n and the average length over the whole table, as FTS5 counts them).
"""

from __future__ import annotations

import math
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: the embedded store's FTS5 tokenizer (index/schema.py)
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"
K1 = 1.2
B = 0.75
#: tsvector limits: a position is at most 16383 and a lexeme keeps at most 256 positions
MAX_POSITION = 16383
MAX_POSITIONS = 256


class Fts5Tokenizer:
    """Tokens exactly as the embedded store's FTS5 table sees them (thread-safe)."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS5_TOKENIZER}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()

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


_tokenizer: Fts5Tokenizer | None = None
_tokenizer_lock = threading.Lock()


def tokenizer() -> Fts5Tokenizer:
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            _tokenizer = Fts5Tokenizer()
        return _tokenizer


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector_literal(tokens: Sequence[str]) -> str:
    """A tsvector in its input form: each lexeme with its 1-based positions."""
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens, 1):
        seen = positions.setdefault(token, [])
        if len(seen) < MAX_POSITIONS:
            seen.append(min(i, MAX_POSITION))
    return " ".join(f"{_quote(t)}:{','.join(map(str, dict.fromkeys(p)))}" for t, p in positions.items())


@dataclass(frozen=True)
class KeywordQuery:
    """The phrases of one keyword search, tokenised: ``phrases[i]`` is a tuple of lexemes."""

    phrases: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, units: Sequence[str]) -> KeywordQuery:
        tokens = tokenizer().tokenize(list(units))
        return cls(tuple(tuple(t) for t in tokens if t))

    @property
    def is_empty(self) -> bool:
        return not self.phrases

    @staticmethod
    def phrase_tsquery(phrase: Sequence[str]) -> str:
        if len(phrase) == 1:
            return _quote(phrase[0])
        return "(" + " <-> ".join(_quote(t) for t in phrase) + ")"

    def tsquery(self) -> str:
        """Rows holding any phrase (the embedded store's ``"a" OR "b c"``)."""
        return " | ".join(self.phrase_tsquery(p) for p in self.phrases)

    def lexemes(self) -> list[str]:
        return sorted({t for p in self.phrases for t in p})


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: ln((N - n + 0.5) / (n + 0.5)), at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5)) if rows > 0 else 0.0
    return value if value > 0.0 else 1e-6


def as_array(value: Any) -> npt.NDArray[np.float32]:
    """A vector read from pgvector (its Vector type or an array) as float32 numpy."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)
