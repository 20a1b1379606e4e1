"""Metadata and access filters as SQL conditions: applied inside every query, before ranking."""

from __future__ import annotations

from typing import Any

from citeline.retrieval.filters import Filter, Principal


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filter_sql(flt: Filter, doc_column: str) -> tuple[str, list[Any]]:
    """A SQL condition on ``doc_column`` (a document id) that enforces the filter; ("", []) if none."""
    if flt.is_empty:
        return "", []
    conds: list[str] = []
    params: list[Any] = []
    if flt.source_prefix is not None:
        conds.append("d.source LIKE ? ESCAPE '\\'")
        params.append(_like_escape(flt.source_prefix) + "%")
    if flt.formats:
        conds.append(f"d.format IN ({','.join('?' * len(flt.formats))})")
        params.extend(flt.formats)
    if flt.modified_after is not None:
        conds.append("d.mtime >= ?")
        params.append(flt.modified_after)
    if flt.modified_before is not None:
        conds.append("d.mtime < ?")
        params.append(flt.modified_before)
    for key, value in sorted(flt.tags.items()):
        conds.append(
            "EXISTS (SELECT 1 FROM doc_tags t WHERE t.document_id = d.id AND t.key = ? AND t.value = ?)"
        )
        params.extend([key, value])
    if flt.documents:
        conds.append(f"d.id IN ({','.join('?' * len(flt.documents))})")
        params.extend(flt.documents)
    if flt.collections:
        conds.append(f"d.collection IN ({','.join('?' * len(flt.collections))})")
        params.extend(flt.collections)
    if not flt.principal.admin:
        keys = flt.principal.acl_keys()
        # Anonymous principals see documents marked public only; signed-in ones also see
        # documents without an ACL.
        signed_in = flt.principal != Principal.anonymous()
        acl = "NOT EXISTS (SELECT 1 FROM doc_acl a WHERE a.document_id = d.id) OR " if signed_in else ""
        acl += (
            "EXISTS (SELECT 1 FROM doc_acl a WHERE a.document_id = d.id AND a.entry IN "
            f"({','.join('?' * len(keys))}))"
        )
        params.extend(keys)
        conds.append(f"({acl})")
    where = " AND ".join(conds) or "1"
    return f"{doc_column} IN (SELECT d.id FROM documents d WHERE {where})", params
