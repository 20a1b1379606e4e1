"""What the PostgreSQL store derives from the chunks it writes (index/sql/writes.py writes the
rest): each chunk's tsvector and token count (the embedded store's FTS5 tokens: text.py), its
own copy of its vector (what the HNSW index serves), and BM25's postings, one row per (chunk,
lexeme) with its frequency and the chunk's length. ``check --repair`` rebuilds the keyword side
from the chunks' indexed text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from citeline.index.postgres.text import tsvector_literal
from citeline.index.sql.dialect import POSTGRES
from citeline.index.sql.fts5 import tokenizer
from citeline.index.sql.rows import chunk_write_columns
from citeline.index.sql.writes import NewChunk

_COLUMNS = [*chunk_write_columns(POSTGRES), "n_tokens", "tsv", "embedding"]
_INSERT = (
    f"INSERT INTO chunks ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join(['%s'] * (len(_COLUMNS) - 2))}, %s::tsvector, %s)"
)
_BATCH = 2000  # chunks re-tokenised per statement when the keyword side is rebuilt


def _copy_postings(cur: Any, chunks: Iterable[tuple[str, int, Sequence[str]]]) -> None:
    """The postings of each (document id, seq, tokens)."""
    with cur.copy("COPY postings (document_id, lexeme, seq, tf, n_tokens) FROM STDIN") as copy:
        for document_id, seq, tokens in chunks:
            for lexeme, tf in Counter(tokens).items():
                copy.write_row((document_id, lexeme, seq, tf, len(tokens)))


def insert_chunks(conn: Any, chunks: Sequence[NewChunk], tokens: Sequence[Sequence[str]]) -> int:
    """Insert ``chunks`` with what they derive; ``tokens``: each chunk's FTS5 tokens, by its place
    in the batch (``NewChunk.at``). The tokens added."""
    cur = conn.cursor()
    if chunks:
        cur.executemany(
            _INSERT,
            [(*c.params, len(tokens[c.at]), tsvector_literal(tokens[c.at]), c.vector) for c in chunks],
        )
    documents = sorted({c.params[1] for c in chunks})
    seqs = dict(
        conn.execute("SELECT chunk_id, seq FROM chunks WHERE document_id = ANY(%s)", (documents,)).fetchall()
    )
    _copy_postings(cur, ((c.params[1], seqs[c.chunk.id], tokens[c.at]) for c in chunks))
    return sum(len(tokens[c.at]) for c in chunks)


def rebuild_keyword(conn: Any) -> None:
    """Every chunk's tsvector, length and postings again from its indexed text."""
    conn.execute("DELETE FROM postings")
    last = -1
    while True:
        rows = conn.execute(
            "SELECT document_id, seq, index_text FROM chunks WHERE seq > %s ORDER BY seq LIMIT %s",
            (last, _BATCH),
        ).fetchall()
        if not rows:
            return
        token_lists = tokenizer().tokenize([r[2] for r in rows])
        cur = conn.cursor()
        cur.executemany(
            "UPDATE chunks SET tsv = %s::tsvector, n_tokens = %s WHERE document_id = %s AND seq = %s",
            [(tsvector_literal(t), len(t), r[0], r[1]) for r, t in zip(rows, token_lists, strict=True)],
        )
        _copy_postings(cur, ((r[0], r[1], t) for r, t in zip(rows, token_lists, strict=True)))
        last = int(rows[-1][1])
