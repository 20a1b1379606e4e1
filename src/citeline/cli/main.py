"""The `citeline` command: a thin layer over the Python API (citeline.kb).

This module holds the everyday commands (add, remove, search, ask, status) and registers the
others (cli/documents.py, cli/inspect.py, cli/config.py, cli/eval*.py, cli/server.py) on the
group defined in cli/app.py, with what every command shares.

Exit codes are documented in citeline.errors (0 done, 1 error, 2 usage, 3 some files failed,
4 index not writable now, 70 internal error). Every name or document text printed on the terminal
goes through citeline.terminal, so control characters and escape sequences are shown, not obeyed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from citeline import terminal
from citeline.cli.app import (
    _filter,
    _kb,
    _n,
    _parse_tags,
    _print_json,
    _print_report,
    _progress,
    _t,
    err,
    filter_options,
    main,
    out,
)
from citeline.cli.ending import end_quickly
from citeline.cli.ending import run as run_program
from citeline.cli.output import dumps, json_option
from citeline.errors import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, UsageError
from citeline.types import DEFAULT_COLLECTION, Answer

if TYPE_CHECKING:
    from citeline.ingest.pipeline import IngestReport

__all__ = ["main"]


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
    end_quickly()
    with _kb(ctx) as kb:
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
    end_quickly()
    with _kb(ctx, generator=generator) as kb:
        answer = kb.ask(question, flt=_filter(**filters))
        if as_json:
            _print_json(answer.to_json())
        else:
            print_answer(answer)
        # an LLM's refused answer gave way to the extractive one (answer/fallback.py): say so
        replaced = not as_json and answer.generator == "extractive" != kb.settings.generator.split(":")[0]
        trace = kb.trace(answer.trace_id) if (explain or replaced) and answer.trace_id else None
        read_only = kb.read_only
    if replaced:
        why = f" ({trace.fallback['reason']})" if trace is not None and trace.fallback else ""
        err.print(
            f"[yellow]note:[/yellow] the model's answer was refused{_n(why)}; "
            "this answer quotes the passages instead (fallback_reader_score)"
        )
    trace = trace if explain else None
    if explain and trace is None:
        why = "the index is read-only here" if read_only else "trace = false, or it was not written"
        err.print(f"[yellow]note:[/yellow] no trace was stored for this answer ({why})")
    if trace is not None:
        err.print("\n[bold]Trace[/bold]")
        click.echo(dumps(trace.to_json()), err=True)


@main.command()
@json_option()
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Documents, chunks, index size and embedder."""
    end_quickly()
    with _kb(ctx) as kb:
        stats = kb.status()
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


main.load_later(register_commands)


def run() -> None:
    """The `citeline` program (`python -m citeline`): ``main``, ending one-shot commands without
    the interpreter's teardown (cli/ending.py)."""
    run_program(main)
