"""The `citeline` command: a thin layer over the Python API (citeline.kb).

The command line acts for whoever can read the index folder: the local administrator, stated
once here (LOCAL). ``--as user:NAME --groups G`` asks as someone else, with their ACLs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from citeline.errors import CitelineError
from citeline.kb import KnowledgeBase, open_kb
from citeline.models import DEFAULT_COLLECTION, Answer, Hit
from citeline.retrieval.filters import Filter, Principal
from citeline.settings import debug_enabled

#: the principal of every command-line read: whoever may open the index folder reads all of it
LOCAL = Principal.local_admin()

F = TypeVar("F", bound=Callable[..., Any])

out = Console(soft_wrap=True, highlight=False)
err = Console(stderr=True, highlight=False)


def _kb(ctx: click.Context, create: bool = False, **overrides: Any) -> KnowledgeBase:
    return open_kb(ctx.obj["index"], create=create, **overrides)


def _print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))


def filter_options(func: F) -> F:
    """Metadata and access filters shared by `search` and `ask`."""
    options = [
        click.option(
            "--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Only documents with this tag."
        ),
        click.option("--source-prefix", help="Only documents whose source starts with this."),
        click.option(
            "--format", "formats", multiple=True, help="Only these formats (markdown, text, pdf, ...)."
        ),
        click.option("--as", "as_user", metavar="user:NAME", help="Answer as this principal (ACLs apply)."),
        click.option("--groups", default="", help="Comma-separated groups of the --as principal."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _parse_tags(tags: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for tag in tags:
        key, sep, value = tag.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"'{tag}' is not KEY=VALUE", param_hint="--tag")
        parsed[key.strip()] = value.strip()
    return parsed


def _filter(
    tags: tuple[str, ...],
    source_prefix: str | None,
    formats: tuple[str, ...],
    as_user: str | None,
    groups: str,
) -> Filter:
    if as_user is not None:
        user = as_user.removeprefix("user:")
        principal = Principal(
            user=user or None, groups=tuple(g.strip() for g in groups.split(",") if g.strip())
        )
    else:
        principal = LOCAL
    return Filter(tags=_parse_tags(tags), source_prefix=source_prefix, formats=formats, principal=principal)


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int], None] | None]:
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as bar:
        files = bar.add_task("files", total=None)
        chunks = bar.add_task("chunks embedded", total=None)

        def update(event: str, amount: int) -> None:
            bar.advance(files if event == "file" else chunks, amount)

        yield update


class CitelineGroup(click.Group):
    """Prints user errors as one message on stderr with a non-zero exit code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CitelineError as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            err.print("interrupted")
            sys.exit(130)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            err.print(
                f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(str(exc))}\n"
                "Set CITELINE_DEBUG=1 for the traceback, and please report it."
            )
            sys.exit(2)


@click.group(cls=CitelineGroup)
@click.option(
    "--index",
    envvar="CITELINE_INDEX",
    default=".citeline",
    show_default=True,
    help="Index folder or database URL, e.g. postgresql://user@host/db (or CITELINE_INDEX).",
)
@click.version_option(package_name="citeline")
@click.pass_context
def main(ctx: click.Context, index: str) -> None:
    """Ask questions of your documents; every answer sentence cites its source."""
    ctx.obj = {"index": index}


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the documents (repeatable).")
@click.option("--acl", multiple=True, metavar="group:NAME|user:NAME", help="Who may read them (repeatable).")
@click.option("--strict", is_flag=True, help="Exit non-zero if any file failed.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--collection", default=DEFAULT_COLLECTION, show_default=True, help="Collection to add to.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Documents are identified by their path relative to this folder (default: the current one).",
)
@click.option(
    "--workers",
    metavar="ray://HOST:PORT|local:N",
    help="Parse and embed on a Ray cluster (or a local one with N CPUs); needs citeline[ray].",
)
@click.pass_context
def add(
    ctx: click.Context,
    paths: tuple[str, ...],
    tags: tuple[str, ...],
    acl: tuple[str, ...],
    strict: bool,
    as_json: bool,
    collection: str,
    root: Path | None,
    workers: str | None,
) -> None:
    """Add or update files and folders (recursively). Unchanged files cost nothing."""
    for entry in acl:
        if not entry.startswith(("group:", "user:")) and entry != "public":
            raise click.BadParameter(f"'{entry}' must be group:NAME, user:NAME or public", param_hint="--acl")
    if workers:
        from citeline.ingest.distributed import check_workers

        check_workers(workers)
    kb = _kb(ctx, create=True)
    with _progress(not as_json and sys.stderr.isatty()) as progress:
        report = kb.add(
            paths,
            tags=_parse_tags(tags),
            acl=acl,
            progress=progress,
            collection=collection,
            root=root,
            workers=workers,
        )
    if as_json:
        _print_json(report.to_json())
    else:
        for source, reason in report.failed:
            err.print(f"[yellow]failed:[/yellow] {escape(source)}: {escape(reason)}")
        out.print(report.summary())
    if strict and report.failed:
        sys.exit(1)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.pass_context
def remove(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """Remove documents (files, or every document under a folder) and all they derived."""
    report = _kb(ctx).remove(paths)
    for source, reason in report.failed:
        err.print(f"[yellow]not removed:[/yellow] {escape(source)}: {escape(reason)}")
    out.print(f"{len(report.removed)} removed")
    if report.failed and not report.removed:
        sys.exit(1)


def _hit_json(hit: Hit) -> dict[str, Any]:
    c = hit.chunk
    return {
        "chunk_id": c.id,
        "document_id": c.document_id,
        "source": hit.source,
        "title": hit.title,
        "heading": c.heading,
        "page": c.page,
        "page_end": c.page_end,
        "start": c.start,
        "end": c.end,
        "text": c.text,
        "score": hit.score,
        "stages": {k: {"score": v.score, "rank": v.rank} for k, v in hit.stages.items()},
    }


@main.command()
@click.argument("query")
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many results.")
@click.option("--fusion", type=click.Choice(["rrf", "convex"]), help="How to merge BM25 and dense results.")
@click.option("--alpha", type=float, help="Dense weight for --fusion convex.")
@click.option("--json", "as_json", is_flag=True)
@filter_options
@click.pass_context
def search(
    ctx: click.Context,
    /,
    query: str,
    k: int,
    fusion: str | None,
    alpha: float | None,
    as_json: bool,
    **filters: Any,
) -> None:
    """Hybrid search (BM25 + dense, fused); prints chunks with per-stage scores."""
    kb = _kb(ctx)
    hits = kb.search(query, flt=_filter(**filters), k=k, fusion=fusion, alpha=alpha)
    if as_json:
        _print_json({"query": query, "results": [_hit_json(h) for h in hits]})
        return
    for rank, hit in enumerate(hits, 1):
        stages = "  ".join(f"{k}#{v.rank}" for k, v in hit.stages.items() if k != "fused")
        out.print(
            f"[bold]{rank:>2}. {escape(hit.source)}[/bold] {escape(hit.chunk.heading)} "
            f"[dim]({hit.chunk.start}:{hit.chunk.end}) {stages}[/dim]"
        )
        snippet = " ".join(hit.chunk.text.split())
        out.print(f"    {escape(snippet[:200])}{'...' if len(snippet) > 200 else ''}")


def print_answer(answer: Answer) -> None:
    out.print(escape(answer.answer))
    if answer.citations:
        out.print("\n[bold]Sources[/bold]")
    for c in answer.citations:
        page = f", page {c.page}" if c.page else ""
        out.print(
            f"[{c.n}] {escape(c.source)}{page} — {escape(c.heading or c.title)} "
            f"[dim](chars {c.start}:{c.end})[/dim]"
        )
        quote = " ".join(c.quote[c.quote_start - c.start : c.quote_end - c.start].split())
        out.print(f'    "{escape(quote[:300])}"')


@main.command()
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the documented contract).")
@click.option("--generator", help="extractive (default), openai, anthropic or llamacpp.")
@click.option("--explain", is_flag=True, help="Print the trace after the answer.")
@filter_options
@click.pass_context
def ask(
    ctx: click.Context, /, question: str, as_json: bool, generator: str | None, explain: bool, **filters: Any
) -> None:
    """Answer a question with numbered citations, or refuse when the documents do not say."""
    kb = _kb(ctx, generator=generator)
    answer = kb.ask(question, flt=_filter(**filters))
    if as_json:
        _print_json(answer.to_json())
    else:
        print_answer(answer)
    trace = kb.trace(answer.trace_id) if explain and answer.trace_id else None
    if trace is not None:
        err.print("\n[bold]Trace[/bold]")
        click.echo(json.dumps(trace.to_json(), ensure_ascii=False, indent=2), err=True)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Documents, chunks, index size and embedder."""
    stats = _kb(ctx).status()
    if as_json:
        _print_json(stats)
        return
    emb = stats["embedder"] or {}
    out.print(
        f"index     {escape(stats['index'])}\ndocuments {stats['documents']}\nchunks    {stats['chunks']}\n"
        f"size      {stats['index_bytes'] / 1048576:.1f} MB\nembedder  {emb.get('name', '-')} "
        f"({emb.get('dim', '-')}d)"
    )


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
    kb = _kb(ctx)
    doc = kb.document(source, LOCAL)
    text = kb.text(doc)
    lo, hi = _window(kb, doc, text, start, end, page)
    out.print(
        f"[bold]{escape(doc.title)}[/bold] [dim]{escape(doc.source)} ({lo}:{hi} of {len(text)})[/dim]\n"
    )
    if start is not None and end is not None and lo <= start <= end <= hi:
        out.print(
            escape(text[lo:start])
            + "[reverse]"
            + escape(text[start:end])
            + "[/reverse]"
            + escape(text[end:hi])
        )
        if not sys.stdout.isatty():
            click.echo(f"\n>>> cited [{start}:{end}]: {text[start:end]}")
    else:
        out.print(escape(text[lo:hi]))


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
    from citeline.components import open_store
    from citeline.index.migrate import migrate as copy_index

    with closing(open_store(source, create=False)) as src, closing(open_store(target)) as dst:
        with _progress(sys.stderr.isatty()) as progress:
            report = copy_index(src, dst, progress)
        out.print(f"{escape(src.location)} -> {escape(dst.location)}: {report.summary()}")


@main.command()
@click.argument("trace_id", required=False)
@click.option("--failed", is_flag=True, help="List recent refusals and low-support answers.")
@click.option("--json", "as_json", is_flag=True)
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
            out.print(f"{row.id}  {mark:<14} {escape(row.question[:80])}")
        return
    data = kb.trace(trace_id, LOCAL)
    if data is None:
        raise CitelineError(f"No trace '{trace_id}'. `citeline trace` lists recent traces.")
    _print_json(data.to_json())


@main.command()
@click.argument("questions", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--docs", multiple=True, help="Add these documents first.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def calibrate(ctx: click.Context, questions: Path, docs: tuple[str, ...], as_json: bool) -> None:
    """Refusal precision/recall across thresholds on a question set (JSONL with `answerable`)."""
    from citeline.eval.calibration import calibrate_refusal, format_table

    kb = _kb(ctx, create=True)
    if docs:
        kb.add(docs)
    result = calibrate_refusal(kb, questions)
    if as_json:
        _print_json(result)
    else:
        out.print(format_table(result))


def register_commands() -> None:
    from citeline.cli_config import backends, config_group
    from citeline.cli_server import register as register_server
    from citeline.eval.answers_cli import register
    from citeline.eval.cli import eval_group

    register(eval_group)
    main.add_command(eval_group)
    main.add_command(config_group)
    main.add_command(backends)
    register_server(main)


register_commands()
