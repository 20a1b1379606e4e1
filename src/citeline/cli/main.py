"""The `citeline` command: a thin layer over the Python API (citeline.kb).

The command line acts for whoever can read the index folder: the local administrator, stated
once here (LOCAL). ``--as user:NAME --groups G`` asks as someone else, with their ACLs.

Exit codes are documented in citeline.errors (0 done, 1 error, 2 usage, 3 some files failed,
4 index not writable now, 70 internal error). Every name or document text printed on the terminal
goes through citeline.terminal, so control characters and escape sequences are shown, not obeyed.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

# One BLAS thread unless the user chose otherwise (set before numpy loads): the command's numpy
# work is small (a matrix-vector product over at most engine_exact_rows chunks), while OpenBLAS's
# idle threads spin against onnxruntime's: a one-shot search at 5.3k chunks took 0.66 s wall and
# 0.87 s CPU with them, 0.49-0.58 s and 0.5 s without.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click
from rich.markup import escape

from citeline import terminal
from citeline.cli.output import (
    JSON_META_KEY,
    OutputConsole,
    dumps,
    error_json,
    json_option,
    json_requested,
    open_kb,
    print_json,
    quiet_broken_pipe,
)
from citeline.cli.progress import progress_bar
from citeline.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    CitelineError,
    UsageError,
)
from citeline.filters import Filter, Principal
from citeline.settings import debug_enabled
from citeline.types import DEFAULT_COLLECTION, Answer

if TYPE_CHECKING:
    from citeline.ingest.pipeline import IngestReport
    from citeline.kb import KnowledgeBase

#: the principal of every command-line read: whoever may open the index folder reads all of it
LOCAL = Principal.local_admin()

F = TypeVar("F", bound=Callable[..., Any])

out = OutputConsole(soft_wrap=True, highlight=False)
err = OutputConsole(stderr=True, highlight=False, soft_wrap=True)


def _kb(ctx: click.Context, create: bool = False, **overrides: Any) -> KnowledgeBase:
    return open_kb(ctx.obj["index"], create=create, **overrides)


_print_json = print_json


def _n(value: object) -> str:
    """A name (source, title, heading, path) for the terminal: controls visible, markup inert."""
    return escape(terminal.name(value))


def _t(value: object) -> str:
    """Document text for the terminal: newlines kept, other controls visible, markup inert."""
    return escape(terminal.text(value))


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


def _progress(enabled: bool) -> AbstractContextManager[Callable[[str, int], None] | None]:
    return progress_bar(enabled, err)


class CitelineGroup(click.Group):
    """Prints user errors as one message on stderr (as JSON on stdout after --json) with the
    documented non-zero exit code, never a traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # An unknown option is refused before any flag is processed: the raw arguments tell
        # whether the user asked for JSON.
        if "--json" in args:
            ctx.meta[JSON_META_KEY] = True
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CitelineError as exc:
            report = getattr(exc, "report", None)
            if _is_ingest_report(report) and not json_requested(ctx):
                _print_report(report, stopped=True)  # what was done before the index could not be written
            _fail(ctx, type(exc).__name__, str(exc), exc.exit_code, report)
        except KeyboardInterrupt:
            _fail(ctx, "interrupted", "interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:  # `citeline documents | head -1`: the reader has what it wanted
            quiet_broken_pipe()
        except click.ClickException as exc:
            if not json_requested(ctx):
                raise
            _fail(ctx, "usage", exc.format_message(), exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except Exception as exc:
            if debug_enabled():
                raise
            _fail(ctx, "internal", f"{type(exc).__name__}: {exc}", EXIT_INTERNAL)


def _is_ingest_report(report: object) -> TypeGuard[IngestReport]:
    # The pipeline module is imported only by commands that ingest; unloaded, nothing is its report.
    module = sys.modules.get("citeline.ingest.pipeline")
    return module is not None and isinstance(report, module.IngestReport)


def _fail(ctx: click.Context, code: str, message: str, exit_code: int, report: object = None) -> None:
    """Report an error (one line on stderr, or JSON on stdout after --json) and exit with its code."""
    hint = "Set CITELINE_DEBUG=1 for the traceback, and please report it." if code == "internal" else ""
    if json_requested(ctx):
        message = f"{message} ({hint})" if hint else message
        extra = {"report": report.to_json()} if _is_ingest_report(report) else {}
        click.echo(error_json(code, message, exit_code, **extra))
    elif code == "interrupted":
        err.print("interrupted")
    else:
        # one line: the message may quote a file name holding newlines or escape sequences
        label = "internal error" if code == "internal" else "error"
        err.print(f"[red]{label}:[/red] {_n(message)}" + (f"\n{hint}" if hint else ""))
    sys.exit(exit_code)


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
    warnings.showwarning = _show_warning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """A warning from citeline or a library is a one-line note for the user, not Python's
    "file:line: UserWarning" with the source line under it."""
    err.print(f"[yellow]note:[/yellow] {_n(message)}")


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Tag the documents (repeatable).")
@click.option("--acl", multiple=True, metavar="group:NAME|user:NAME", help="Who may read them (repeatable).")
@click.option(
    "--keep-missing", is_flag=True, help="Keep documents whose files are gone from a folder (reported)."
)
@click.option("--prune", is_flag=True, help="Allow removing more than half of a folder's documents.")
@click.option(
    "--rehash",
    is_flag=True,
    help="Read and hash every file, even those whose size and mtime are unchanged (trust_mtime = false).",
)
@click.option("--strict", is_flag=True, hidden=True, help="Kept for scripts: failures always exit 3.")
@json_option("Print the report as JSON.")
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
@click.option(
    "--progressive",
    is_flag=True,
    help="Searchable at once: the fast embedder only; `citeline embed` does the rest.",
)
@click.option(
    "--background", is_flag=True, help="--progressive, then `citeline embed` started in the background."
)
@click.pass_context
def add(
    ctx: click.Context,
    paths: tuple[str, ...],
    tags: tuple[str, ...],
    acl: tuple[str, ...],
    keep_missing: bool,
    prune: bool,
    rehash: bool,
    strict: bool,
    as_json: bool,
    collection: str,
    root: Path | None,
    workers: str | None,
    progressive: bool,
    background: bool,
) -> None:
    """Add or update files and folders (recursively). Unchanged files cost nothing.

    A folder added again is reconciled: documents whose files are gone are removed (--keep-missing
    keeps them; more than half of the folder needs --prune; nothing is removed when the folder is
    empty or unreadable). Only regular files are read: pipes, sockets, devices, links to folders,
    link loops and files of unsupported types in a folder are skipped with the reason, and so are
    files with no text to index (hidden files and folders are left out).
    Exit code 0: all done (skips included); 2: a path does not exist; 3: some files failed."""
    for entry in acl:
        if not entry.startswith(("group:", "user:")) and entry != "public":
            raise click.BadParameter(f"'{entry}' must be group:NAME, user:NAME or public", param_hint="--acl")
    if not any(os.path.lexists(p) for p in paths):
        raise UsageError(
            f"No such file or folder: {', '.join(terminal.name(p) for p in paths)}. Nothing was added."
        )
    if workers:
        from citeline.ingest.distributed import check_workers

        check_workers(workers)
    kb = _kb(ctx, create=True, trust_mtime=False if rehash else None)
    with _progress(not as_json and sys.stderr.isatty()) as progress:
        report = kb.add(
            paths,
            tags=_parse_tags(tags),
            acl=acl,
            progress=progress,
            collection=collection,
            root=root,
            workers=workers,
            keep_missing=keep_missing,
            prune=prune,
            progressive=progressive or background,
        )
    if background and kb.store.pending_embedder() is not None:
        from citeline.cli.embed import start_background

        err.print(
            f"citeline embed: full vectors in the background (pid {start_background(kb.settings.index)})"
        )
    code = add_exit_code(report)
    if as_json:
        _print_json({**report.to_json(), "exit_code": code})
    else:
        _print_report(report)
    if code != EXIT_OK:
        sys.exit(code)


def add_exit_code(report: IngestReport) -> int:
    """2 when a path given does not exist, 3 when a file failed or a removal needs --prune, else 0."""
    if report.not_found:
        return EXIT_USAGE
    if report.failed or report.prune_needed:
        return EXIT_PARTIAL
    return EXIT_OK


#: skipped entries listed one per line by `add` (a folder of images would fill screens): the rest counted
SKIPPED_SHOWN = 50


def _print_report(report: IngestReport, stopped: bool = False) -> None:
    """The report: each file that failed or was skipped, the notes, and the summary line (after an
    error: what was done before it, the error's message saying what was not)."""
    for source, reason in report.failed:
        err.print(f"[yellow]failed:[/yellow] {_n(source)}: {_n(reason)}")
    for source, reason in report.skipped[:SKIPPED_SHOWN]:
        err.print(f"[dim]skipped:[/dim] {_n(source)}: {_n(reason)}")
    if len(report.skipped) > SKIPPED_SHOWN:
        more = len(report.skipped) - SKIPPED_SHOWN
        err.print(f"[dim]skipped:[/dim] {more:,} more (add --json lists each with its reason)")
    for source in report.removed:
        err.print(f"removed: {_n(source)} (its file is gone)")
    for source in report.missing:
        err.print(f"[yellow]missing:[/yellow] {_n(source)} (its file is gone; kept)")
    for note in report.notes:
        err.print(f"[yellow]note:[/yellow] {_n(note)}")
    out.print(f"before the error: {report.summary()}" if stopped else report.summary())


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.pass_context
def remove(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """Remove documents (files, or every document under a folder) and all they derived."""
    report = _kb(ctx).remove(paths)
    for source, reason in report.failed:
        err.print(f"[yellow]not removed:[/yellow] {_n(source)}: {_n(reason)}")
    out.print(f"{len(report.removed)} removed")
    if report.failed:
        sys.exit(1 if not report.removed else EXIT_PARTIAL)


@main.command()
@click.argument("query")
@click.option("-k", "k", type=int, default=10, show_default=True, help="How many results.")
@click.option("--fusion", type=click.Choice(["rrf", "convex"]), help="How to merge BM25 and dense results.")
@click.option("--alpha", type=float, help="Dense weight for --fusion convex.")
@json_option()
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
        _print_json({"query": query, "results": [h.to_json() for h in hits]})
        return
    for rank, hit in enumerate(hits, 1):
        stages = "  ".join(f"{k}#{v.rank}" for k, v in hit.stages.items() if k != "fused")
        out.print(
            f"[bold]{rank:>2}. {_n(hit.source)}[/bold] {_n(hit.chunk.heading)} "
            f"[dim]({hit.chunk.start}:{hit.chunk.end}) {stages}[/dim]"
        )
        snippet = " ".join(hit.chunk.text.split())
        out.print(f"    {_n(snippet[:200])}{'...' if len(snippet) > 200 else ''}")


def print_answer(answer: Answer) -> None:
    out.print(_t(answer.answer))
    if answer.degraded:
        err.print(f"[yellow]note:[/yellow] keyword search only: {_n(answer.degraded)}")
    if answer.citations:
        out.print("\n[bold]Sources[/bold]")
    for c in answer.citations:
        page = f", page {c.page}" if c.page else ""
        if c.page_label and c.page_label != str(c.page):  # what is printed on the page (PDF labels)
            page += f" (printed page {_n(c.page_label)})"
        out.print(
            f"[{c.n}] {_n(c.source)}{page} — {_n(c.heading or c.title)} [dim](chars {c.start}:{c.end})[/dim]"
        )
        quote = " ".join(c.quote[c.quote_start - c.start : c.quote_end - c.start].split())
        out.print(f'    "{_n(quote[:300])}"')


@main.command()
@click.argument("question")
@json_option('Print one JSON object (the documented contract; errors as {"error": {...}}).')
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
    if explain and trace is None:
        why = "the index is read-only here" if kb.read_only else "trace = false, or it was not written"
        err.print(f"[yellow]note:[/yellow] no trace was stored for this answer ({why})")
    if trace is not None:
        err.print("\n[bold]Trace[/bold]")
        click.echo(dumps(trace.to_json()), err=True)


@main.command()
@json_option()
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Documents, chunks, index size and embedder."""
    stats = _kb(ctx).status()
    if as_json:
        _print_json(stats)
        return
    emb, pending = stats["embedder"] or {}, stats["pending_vectors"]
    out.print(
        f"index     {_n(stats['index'])}\ndocuments {stats['documents']}\nchunks    {stats['chunks']}\n"
        f"size      {stats['index_bytes'] / 1048576:.1f} MB\nembedder  {emb.get('name', '-')} "
        f"({emb.get('dim', '-')}d)\nvectors   {stats['full_vectors']} of {stats['chunks']} chunks full"
        + (f" ({pending['chunks']} pending: {pending['embedder']}; `citeline embed`)" if pending else "")
    )


def register_commands() -> None:
    from citeline.cli import (  # noqa: F401 (their commands register on main)
        documents,  # documents, check
        inspect,  # show, reindex, migrate, trace, calibrate
    )
    from citeline.cli.config import backends, config_group
    from citeline.cli.embed import register as register_embed
    from citeline.cli.eval import eval_group
    from citeline.cli.eval_answers import register
    from citeline.cli.server import register as register_server

    register(eval_group)
    main.add_command(eval_group)
    main.add_command(config_group)
    main.add_command(backends)
    register_server(main)
    register_embed(main)


register_commands()
