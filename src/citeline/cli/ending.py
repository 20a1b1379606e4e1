"""How the `citeline` program ends: one-shot commands skip the interpreter's teardown.

Once `citeline search` or `ask` has printed its result, Python's shutdown (collecting every
object, tearing down the modules of numpy, onnxruntime and tokenizers, freeing onnxruntime's
arenas) took 0.06-0.14 s of a 0.5-0.6 s `search` process (benchmarks/results/oneshot.md). Such a
command calls ``end_quickly()`` and closes its index itself; ``run``, the program's entry point,
then does what shutdown does that matters (waits for the threads that are not daemons, runs the
atexit handlers, flushes standard output and error) and leaves with ``os._exit``.

Only ``run`` ends a process this way, and not under a profiler or tracer (``python -m cProfile``
writes its report after ``main``): code that calls ``main`` (click's test runner, an
application) gets its SystemExit as always.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Callable
from typing import NoReturn

from citeline.errors import EXIT_BROKEN_PIPE

_quick = False


def end_quickly() -> None:
    """This command holds nothing that the interpreter's teardown must release: its index is
    closed by the command, everything else by the operating system."""
    global _quick
    _quick = True


def run(main: Callable[[], object]) -> NoReturn:
    """Run the command line ``main`` (click, standalone: it ends with SystemExit) and exit."""
    try:
        main()
        code = 0
    except SystemExit as stop:
        if not _quick:
            raise
        code = _exit_code(stop.code)
    if not _quick or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)  # a profiler or tracer (python -m cProfile, a debugger) reports after main
    _finish(code)


def _exit_code(code: object) -> int:
    """The status SystemExit(code) gives: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _finish(code: int) -> NoReturn:
    """What the interpreter's shutdown does before its teardown, in its order; then exit."""
    main_thread = threading.main_thread()
    for thread in threading.enumerate():
        if thread is not main_thread and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # nobody reads any more: as quiet_broken_pipe ends (cli/output.py)
        code = EXIT_BROKEN_PIPE
    os._exit(code)
