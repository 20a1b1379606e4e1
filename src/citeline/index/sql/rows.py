"""Rows of the SQL stores and the values they hold: each table's columns, a row read back as a
Document, Chunk, ApiKey or TraceSummary, and a value as the parameters that write its row.

Both stores share the schema's shape (index/sqlite/schema.py, index/postgres/schema.py); only the
id columns' names differ (``Dialect``). JSON columns come back as text from SQLite and as Python
values from PostgreSQL's ``json`` type; the readers here take either.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from citeline.index.base import ApiKey
from citeline.index.sql.dialect import Dialect
from citeline.types import Chunk, Document

if TYPE_CHECKING:  # loaded by what reads traces: a search does not
    from citeline.trace import Trace, TraceSummary

Row = Sequence[Any]


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value


# -- documents ----------------------------------------------------------------------------------


def document_columns(d: Dialect, alias: str = "") -> str:
    """The columns ``document`` reads, in its order."""
    a = f"{alias}." if alias else ""
    names = (d.document_id, "source", "title", "format", "content_hash", "size", "mtime", "page_count")
    return ", ".join(a + n for n in (*names, "metadata", "added_at", "updated_at", "collection"))


def document(row: Row, tags: Mapping[str, str], acl: Sequence[str]) -> Document:
    return Document(
        id=row[0],
        source=row[1],
        title=row[2],
        format=row[3],
        content_hash=row[4],
        size=row[5],
        mtime=row[6],
        page_count=row[7],
        tags=dict(tags),
        acl=tuple(acl),
        metadata=_json(row[8]),
        added_at=row[9],
        updated_at=row[10],
        collection=row[11],
    )


def document_write_columns(d: Dialect) -> list[str]:
    return [
        d.document_id,
        "collection",
        "source",
        "title",
        "format",
        "content_hash",
        "size",
        "mtime",
        "page_count",
        "metadata",
        "text",
        "page_starts",
        "added_at",
        "updated_at",
    ]


def document_params(
    doc: Document, text: str, page_starts: Sequence[int], added_at: float, updated_at: float
) -> tuple[Any, ...]:
    """The values of ``document_write_columns``."""
    return (
        doc.id,
        doc.collection,
        doc.source,
        doc.title,
        doc.format,
        doc.content_hash,
        doc.size,
        doc.mtime,
        doc.page_count,
        json.dumps(doc.metadata),
        text,
        json.dumps(list(page_starts)),
        added_at,
        updated_at,
    )


def page_starts(value: Any) -> list[int]:
    return list(_json(value))


# -- chunks -------------------------------------------------------------------------------------


def chunk_columns(d: Dialect) -> str:
    """What ``chunk`` reads, from ``chunks c JOIN documents d`` (the text is cut from the document's)."""
    return (
        f'c.{d.chunk_id}, c.document_id, c.ordinal, c.start, c."end", c.page, c.page_end, c.heading, '
        'c.kind, c.index_text, c.token_count, substr(d.text, c.start + 1, c."end" - c.start)'
    )


def chunk(row: Row) -> Chunk:
    return Chunk(
        id=row[0],
        document_id=row[1],
        ordinal=row[2],
        start=row[3],
        end=row[4],
        page=row[5],
        page_end=row[6],
        heading_trail=tuple(json.loads(row[7])),
        kind=row[8],
        index_text=row[9],
        token_count=row[10],
        text=row[11],
    )


def chunk_write_columns(d: Dialect) -> list[str]:
    names = ["ordinal", "start", '"end"', "page", "page_end", "heading", "kind", "index_text"]
    return [d.chunk_id, "document_id", *names, "text_hash", "token_count"]


def chunk_params(c: Chunk, document_id: str, hashed: str) -> tuple[Any, ...]:
    """The values of ``chunk_write_columns`` (``hashed``: the index text's ``text_hash``)."""
    return (
        c.id,
        document_id,
        c.ordinal,
        c.start,
        c.end,
        c.page,
        c.page_end,
        json.dumps(list(c.heading_trail)),
        c.kind,
        c.index_text,
        hashed,
        c.token_count,
    )


# -- API keys and traces ------------------------------------------------------------------------

#: "user" is quoted: a reserved word in PostgreSQL (SQLite takes either)
API_KEY_COLUMNS = 'id, "user", key_hash, groups, role, created_at, revoked_at, label, meta'


def api_key(row: Row) -> ApiKey:
    return ApiKey(
        id=row[0],
        user=row[1],
        key_hash=row[2],
        groups=tuple(json.loads(row[3])),
        role=row[4],
        created_at=row[5],
        revoked_at=row[6],
        label=row[7],
        meta=json.loads(row[8]),
    )


def api_key_params(key: ApiKey) -> tuple[Any, ...]:
    """The values of ``API_KEY_COLUMNS`` (a key without a creation time is created now)."""
    return (
        key.id,
        key.user,
        key.key_hash,
        json.dumps(list(key.groups)),
        key.role,
        key.created_at or time.time(),
        key.revoked_at,
        key.label,
        json.dumps(dict(key.meta)),
    )


def trace_write_columns(d: Dialect) -> list[str]:
    return [d.trace_id, "created_at", "question", "refused", "support", "data", "owner"]


def trace_params(trace: Trace) -> tuple[Any, ...]:
    return (
        trace.id,
        trace.created_at or time.time(),
        trace.question,
        bool(trace.refused),
        trace.support,
        json.dumps(trace.to_json()),
        trace.owner,
    )


def trace_summary_columns(d: Dialect) -> str:
    return f"{d.trace_id}, created_at, question, refused, support, owner"


def trace_summary(row: Row) -> TraceSummary:
    from citeline.trace import TraceSummary

    return TraceSummary(row[0], row[1], row[2], bool(row[3]), row[4], row[5])


def trace(data: str, owner: str) -> Trace:
    from citeline.trace import Trace

    return Trace.from_json({**json.loads(data), "owner": owner})
