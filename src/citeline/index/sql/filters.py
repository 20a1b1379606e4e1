"""Metadata and access filters as SQL conditions: applied inside every query, before ranking."""

from __future__ import annotations

from typing import Any

from citeline.filters import Filter, Principal
from citeline.index.sql.dialect import Dialect


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def filter_sql(flt: Filter, doc_column: str, dialect: Dialect) -> tuple[str, list[Any]]:
    """A SQL condition on ``doc_column`` (a document id) that enforces the filter; ("", []) if none.

    Written with ``?`` placeholders, as all shared SQL (``Dialect.sql`` gives the driver's form),
    over ``dialect``'s documents id column.
    """
    if flt.is_empty:
        return "", []
    p, id_column = "?", dialect.document_id
    conds: list[str] = []
    params: list[Any] = []
    if flt.source_prefix is not None:
        conds.append(f"d.source LIKE {p} ESCAPE '\\'")
        params.append(_like_escape(flt.source_prefix) + "%")
    if flt.formats:
        conds.append(f"d.format IN ({','.join((p,) * len(flt.formats))})")
        params.extend(flt.formats)
    if flt.modified_after is not None:
        conds.append(f"d.mtime >= {p}")
        params.append(flt.modified_after)
    if flt.modified_before is not None:
        conds.append(f"d.mtime < {p}")
        params.append(flt.modified_before)
    for key, value in sorted(flt.tags.items()):
        conds.append(
            f"EXISTS (SELECT 1 FROM doc_tags t WHERE t.document_id = d.{id_column} AND t.key = {p} AND t.value = {p})"
        )
        params.extend([key, value])
    if flt.documents:
        conds.append(f"d.{id_column} IN ({','.join((p,) * len(flt.documents))})")
        params.extend(flt.documents)
    if flt.collections:
        conds.append(f"d.collection IN ({','.join((p,) * len(flt.collections))})")
        params.extend(flt.collections)
    if not flt.principal.admin:
        keys = flt.principal.acl_keys()
        # Anonymous principals see documents marked public only; signed-in ones also see
        # documents without an ACL.
        signed_in = flt.principal != Principal.anonymous()
        acl = (
            f"NOT EXISTS (SELECT 1 FROM doc_acl a WHERE a.document_id = d.{id_column}) OR "
            if signed_in
            else ""
        )
        acl += (
            f"EXISTS (SELECT 1 FROM doc_acl a WHERE a.document_id = d.{id_column} AND a.entry IN "
            f"({','.join((p,) * len(keys))}))"
        )
        params.extend(keys)
        conds.append(f"({acl})")
    where = " AND ".join(conds) or "1 = 1"
    return f"{doc_column} IN (SELECT d.{id_column} FROM documents d WHERE {where})", params
