"""Output conventions shared by every `citeline` command: ``--json`` and how errors are shown.

A command's ``--json`` flag (``json_option``) is processed before its other parameters and
remembered for the whole invocation, so that whatever goes wrong afterwards (a missing argument,
a bad value, an index that cannot be opened) is printed as one JSON object on stdout,
``{"error": {"code", "message", "exit_code"}}``, with the same non-zero exit code as without
``--json``. Without ``--json`` errors are one line on stderr.

When the reader of the output goes away (``citeline documents | head -1``), the command stops
quietly with exit code 141, as a Unix tool killed by SIGPIPE does (``quiet_broken_pipe``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
from rich.console import Console

from citeline.errors import EXIT_BROKEN_PIPE
from citeline.terminal import json_text

if TYPE_CHECKING:
    from citeline.kb import KnowledgeBase

F = TypeVar("F", bound=Callable[..., Any])

#: set in ``click.Context.meta`` (shared by the whole invocation) when --json was given
JSON_META_KEY = "citeline.json"


def _remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta[JSON_META_KEY] = True
    return value


def quiet_broken_pipe() -> NoReturn:
    """Stop quietly: nobody reads standard output any more. It is pointed at /dev/null first, so
    that Python's last flush of what is still buffered cannot fail with a second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout (captured output)
        pass
    sys.exit(EXIT_BROKEN_PIPE)


class OutputConsole(Console):
    """A rich console whose closed pipe stops the command quietly (rich exits 1 by default)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        quiet_broken_pipe()


def json_option(help: str = 'Print JSON (errors too: {"error": {...}} on stdout).') -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, is_eager=True, callback=_remember, help=help)


def json_requested(ctx: click.Context | None) -> bool:
    return bool(ctx is not None and ctx.meta.get(JSON_META_KEY))


def dumps(data: Any, indent: int | None = 2) -> str:
    """JSON for a terminal or a pipe: UTF-8 as is, controls and bidi overrides escaped."""
    return json_text(json.dumps(data, ensure_ascii=False, indent=indent))


def print_json(data: Any) -> None:
    click.echo(dumps(data))


def error_json(code: str, message: str, exit_code: int, **extra: Any) -> str:
    """The JSON printed for an error after --json (``extra``: what was done before it)."""
    return dumps({"error": {"code": code, "message": message, "exit_code": exit_code}, **extra})


def open_kb(*args: Any, **kwargs: Any) -> KnowledgeBase:
    """``citeline.kb.open_kb``, imported when a command opens an index: ``--help`` and the
    commands that open none do not load numpy, the store and the models."""
    from citeline.kb import open_kb as open_index

    return open_index(*args, **kwargs)
