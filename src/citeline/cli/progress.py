"""The progress bar of `add`, `embed` and `reindex` (on a terminal only): files and chunks
embedded, with their rate and, once the total is known (`embed`: the pending chunks), the time left."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from citeline.cli.output import OutputConsole


@contextmanager
def progress_bar(enabled: bool, err: OutputConsole) -> Iterator[Callable[[str, int], None] | None]:
    if not enabled:
        yield None
        return
    # imported here: only `add`, `embed` and `reindex` draw progress (20 ms of every other command's start)
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskID,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),  # once the total is known (`embed`: the pending chunks)
        console=err.rich,
        transient=True,
    ) as bar:
        names = {"file": "files", "chunks": "chunks embedded", "pending": "chunks embedded"}
        tasks: dict[str, TaskID] = {}  # made on first use: `embed` shows no files

        def update(event: str, amount: int) -> None:
            name = names.get(event, event)
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=None, rate="")
            task = tasks[name]
            if event == "pending":  # the background pass: how many chunks it has to embed
                bar.update(task, total=amount)
                return
            bar.advance(task, amount)
            speed = bar.tasks[task].speed
            bar.update(task, rate=f"{speed:,.0f}/s" if speed else "")

        yield update
