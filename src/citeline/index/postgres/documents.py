"""The PostgreSQL store's document reads: documents, their text, pages, originals and chunks.
A mixin of PostgresStore (index/postgres.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from citeline.index.base import StoredFile
from citeline.index.postgres.search import PostgresSearch
from citeline.models import Chunk, Document
from citeline.retrieval.filters import Filter

DOC_COLUMNS = (
    "document_id, source, title, format, content_hash, size, mtime, page_count, metadata, added_at, "
    "updated_at, collection"
)


def _json_dict(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    return dict(value if isinstance(value, dict) else json.loads(value))


class PostgresDocuments(PostgresSearch):
    def _documents(self, conn: Any, rows: Sequence[tuple[Any, ...]]) -> list[Document]:
        ids = [r[0] for r in rows]
        tags: dict[str, dict[str, str]] = {i: {} for i in ids}
        acl: dict[str, list[str]] = {i: [] for i in ids}
        if ids:
            for doc_id, key, value in conn.execute(
                "SELECT document_id, key, value FROM doc_tags WHERE document_id = ANY(%s)", (ids,)
            ):
                tags[doc_id][key] = value
            for doc_id, entry in conn.execute(
                'SELECT document_id, entry FROM doc_acl WHERE document_id = ANY(%s) ORDER BY entry COLLATE "C"',
                (ids,),
            ):
                acl[doc_id].append(entry)
        return [
            Document(
                id=r[0],
                source=r[1],
                title=r[2],
                format=r[3],
                content_hash=r[4],
                size=r[5],
                mtime=r[6],
                page_count=r[7],
                tags=tags[r[0]],
                acl=tuple(acl[r[0]]),
                metadata=r[8] if isinstance(r[8], dict) else json.loads(r[8]),
                added_at=r[9],
                updated_at=r[10],
                collection=r[11],
            )
            for r in rows
        ]

    def _find(self, where: str, params: Sequence[Any]) -> Document | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE {where} LIMIT 1", params
            ).fetchone()
            return None if row is None else self._documents(conn, [row])[0]

    def get_document(self, document_id: str) -> Document | None:
        return self._find("document_id = %s", (document_id,))

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        ids = list(dict.fromkeys(document_ids))
        out: dict[str, Document] = {}
        with self._read() as conn:
            for lo in range(0, len(ids), 1000):
                rows = conn.execute(
                    f"SELECT {DOC_COLUMNS} FROM documents WHERE document_id = ANY(%s)", (ids[lo : lo + 1000],)
                ).fetchall()
                out.update((d.id, d) for d in self._documents(conn, rows))
        return out

    def stored_files(self, collection: str) -> list[StoredFile]:
        with self._read() as conn:  # one statement: tags and ACLs as of the same snapshot
            rows = conn.execute(
                "SELECT d.document_id, d.source, d.content_hash, d.size, d.mtime, d.updated_at, "
                "CASE WHEN json_typeof(d.metadata->'path') = 'string' THEN d.metadata->>'path' END, "
                "CASE WHEN json_typeof(d.metadata->'pipeline') = 'string' THEN d.metadata->>'pipeline' END, "
                "(d.metadata->'uploaded_by') IS NOT NULL, "
                "(SELECT json_object_agg(t.key, t.value) FROM doc_tags t WHERE t.document_id = d.document_id), "
                '(SELECT array_agg(a.entry ORDER BY a.entry COLLATE "C") FROM doc_acl a '
                "WHERE a.document_id = d.document_id) "
                "FROM documents d WHERE d.collection = %s",
                (collection,),
            ).fetchall()
        return [StoredFile.from_row(r[:9], _json_dict(r[9]), r[10] or ()) for r in rows]

    def write_mark(self) -> None:
        return None  # writers on other servers leave no cheap trace here: read again every time

    def find_document(self, source: str, collection: str | None = None) -> Document | None:
        scope, extra = ("AND collection = %s", [collection]) if collection is not None else ("", [])
        return self._find(f"source = %s {scope} ORDER BY collection", [source, *extra]) or self._find(
            f"metadata->>'path' = %s {scope}", [source, *extra]
        )

    def documents(self, flt: Filter, limit: int | None = None, offset: int = 0) -> list[Document]:
        cond, params = self._filter(flt, "document_id")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents {'WHERE ' + cond if cond else ''} "
                "ORDER BY collection, source LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
            return self._documents(conn, rows)

    def count_documents(self, flt: Filter) -> int:
        cond, params = self._filter(flt, "document_id")
        with self._read() as conn:
            row = conn.execute(
                f"SELECT count(*) FROM documents {'WHERE ' + cond if cond else ''}", params
            ).fetchone()
        return int(row[0])

    def document_text(self, document_id: str) -> str:
        value = self._one("SELECT text FROM documents WHERE document_id = %s", (document_id,))
        return "" if value is None else str(value)

    def page_starts(self, document_id: str) -> list[int]:
        value = self._one("SELECT page_starts FROM documents WHERE document_id = %s", (document_id,))
        return [] if value is None else list(value if isinstance(value, list) else json.loads(value))

    def original(self, document_id: str) -> bytes | None:
        content_hash = self._one("SELECT content_hash FROM documents WHERE document_id = %s", (document_id,))
        if content_hash is None:
            return None
        data = self._one("SELECT data FROM blobs WHERE content_hash = %s", (content_hash,))
        return None if data is None else bytes(data)

    def document_chunks(self, document_id: str) -> list[str]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT chunk_id FROM chunks WHERE document_id = %s ORDER BY ordinal", (document_id,)
            ).fetchall()
        return [r[0] for r in rows]

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]:
        ids = list(dict.fromkeys(chunk_ids))
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                'SELECT c.chunk_id, c.document_id, c.ordinal, c.start, c."end", c.page, c.page_end, c.heading, '
                'c.kind, c.index_text, c.token_count, substr(d.text, c.start + 1, c."end" - c.start) '
                "FROM chunks c JOIN documents d ON d.document_id = c.document_id WHERE c.chunk_id = ANY(%s)",
                (ids,),
            ).fetchall()
            doc_rows = conn.execute(
                f"SELECT {DOC_COLUMNS} FROM documents WHERE document_id = ANY(%s)",
                (list({r[1] for r in rows}),),
            ).fetchall()
            docs = {d.id: d for d in self._documents(conn, doc_rows)}
        out: dict[str, tuple[Chunk, Document]] = {}
        for r in rows:
            if r[1] not in docs:
                continue
            chunk = Chunk(
                id=r[0],
                document_id=r[1],
                ordinal=r[2],
                start=r[3],
                end=r[4],
                page=r[5],
                page_end=r[6],
                heading_trail=tuple(json.loads(r[7])),
                kind=r[8],
                index_text=r[9],
                token_count=r[10],
                text=r[11],
            )
            out[r[0]] = (chunk, docs[r[1]])
        return out
