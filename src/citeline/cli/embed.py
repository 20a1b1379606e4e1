"""`citeline embed` (registered on the main command by ``register``): the background pass of progressive indexing (``add --progressive`` or
``--background`` writes chunks with the fast embedder's vectors; this adds the index's own).

The pass commits a batch at a time, so it can be killed at any moment (SIGKILL included) and run
again: it resumes with what is still pending. One pass per index folder at a time (a lock file in
the folder; a second one exits at once), so no chunk is embedded by two passes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import click

from citeline.cli.output import OutputConsole, json_option, open_kb, print_json
from citeline.cli.progress import progress_bar
from citeline.errors import IndexBusyError
from citeline.settings import is_url

#: in the index folder: held by the running pass; its output when started by add --background
LOCK_NAME = "embed.lock"
LOG_NAME = "embed.log"


@contextlib.contextmanager
def pass_lock(location: str) -> Iterator[None]:
    """Hold the index folder's embed lock (released when the process ends, even killed);
    IndexBusyError when another pass holds it. A database URL has no folder: no lock."""
    if is_url(location):
        yield
        return
    handle: IO[str] = open(Path(location) / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 (held)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise IndexBusyError(
                f"Another `citeline embed` is filling in the vectors of {location}; it resumes "
                "where it stops, so there is nothing to do here."
            ) from exc
        yield
    finally:
        handle.close()


def start_background(location: str) -> int:
    """Start `citeline embed` for the index, detached from this process and its terminal (it
    survives the shell); its output goes to the index folder's embed.log. The child's pid."""
    log_path = os.devnull if is_url(location) else str(Path(location) / LOG_NAME)
    with open(log_path, "ab") as log:
        child = subprocess.Popen(
            [sys.executable, "-m", "citeline", "--index", location, "embed"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    return child.pid


@click.command()
@json_option()
@click.pass_context
def embed(ctx: click.Context, as_json: bool) -> None:
    """Fill in the index's embedder's vectors for chunks added with --progressive/--background.

    Safe to stop at any moment and run again: it resumes where it stopped. Searches and answers
    never wait for it; `citeline status` shows how many chunks have their full vectors."""
    kb = open_kb(ctx.obj["index"], create=False)
    err = OutputConsole(stderr=True, highlight=False, soft_wrap=True)
    with pass_lock(kb.settings.index), progress_bar(not as_json and sys.stderr.isatty(), err) as progress:
        result = kb.embed(progress)
    stats = kb.status()
    result["full_vectors"], result["chunks"] = stats["full_vectors"], stats["chunks"]
    if as_json:
        print_json(result)
        return
    OutputConsole(soft_wrap=True, highlight=False).print(
        f"embedded {result['embedded']} chunk texts with {result['embedder']} in {result['seconds']:.1f} s; "
        f"{result['full_vectors']} of {result['chunks']} chunks have full vectors"
    )


def register(main: click.Group) -> None:
    main.add_command(embed)
