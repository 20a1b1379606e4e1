"""How each SQL store spells what the shared code asks: placeholders, ``IN`` vs ``ANY``, id columns,
JSON fields, vectors, the tables a document owns; and a ``Session``, one connection in a read or
write context that runs the shared SQL.

Shared SQL is written once, with ``?`` placeholders (``Dialect.sql`` turns them into psycopg's
``%s``), so it must hold no ``?`` of its own (none of the SQL operators used has one).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citeline.index.base import Vector


@dataclass(frozen=True)
class Dialect:
    name: str
    #: the driver's parameter marker: sqlite3 ``?``, psycopg ``%s``
    placeholder: str
    #: the id columns of documents, chunks and traces ("id" in SQLite; distinct names in PostgreSQL
    #: so that Citus can tell the distribution columns apart)
    document_id: str
    chunk_id: str
    trace_id: str
    #: a list of values is one array parameter (``= ANY(?)``) rather than one per value (``IN``)
    any_array: bool
    #: ids per ``IN`` list or ``ANY`` array
    batch: int
    #: ``LIMIT`` without a limit (SQLite refuses NULL, PostgreSQL refuses -1)
    no_limit: int | None
    #: what orders text byte by byte (SQLite's default; a PostgreSQL column has a locale)
    bytewise_collation: str
    #: JSON members of a column: their text; the member only when it is a string (SQLite gives it
    #: as it is, and the caller keeps strings only: StoredFile.from_row); whether it is there
    json_text_sql: str
    json_string_sql: str
    json_has_sql: str
    #: vectors are float32 bytes in a BLOB (else pgvector's type, given as an array)
    vectors_as_bytes: bool
    #: a chunk's token count for BM25's totals, as a column expression ("0" where none is kept)
    chunk_tokens: str
    #: tables besides doc_tags and doc_acl that hold rows of a document (keyed by document_id)
    derived_tables: tuple[str, ...]

    def sql(self, text: str) -> str:
        """Shared SQL (``?`` placeholders) in this driver's form."""
        if self.placeholder == "?":
            return text
        return text.replace("%", "%%").replace("?", self.placeholder)

    def in_list(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (at most ``batch`` of them: see ``batches``)."""
        if self.any_array:
            return f"{column} = ANY(?)", [list(values)]
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def batches(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        for lo in range(0, len(values), self.batch):
            yield values[lo : lo + self.batch]

    def bytewise(self, column: str) -> str:
        return column + self.bytewise_collation

    def json_text(self, column: str, key: str) -> str:
        return self.json_text_sql.format(column=column, key=key)

    def json_string(self, column: str, key: str) -> str:
        return self.json_string_sql.format(column=column, key=key)

    def json_has(self, column: str, key: str) -> str:
        return self.json_has_sql.format(column=column, key=key)

    def vector_param(self, vector: Vector) -> Any:
        """A vector as the driver stores it."""
        array = np.asarray(vector, dtype=np.float32)
        return array.tobytes() if self.vectors_as_bytes else array

    def vector_value(self, value: Any) -> Vector:
        """A vector as read back (a BLOB, pgvector's Vector or an array) as float32 numpy."""
        if self.vectors_as_bytes:
            return np.frombuffer(value, dtype=np.float32)
        if hasattr(value, "to_numpy"):
            value = value.to_numpy()
        return np.asarray(value, dtype=np.float32)


SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    document_id="id",
    chunk_id="id",
    trace_id="id",
    any_array=False,
    batch=500,
    no_limit=-1,
    bytewise_collation="",
    json_text_sql="json_extract({column}, '$.{key}')",
    json_string_sql="json_extract({column}, '$.{key}')",
    json_has_sql="json_type({column}, '$.{key}') IS NOT NULL",
    vectors_as_bytes=True,
    chunk_tokens="0",
    derived_tables=(),
)
POSTGRES = Dialect(
    name="postgresql",
    placeholder="%s",
    document_id="document_id",
    chunk_id="chunk_id",
    trace_id="trace_id",
    any_array=True,
    batch=1000,
    no_limit=None,
    bytewise_collation=' COLLATE "C"',
    json_text_sql="{column}->>'{key}'",
    json_string_sql="CASE WHEN json_typeof({column}->'{key}') = 'string' THEN {column}->>'{key}' END",
    json_has_sql="({column}->'{key}') IS NOT NULL",
    vectors_as_bytes=False,
    chunk_tokens="n_tokens",
    derived_tables=("postings",),
)


class Session:
    """One connection inside a store's read or write context, running shared SQL."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self.conn = conn
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The driver's cursor (``fetchall``, ``fetchone``, ``rowcount``)."""
        return self.conn.execute(self.dialect.sql(sql), tuple(params))

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self.execute(sql, params).fetchall())

    def value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first column of the first row (None for no row)."""
        row = self.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """One statement for each of ``rows`` (nothing for none)."""
        rows = list(rows)
        if rows:
            self.conn.cursor().executemany(self.dialect.sql(sql), rows)


def insert_sql(table: str, columns: Sequence[str], conflict: str = "") -> str:
    """``INSERT INTO table (columns) VALUES (?, ...)``, then ``conflict`` (an ON CONFLICT clause)."""
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}){' ' + conflict if conflict else ''}"


def upsert_sql(table: str, key: str, columns: Sequence[str]) -> str:
    """Insert, or on the key's conflict set ``columns`` to the new values (both stores' syntax)."""
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns)
    return insert_sql(table, [key, *columns], f"ON CONFLICT ({key}) DO UPDATE SET {updates}")
