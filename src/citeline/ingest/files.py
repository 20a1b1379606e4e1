"""Files as users keep them: which paths are read (regular files only, never opened otherwise),
how folders are walked, and how a file is read without blocking."""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from citeline.errors import ParseError
from citeline.ingest.registry import supported_extensions

if TYPE_CHECKING:
    from citeline.ingest.pipeline import IngestReport


def source_for(path: Path, root: Path) -> str:
    """The path relative to ``root`` with / separators, or the absolute path for a file outside it."""
    absolute = os.path.abspath(path)
    base = os.path.abspath(root)
    if absolute.startswith(base.rstrip(os.sep) + os.sep):  # under root: what relpath gives, cheaper
        return Path(absolute[len(base.rstrip(os.sep)) + 1 :]).as_posix()
    relative = os.path.relpath(absolute, base)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return Path(absolute).as_posix()
    return Path(relative).as_posix()


_KINDS = (
    (stat_module.S_ISFIFO, "a named pipe (FIFO)"),
    (stat_module.S_ISSOCK, "a socket"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISDIR, "a folder"),
)


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """None for a regular file (or a symbolic link to one), else what it is instead. Never opens it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "gone (removed while reading)"
    except OSError as exc:
        return f"not readable ({exc.strerror or exc})"
    if stat_module.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path, source: str, limit: int) -> tuple[bytes, float]:
    """(bytes, mtime) of a regular file of at most ``limit`` bytes. Opened without blocking and
    checked again once open, so a file swapped for a pipe in between cannot hang the reader."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat_module.S_ISREG(info.st_mode):
            raise ParseError(source, "not a regular file (it changed while being read); only files are read")
        if info.st_size > limit:
            raise too_big(source, info.st_size, limit)
        data = f.read(limit + 1)
    if len(data) > limit:
        raise too_big(source, len(data), limit)
    return data, info.st_mtime


def too_big(source: str, size: int, limit: int) -> ParseError:
    return ParseError(
        source,
        f"file is {size / 1048576:.1f} MB, above the {limit / 1048576:g} MB limit "
        "(raise it with CITELINE_MAX_FILE_MB or max_file_mb in citeline.toml)",
    )


@dataclass
class FolderWalk:
    """What one walk of a folder found, for reconciling the folder's documents afterwards."""

    folder: str  # absolute
    #: absolute paths of every entry with a supported extension, read or not
    seen: set[str] = field(default_factory=set)
    #: absolute paths of folders that could not be listed (their documents are never removed)
    unreadable: list[str] = field(default_factory=list)


def walk_folder(folder: Path, report: IngestReport, walk: FolderWalk) -> Iterator[tuple[str, Path]]:
    """(source as found, path) of each regular file with a supported extension under ``folder``;
    hidden files and folders are left out, other kinds of files are reported as skipped."""
    exts = set(supported_extensions())

    def unreadable(exc: OSError) -> None:
        where = exc.filename if exc.filename is not None else str(folder)
        walk.unreadable.append(os.path.abspath(where))
        report.failed.append((str(where), f"folder not readable ({exc.strerror or exc})"))

    for root, dirs, files in os.walk(folder, onerror=unreadable):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            child = Path(root) / name
            if name.startswith(".") or child.suffix.lower() not in exts:
                continue
            walk.seen.add(os.path.abspath(child))
            what = not_regular(child)
            if what is not None:
                report.skipped.append(
                    (str(child), f"{what}, not a regular file: only regular files are read")
                )
                continue
            yield str(child), child


def iter_files(
    paths: Iterable[str], report: IngestReport, walks: list[FolderWalk] | None = None
) -> Iterator[tuple[str, Path]]:
    """(source as the user named it, path) for each file; folders are walked recursively (each
    walk is appended to ``walks``). A path that does not exist is recorded in ``report.not_found``;
    one that is not a regular file fails with what it is."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            walk = FolderWalk(os.path.abspath(path))
            if walks is not None:
                walks.append(walk)
            yield from walk_folder(path, report, walk)
        elif os.path.lexists(path) and not os.path.exists(path):
            report.failed.append((given, "a broken symbolic link"))
        elif path.exists():
            what = not_regular(path)
            if what is None:
                yield given, path
            else:
                report.failed.append((given, f"{what}, not a regular file: only regular files are read"))
        else:
            report.failed.append((given, "no such file or folder"))
            report.not_found.append(given)
