"""The `citeline` command group and what every command shares: the principal, the consoles,
the index opening, filters, progress and error reporting. The commands themselves live in
cli/main.py (add, remove, search, ask, status), cli/documents.py, cli/inspect.py and the others.

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
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

# One BLAS thread unless the user chose otherwise (set before numpy loads): the command's numpy
# work is small (a matrix-vector product over at most engine_exact_rows chunks), while OpenBLAS's
# idle threads spin against onnxruntime's: a one-shot search at 5.3k chunks took 0.66 s wall and
# 0.87 s CPU with them, 0.49-0.58 s and 0.5 s without.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import click

from citeline import terminal
from citeline.cli.output import (
    JSON_META_KEY,
    OutputConsole,
    error_json,
    escape,
    json_requested,
    open_kb,
    print_json,
    quiet_broken_pipe,
)
from citeline.cli.progress import progress_bar
from citeline.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    CitelineError,
)
from citeline.filters import Filter, Principal
from citeline.settings import debug_enabled

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
    documented non-zero exit code, never a traceback.

    Commands registered by ``load_later`` are imported when a command not yet known is asked for,
    or the list of commands is read (``--help``, ``.commands``): a one-shot `citeline search` does
    not import the modules of `eval`, `serve`, `embed`, ... (rich's tables, subprocess, tempfile:
    ~0.02 s of CPU)."""

    _commands: dict[str, click.Command]
    _load_rest: Callable[[], None] | None = None

    @property  # type: ignore[override]
    def commands(self) -> dict[str, click.Command]:
        self._load_commands()
        return self._commands

    @commands.setter
    def commands(self, value: dict[str, click.Command]) -> None:
        self._commands = value

    def load_later(self, register: Callable[[], None]) -> None:
        """``register`` adds the other commands, when one of them (or the whole list) is needed."""
        self._load_rest = register

    def _load_commands(self) -> None:
        register, self._load_rest = self._load_rest, None
        if register is not None:
            register()

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._commands.get(cmd_name) or self.commands.get(cmd_name)

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
