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
import re
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from citeline.errors import EXIT_BROKEN_PIPE
from citeline.terminal import json_text

if TYPE_CHECKING:
    from rich.console import Console

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


# rich's markup escape and tags (rich/markup.py): lines are escaped and read the same way whether
# rich prints them or OutputConsole does
_ESCAPABLE = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_TAG = re.compile(r"(\\*)\[([a-z#/@][^[]*?)]")
#: the styles of our own lines; a line with any other tag is printed by rich
_PLAIN_STYLES = frozenset({"bold", "dim", "yellow", "red"})
#: what rich may print otherwise than as it is (":name:" can be an emoji; tabs, controls): left to rich
_NOT_PLAIN = re.compile(r":\S*?:|[^\n\S ]|[^\n -~\u00a0-\U0010ffff]")


def escape(markup: str) -> str:
    """Text made inert as console markup, exactly as ``rich.markup.escape`` makes it."""
    markup = _ESCAPABLE.sub(lambda m: f"{m.group(1)}{m.group(1)}\\{m.group(2)}", markup)
    if markup.endswith("\\") and not markup.endswith("\\\\"):
        return markup + "\\"
    return markup


def plain_text(markup: str) -> str | None:
    """What rich prints for ``markup`` where it draws no styles (a pipe, a file), for a line whose
    tags are balanced ``_PLAIN_STYLES``; None for any other line (rich prints it)."""
    pieces: list[str] = []
    open_styles: list[str] = []
    position = 0
    for match in _TAG.finditer(markup):
        escapes, tag = match.group(1), match.group(2)
        pieces.append(markup[position : match.start()])
        position = match.end()
        backslashes, escaped = divmod(len(escapes), 2)
        pieces.append("\\" * backslashes)
        if escaped:
            pieces.append(f"[{tag}]")
        elif tag in _PLAIN_STYLES:
            open_styles.append(tag)
        elif tag.startswith("/") and open_styles and tag[1:] in ("", open_styles[-1]):
            open_styles.pop()
        else:
            return None
    pieces.append(markup[position:])
    text = "".join(p.replace("\\[", "[") for p in pieces)  # per piece, as rich does
    return None if open_styles or _NOT_PLAIN.search(text) else text


class OutputConsole:
    """A console for a command's output whose closed pipe stops the command quietly (rich exits 1
    by default). rich (~0.03 s of a one-shot command's start) is loaded when first needed: a line
    of our few styles, printed where no styles are drawn (a pipe, a file), is written as rich
    writes it; anything else (a terminal, tables, progress, options) goes to a rich console."""

    def __init__(self, *, stderr: bool = False, soft_wrap: bool = True, highlight: bool = False) -> None:
        self._stderr = stderr
        self._options = {"stderr": stderr, "soft_wrap": soft_wrap, "highlight": highlight}
        self._rich: Console | None = None
        self.quiet = False

    @property
    def rich(self) -> Console:
        """The rich console behind this one (made on first use)."""
        if self._rich is None:
            self._rich = _rich_console(**self._options)
        return self._rich

    def print(self, *objects: Any, **options: Any) -> None:
        file = sys.stderr if self._stderr else sys.stdout
        line = plain_text(objects[0]) if len(objects) == 1 and isinstance(objects[0], str) else None
        if line is None or options or self._rich is not None or _styles_drawn(file):
            self.rich.print(*objects, **options)
            return
        if self.quiet:
            return
        try:
            file.write(line + "\n")
            file.flush()
        except BrokenPipeError:
            self.quiet = True
            quiet_broken_pipe()

    def __getattr__(self, name: str) -> Any:  # is_terminal, status, ...: the rich console's
        return getattr(self.rich, name)


def _styles_drawn(file: IO[str]) -> bool:
    """Whether rich could print ``file`` otherwise than plainly: a terminal, FORCE_COLOR or
    TTY_COMPATIBLE set, Jupyter, or an encoding other than UTF-8."""
    if "FORCE_COLOR" in os.environ or "TTY_COMPATIBLE" in os.environ or "IPython" in sys.modules:
        return True
    if (getattr(file, "encoding", None) or "utf-8").lower().replace("-", "") != "utf8":
        return True
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):
        return True


def _rich_console(**options: Any) -> Console:
    from rich.console import Console

    class QuietPipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            quiet_broken_pipe()

    return QuietPipeConsole(**options)


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
