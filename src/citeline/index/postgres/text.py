"""The embedded store's tokens in PostgreSQL's full-text search: tsvectors and tsqueries.

PostgreSQL's own parser and snowball stemmer split and stem differently from SQLite FTS5's
``porter unicode61 remove_diacritics 2`` (hyphenated words, version numbers, stopwords, Porter vs
Porter2), so ``to_tsvector``/``websearch_to_tsquery`` would rank differently from the embedded
store. Instead the tokens are computed by SQLite's own tokenizer (index/sql/fts5.py: the exact
same code the embedded store runs) and stored as a tsvector of ready lexemes with their
positions, indexed by GIN, and as postings for BM25 (write.py). A query becomes a tsquery over
the same lexemes: each quoted unit of the keyword search (``keyword_phrases``) is a lexeme or a
``<->`` phrase, OR-ed, exactly as the embedded store's MATCH expression.

BM25 then follows FTS5's ``bm25()`` (index/sql/fts5.py; N, n and the average length over the
whole table, as FTS5 counts them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from citeline.index.sql.fts5 import tokenizer

#: tsvector limits: a position is at most 16383 and a lexeme keeps at most 256 positions
MAX_POSITION = 16383
MAX_POSITIONS = 256


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
