"""The command-line console prints our lines without rich exactly as rich prints them to a pipe."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.markup import escape as rich_escape

from citeline.cli.output import OutputConsole, escape, plain_text

TEXTS = [
    "plain words",
    "[bold]not a tag[/bold] here",
    "\\[bold] escaped already",
    "ends with a backslash \\",
    "ends with two \\\\",
    "a\\\\[b] c\\[d] [x y] [#f00]",
    "brackets [1] [a=b] [/] [/bold] [@click]",
    "unicode: 漢字 café naïve 🙂 — «»",
    "path C:\\dir\\[file]\\",
    "memory=L<inf, memory-swap=2*L | (specify memory)",
    "two\nlines\n",
    "   leading and trailing   ",
    "",
]

LINES = [
    "[bold]{t}[/bold] after",
    "[dim]({t})[/dim]",
    "[yellow]note:[/yellow] {t}",
    "[red]error:[/red] {t}\nsecond line",
    "    {t}",
    "[bold] 1. {t}[/bold] {t} [dim](1:2) bm25#2  dense#1[/dim]",
]


def rich_prints(markup: str) -> str:
    file = io.StringIO()
    Console(file=file, soft_wrap=True, highlight=False).print(markup)
    return file.getvalue()


@pytest.mark.parametrize("text", TEXTS)
def test_escape_is_riches(text: str) -> None:
    assert escape(text) == rich_escape(text)


@pytest.mark.parametrize("line", LINES)
@pytest.mark.parametrize("text", TEXTS)
def test_a_line_printed_plainly_is_what_rich_prints(line: str, text: str) -> None:
    markup = line.format(t=escape(text))
    plain = plain_text(markup)
    assert plain is not None, markup
    assert plain + "\n" == rich_prints(markup)


@pytest.mark.parametrize(
    "markup",
    [
        "[bold]open",  # unbalanced: rich's own rendering
        "[green]other style[/green]",
        "[bold]a[/dim]",
        "an emoji :smile: code",
        "a tab\there",
        "a carriage\rreturn",
        "a bell \x07",
    ],
)
def test_other_lines_are_left_to_rich(markup: str) -> None:
    assert plain_text(markup) is None


def test_the_console_writes_plain_lines_without_rich_and_the_rest_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    console = OutputConsole()
    console.print("[bold]a[/bold] \\[b]")
    assert console._rich is None
    console.print("[green]c[/green] :smile:")
    assert console._rich is not None
    assert capsys.readouterr().out == "a [b]\nc 😄\n"
