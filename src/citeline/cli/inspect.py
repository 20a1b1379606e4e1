"""`citeline show`, `reindex`, `migrate`, `trace` and `calibrate`: checking a citation, changing the
embedder or the store, reading traces and calibrating refusals (registered on the main command)."""

from __future__ import annotations

import json
import sys
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.markup import escape

from citeline import terminal
from citeline.cli.app import LOCAL, _kb, _n, _print_json, _progress, _t, err, main, out
from citeline.cli.output import json_option
from citeline.errors import CitelineError, SwapRefusedError

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
@click.option(
    "--compare",
    "questions",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A question set (golden JSONL, as `eval answers` reads it): answer it with both embedders "
    "on a scratch copy first, and swap only if no metric drops by more than --max-drop.",
)
@click.option(
    "--max-drop",
    type=click.FloatRange(min=0.0),
    default=None,
    help="With --compare: how much worse (absolute) any tracked metric may get. [default: 0.02]",
)
@click.option("--force", is_flag=True, help="With --compare: swap even when a metric dropped.")
@click.option(
    "--docs-root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="With --compare: the folder the question set's sources and scopes are relative to.",
)
@click.option(
    "--reports",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --compare: write old.json and new.json (answers reports, for `eval compare`) here.",
)
@click.pass_context
def reindex(
    ctx: click.Context,
    embedder_name: str,
    questions: Path | None,
    max_drop: float | None,
    force: bool,
    docs_root: Path | None,
    reports: Path | None,
) -> None:
    """Rebuild all vectors with another embedder, side by side, then swap atomically.

    With --compare, refuse the swap (exit code 5, the index unchanged) when the new embedder makes
    a metric of the question set worse by more than --max-drop."""
    if questions is None and (max_drop is not None or force or docs_root or reports):
        raise click.UsageError("--max-drop, --force, --docs-root and --reports apply to --compare only.")
    rows = None
    if questions is not None:
        from citeline.eval.answers import load_golden

        rows = load_golden(questions)
    kb = _kb(ctx)
    refused: SwapRefusedError | None = None
    with _progress(sys.stderr.isatty()) as progress:
        try:
            if rows is None:
                result = kb.reindex(embedder_name, progress)
            else:
                from citeline.eval.shadow import DEFAULT_MAX_DROP, Rollout, compared_reindex

                rollout = Rollout(
                    max_drop=DEFAULT_MAX_DROP if max_drop is None else max_drop,
                    force=force,
                    docs_root=docs_root,
                    on_question=_asked,
                )
                result = compared_reindex(kb, embedder_name, rows, rollout, progress)
        except SwapRefusedError as exc:
            refused, result = exc, {"comparison": exc.comparison}
    comparison = result.get("comparison")
    if comparison is not None:
        _show_comparison(comparison, reports)
    if refused is not None:
        raise refused
    if comparison is not None:
        err.print(comparison.decision.message(comparison.old_embedder, comparison.new_embedder, forced=force))
    out.print(
        f"reindexed {result['chunks']} chunks with {result['embedder']} ({result['embedded']} embedded)"
    )


def _asked(side: str, done: int, total: int) -> None:
    # whole lines: they print above the embedding progress bar
    if done == 1:
        err.print(f"Asking {total} questions with the {side} embedder on a scratch copy of the index...")


def _show_comparison(comparison: Any, reports: Path | None) -> None:
    """Both embedders' answers reports as `eval compare` prints them (A = in use, B = new)."""
    from citeline.cli.eval_answers import print_comparison

    title = f"A = {comparison.old_embedder} (in use)   B = {comparison.new_embedder} (new)"
    print_comparison(comparison.old, comparison.new, title)
    if reports is not None:
        reports.mkdir(parents=True, exist_ok=True)
        for name, report in (("old", comparison.old), ("new", comparison.new)):
            (reports / f"{name}.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        err.print(f"Reports: {reports / 'old.json'} and {reports / 'new.json'}")


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
