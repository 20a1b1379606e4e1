"""`citeline documents` (what is indexed, as a principal may see it) and `citeline check` (the index
against its own derived indexes, with --repair); registered on the main command."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from citeline.cli.app import _filter, _kb, _n, _print_json, filter_options, main, out
from citeline.cli.output import json_option
from citeline.types import DEFAULT_COLLECTION, Document

if TYPE_CHECKING:
    from citeline.kb import KnowledgeBase


def document_row(kb: KnowledgeBase, doc: Document) -> dict[str, Any]:
    return {
        "id": doc.id,
        "collection": doc.collection,
        "source": doc.source,
        "title": doc.title,
        "format": doc.format,
        "size": doc.size,
        "pages": doc.page_count,
        "chunks": kb.chunk_count(doc),
        "tags": dict(doc.tags),
        "acl": list(doc.acl),
        "path": doc.metadata.get("path"),
        "updated_at": doc.updated_at,
    }


@main.command()
@json_option()
@click.option("--collection", "collections", multiple=True, help="Only this collection (repeatable).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@filter_options
@click.pass_context
def documents(
    ctx: click.Context,
    /,
    as_json: bool,
    collections: tuple[str, ...],
    limit: int | None,
    **filters: Any,
) -> None:
    """List what is indexed: source, format, chunks, collection, ACL (what --as may read)."""
    import dataclasses
    from datetime import datetime

    kb = _kb(ctx)
    flt = dataclasses.replace(_filter(**filters), collections=collections)
    docs = kb.documents(flt=flt, limit=limit)
    total = kb.count_documents(flt)
    rows = [document_row(kb, d) for d in docs]
    if as_json:
        _print_json({"documents": rows, "total": total})
        return
    if not rows:
        out.print("No documents. `citeline add PATH` adds files or folders.")
        return
    for r in rows:
        when = datetime.fromtimestamp(r["updated_at"]).strftime("%Y-%m-%d %H:%M")
        where = "" if r["collection"] == DEFAULT_COLLECTION else f"  [dim]{_n(r['collection'])}[/dim]"
        acl = f"  [dim]acl {_n(','.join(r['acl']))}[/dim]" if r["acl"] else ""
        out.print(f"{_n(r['source'])}  [dim]{r['format']}, {r['chunks']} chunks, {when}[/dim]{where}{acl}")
    if total > len(rows):
        out.print(f"[dim]{total - len(rows)} more (--limit)[/dim]")


@main.command()
@click.option("--repair", is_flag=True, help="Rebuild derived indexes, drop orphans, embed missing vectors.")
@json_option()
@click.pass_context
def check(ctx: click.Context, repair: bool, as_json: bool) -> None:
    """Check the index: SQLite integrity, keyword and vector indexes against the chunks, every
    span in its document, no orphans. Exit code 0 when all is well (or repaired), else 1."""
    kb = _kb(ctx)
    report = kb.check(repair=repair)
    if as_json:
        _print_json(report.to_json())
    else:
        stats = kb.stats()
        for problem in report.problems:
            fixed = " [green](repaired)[/green]" if problem.repaired else ""
            out.print(f"[yellow]problem[/yellow] {problem.kind}: {_n(problem.detail)}{fixed}")
        for problem in report.remaining or []:
            out.print(f"[red]still wrong[/red] {problem.kind}: {_n(problem.detail)}")
        if report.ok:
            state = "repaired" if report.problems else "ok"
            out.print(f"{state}: {stats['documents']} documents, {stats['chunks']} chunks")
        elif not repair:
            out.print("`citeline check --repair` rebuilds what is derived from the stored chunks.")
    if not report.ok:
        sys.exit(1)
