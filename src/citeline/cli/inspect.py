"""`citeline show`, `reindex`, `migrate`, `trace` and `calibrate`: checking a citation, changing the
embedder or the store, reading traces and calibrating refusals (registered on the main command)."""

from __future__ import annotations

import sys
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from citeline import terminal
from citeline.cli.main import LOCAL, _kb, _n, _print_json, _progress, _t, main, out
from citeline.cli.output import json_option
from citeline.errors import CitelineError

if TYPE_CHECKING:
    from citeline.kb import KnowledgeBase


@main.command()
@click.argument("source")
@click.option("--page", type=int, help="Show this page (PDF).")
@click.option("--span", help="START:END code-point offsets to mark.")
@click.pass_context
def show(ctx: click.Context, source: str, page: int | None, span: str | None) -> None:
    """Print a document's text with the cited span marked, to check any citation."""
    start = end = None
    if span:
        try:
            a, b = span.split(":")
            start, end = int(a), int(b)
        except ValueError as exc:
            raise click.BadParameter("use START:END, e.g. 120:480", param_hint="--span") from exc
        if start > end:
            raise click.BadParameter(
                f"{start}:{end} is reversed: START comes first (did you mean {end}:{start}?)",
                param_hint="--span",
            )
    kb = _kb(ctx)
    doc = kb.document(source, LOCAL)
    text = kb.text(doc)
    lo, hi = _window(kb, doc, text, start, end, page)
    out.print(f"[bold]{_n(doc.title)}[/bold] [dim]{_n(doc.source)} ({lo}:{hi} of {len(text)})[/dim]\n")
    if start is not None and end is not None and lo <= start <= end <= hi:
        out.print(_t(text[lo:start]) + "[reverse]" + _t(text[start:end]) + "[/reverse]" + _t(text[end:hi]))
        if not sys.stdout.isatty():
            click.echo(f"\n>>> cited [{start}:{end}]: {terminal.text(text[start:end])}")
    else:
        out.print(_t(text[lo:hi]))


def _window(
    kb: KnowledgeBase, doc: Any, text: str, start: int | None, end: int | None, page: int | None
) -> tuple[int, int]:
    """The part of the text to print: a page, or the span with 300 characters around it."""
    lo, hi = 0, len(text)
    if page is not None:
        starts = kb.page_starts(doc)
        if not starts:
            raise CitelineError(f"{doc.source} has no pages (only PDFs do); use --span START:END.")
        if not 1 <= page <= len(starts):
            raise CitelineError(f"{doc.source} has {len(starts)} pages; page {page} does not exist.")
        lo, hi = starts[page - 1], starts[page] if page < len(starts) else len(text)
    if start is not None and end is not None:
        if not 0 <= start <= end <= len(text):
            raise CitelineError(f"Span {start}:{end} is outside {doc.source} (0:{len(text)}).")
        if page is None:
            lo, hi = max(0, start - 300), min(len(text), end + 300)
    return lo, hi


@main.command()
@click.option("--embedder", "embedder_name", required=True, help="Registry name or onnx:DIR.")
@click.pass_context
def reindex(ctx: click.Context, embedder_name: str) -> None:
    """Rebuild all vectors with another embedder, side by side, then swap atomically."""
    kb = _kb(ctx)
    with _progress(sys.stderr.isatty()) as progress:
        result = kb.reindex(embedder_name, progress=progress)
    out.print(
        f"reindexed {result['chunks']} chunks with {result['embedder']} ({result['embedded']} embedded)"
    )


@main.command()
@click.option("--from", "source", required=True, metavar="DIR|URL", help="The index to copy.")
@click.option("--to", "target", required=True, metavar="URL|DIR", help="Where to copy it (created if new).")
def migrate(source: str, target: str) -> None:
    """Copy an index to another store without re-embedding: a folder to PostgreSQL, or back.

    Documents, originals, chunks, vectors, settings, API keys and traces; re-running resumes.
    """
    from citeline.index.migrate import migrate as copy_index
    from citeline.wiring import open_store

    with closing(open_store(source, create=False)) as src, closing(open_store(target)) as dst:
        with _progress(sys.stderr.isatty()) as progress:
            report = copy_index(src, dst, progress)
        out.print(f"{escape(src.location)} -> {escape(dst.location)}: {report.summary()}")


@main.command()
@click.argument("trace_id", required=False)
@click.option("--failed", is_flag=True, help="List recent refusals and low-support answers.")
@json_option()
@click.pass_context
def trace(ctx: click.Context, trace_id: str | None, failed: bool, as_json: bool) -> None:
    """Show the stored trace of an answer, or list recent ones."""
    kb = _kb(ctx)
    if trace_id is None:
        rows = kb.traces(LOCAL, failed_only=failed)
        if as_json:
            _print_json([r.to_json() for r in rows])
        for row in [] if as_json else rows:
            mark = "refused" if row.refused else f"support {row.support}"
            out.print(f"{_n(row.id)}  {mark:<14} {_n(row.question[:80])}")
        return
    data = kb.trace(trace_id, LOCAL)
    if data is None:
        raise CitelineError(f"No trace '{terminal.name(trace_id)}'. `citeline trace` lists recent traces.")
    _print_json(data.to_json())


@main.command()
@click.argument("questions", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--docs",
    multiple=True,
    help="Add these documents first (a folder's sources relative to it, as `eval answers --docs`).",
)
@json_option()
@click.pass_context
def calibrate(ctx: click.Context, questions: Path, docs: tuple[str, ...], as_json: bool) -> None:
    """Refusal precision/recall across thresholds on a question set (JSONL with `answerable`)."""
    from citeline.eval.calibration import calibrate_refusal, format_table

    kb = _kb(ctx, create=True)
    for path in docs:
        # the same sources as `eval answers --docs` gives them, so one index serves both commands
        # (absolute sources would add every file a second time)
        kb.add([path], root=path if Path(path).is_dir() else None)
    result = calibrate_refusal(kb, questions)
    if as_json:
        _print_json(result)
    else:
        out.print(format_table(result))
