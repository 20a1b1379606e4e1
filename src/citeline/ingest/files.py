"""Files as users keep them: which paths are read (regular files only, never opened otherwise),
how folders are walked, and how a file is read without blocking."""

from __future__ import annotations

import errno
import itertools
import os
import stat as stat_module
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from citeline.errors import ParseError
from citeline.ingest.registry import supported_extensions
from citeline.types import utf8_name

if TYPE_CHECKING:
    from citeline.ingest.report import IngestReport


def source_for(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """The path relative to ``root`` with / separators, or the absolute path for a file outside it."""
    return Sources(root)(os.path.abspath(path))


class Sources:
    """``source_for`` with ``root`` worked out once: a folder's files under it cost a slice."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.base = os.path.abspath(root)
        self.prefix = self.base.rstrip(os.sep) + os.sep

    def __call__(self, absolute: str) -> str:
        """The source of the file at ``absolute`` (an absolute, normalized path)."""
        if absolute.startswith(self.prefix):  # under root: what relpath gives, cheaper
            relative = absolute[len(self.prefix) :]
            return relative if os.sep == "/" else Path(relative).as_posix()
        relative = os.path.relpath(absolute, self.base)
        if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
            return Path(absolute).as_posix()
        return Path(relative).as_posix()


#: why a file whose name is not valid UTF-8 is not indexed: its source could not be stored
NOT_UTF8 = "its name is not valid UTF-8, so it cannot be stored as a source; rename it (convmv) to index it"


_KINDS = (
    (stat_module.S_ISFIFO, "a named pipe (FIFO)"),
    (stat_module.S_ISSOCK, "a socket"),
    (stat_module.S_ISCHR, "a character device"),
    (stat_module.S_ISBLK, "a block device"),
    (stat_module.S_ISDIR, "a folder"),
)


def regular_stat(path: str | os.PathLike[str]) -> tuple[os.stat_result | None, str | None]:
    """(its stat, None) for a regular file (or a symbolic link to one), else (None, what it is
    instead). Never opens it."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None, "a broken symbolic link" if os.path.islink(path) else "gone (removed while reading)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None, "a symbolic link loop"
        return None, f"not readable ({exc.strerror or exc})"
    mode = info.st_mode
    if stat_module.S_ISREG(mode):
        return info, None
    return None, next((what for test, what in _KINDS if test(mode)), "not a regular file")


def not_regular(path: str | os.PathLike[str]) -> str | None:
    """None for a regular file (or a symbolic link to one), else what it is instead. Never opens it."""
    return regular_stat(path)[1]


def unsupported(name: str, exts: Iterable[str]) -> str:
    """Why a regular file named ``name`` is not read: its type (the parser registry's message)."""
    dot = name.rfind(".")
    ext = name[dot:].lower() if 0 < dot < len(name) - 1 else "(none)"
    return f"unsupported file type '{ext}'; supported: {', '.join(sorted(exts))}"


def _skip_reason(entry: os.DirEntry[str], exts: Iterable[str]) -> str:
    """Why a folder's entry that is neither a supported file nor a folder to walk is not read."""
    try:
        if entry.is_dir():  # a link to a folder (the walk does not follow them)
            return "a symbolic link to a folder: links are not followed (add the folder itself to read it)"
    except OSError:
        pass
    regular, what = regular_stat(entry.path)
    if regular is None:
        return f"{what}, not a regular file: only regular files are read"
    return unsupported(entry.name, exts)


def read_regular(path: str | os.PathLike[str], source: str, limit: int) -> tuple[bytes, float]:
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
    #: the folder as the caller named it (skipped files are reported under that name)
    given: str = ""
    #: absolute paths of every entry with a supported extension, read or not
    seen: set[str] = field(default_factory=set)
    #: absolute paths of folders that could not be listed (their documents are never removed)
    unreadable: list[str] = field(default_factory=list)

    def named(self, path: str) -> str:
        """``path`` (absolute, under the folder) as the caller named the folder."""
        if not self.given or self.given == self.folder:
            return path
        if path == self.folder:
            return self.given
        return str(Path(self.given) / os.path.relpath(path, self.folder))


#: a file or folder modified less than this long before it was looked at may change again within the
#: clock's granularity without its modification time moving: it is looked at again next time
RACY_S = 2.0


class Listings:
    """What a walk listed in each folder (its supported files, sorted, and its subfolders), kept
    between walks in one process (a knowledge base's adds). Creating, removing or renaming an
    entry moves a folder's modification time, so a folder whose time is unchanged, and that was
    listed more than RACY_S after that time, holds the same entries: it is not listed again, and
    a folder added again costs one stat per folder and one per file. Only where modification
    times are trusted (``trust_mtime``)."""

    def __init__(self) -> None:
        self._by_folder: dict[str, tuple[tuple[int, int, int], float, frozenset[str], Listing]] = {}

    def get(self, folder: str, info: os.stat_result, exts: frozenset[str]) -> Listing | None:
        """What ``folder`` held when listed before, when still valid."""
        kept = self._by_folder.get(folder)
        if kept is None:
            return None
        identity, listed_at, kept_exts, listing = kept
        if identity != _identity(info) or kept_exts != exts or listed_at - info.st_mtime <= RACY_S:
            return None
        return listing

    def put(
        self, folder: str, info: os.stat_result, listed_at: float, exts: frozenset[str], listing: Listing
    ) -> None:
        """``folder``'s entries, listed from ``listed_at`` on, its stat taken before that."""
        self._by_folder[folder] = (_identity(info), listed_at, exts, listing)


class Listing(NamedTuple):
    """One folder's entries: the names of its files with a supported extension (sorted), the
    (name, path) of the subfolders to walk (in reverse name order: the walk pops them), and the
    (name, reason) of every other entry that is not hidden, which is not read."""

    files: Sequence[str]
    folders: Sequence[tuple[str, str]]
    skipped: Sequence[tuple[str, str]] = ()


def _identity(info: os.stat_result) -> tuple[int, int, int]:
    """A folder's device, inode and modification time: another folder moved to the same path, or
    an entry made in it, changes one of them."""
    return info.st_dev, info.st_ino, info.st_mtime_ns


#: a regular file's size and modification time, as a stat() gave them
Stamp = tuple[int, float]
#: a file found: its absolute path and its stamp (None for a file named by the caller: not looked at yet)
Found = tuple[str, Stamp | None]


class FileList(NamedTuple):
    """Files found together (one folder's, or one file named by the caller): their absolute paths,
    sizes and modification times side by side (None: not looked at yet). Plain numbers, no object
    per file kept: adding a large folder again then gives the garbage collector little to count,
    so it seldom runs in the middle (a full collection in a large process costs as much as the
    whole re-add)."""

    paths: list[str]
    sizes: list[int | None]
    mtimes: list[float | None]

    def found(self) -> Iterator[Found]:
        for path, size, mtime in zip(self.paths, self.sizes, self.mtimes, strict=True):
            yield path, None if size is None or mtime is None else (size, mtime)


def walk_folder(
    folder: str, report: IngestReport, walk: FolderWalk, listings: Listings | None = None
) -> Iterator[FileList]:
    """(absolute path, size, mtime) of each regular file with a supported extension under ``folder``
    (absolute), one list per folder (a folder added again is then handled a list at a time, not
    a file at a time), in the order of a sorted top-down ``os.walk`` that does not follow links
    to folders; hidden files and folders are left out, other kinds of files are reported as
    skipped (named as under the folder the caller named). Each file is stat()ed once, here.
    ``listings``: what earlier walks listed, reused for a folder that has not changed since."""
    exts = frozenset(supported_extensions())
    stat, S_ISREG = os.stat, stat_module.S_ISREG  # looked up once: this loop runs per file
    pending = [folder]
    while pending:
        top = pending.pop()
        folder_info = None
        if listings is not None:
            try:  # before listing: an entry made while it is listed moves the time past this one
                folder_info = stat(top)
            except OSError:
                folder_info = None
        listed = None if folder_info is None or listings is None else listings.get(top, folder_info, exts)
        if listed is None:
            listed_at = time.time()
            try:
                listed = _list(top, exts)
            except OSError as exc:
                where = exc.filename if exc.filename is not None else top
                walk.unreadable.append(os.path.abspath(where))
                report.failed.append(
                    (walk.named(os.path.abspath(where)), f"folder not readable ({exc.strerror or exc})")
                )
                continue
            if listings is not None and folder_info is not None:
                listings.put(top, folder_info, listed_at, exts, listed)
        files, folders, skipped = listed
        prefix = top if top.endswith(os.sep) else top + os.sep
        for name, reason in skipped:
            report.skipped.append((walk.named(prefix + name), reason))
        if not all(map(str.isascii, files)) or not all(name.isascii() for name, _path in folders):
            files, folders = _utf8_names(files, folders, prefix, report, walk)
        paths = [prefix + name for name in files]  # what entry.path gives
        walk.seen.update(paths)
        found = FileList([], [], [])
        fd = _open_folder(top)  # names looked up from the folder: no walk down the whole path each time
        try:
            for name, path in zip(files, paths, strict=True):
                try:  # the common case inline: a folder added again costs little more than its stats
                    info = stat(path) if fd is None else stat(name, dir_fd=fd)
                    if S_ISREG(info.st_mode):
                        found.paths.append(path)
                        found.sizes.append(info.st_size)
                        found.mtimes.append(info.st_mtime)
                        continue
                except OSError:
                    pass
                regular, what = regular_stat(path)  # why not (or regular by now)
                if regular is None:
                    report.skipped.append(
                        (walk.named(path), f"{what}, not a regular file: only regular files are read")
                    )
                    continue
                found.paths.append(path)
                found.sizes.append(regular.st_size)
                found.mtimes.append(regular.st_mtime)
        finally:
            if fd is not None:
                os.close(fd)
        if found.paths:
            yield found
        pending.extend(path for _name, path in folders)


def _utf8_names(
    files: Sequence[str],
    folders: Sequence[tuple[str, str]],
    prefix: str,
    report: IngestReport,
    walk: FolderWalk,
) -> tuple[list[str], list[tuple[str, str]]]:
    """The files and subfolders whose names are valid UTF-8; the others are reported as failed
    (nothing under such a folder is read)."""
    for name in files:
        if not utf8_name(name):
            report.failed.append((walk.named(prefix + name), NOT_UTF8))
    for name, path in folders:
        if not utf8_name(name):
            report.failed.append((walk.named(path), f"a folder: {NOT_UTF8} (nothing under it was read)"))
    return [n for n in files if utf8_name(n)], [(n, p) for n, p in folders if utf8_name(n)]


def _open_folder(top: str) -> int | None:
    """A descriptor of the folder ``top`` to stat its files by name, or None (not supported here,
    or it cannot be opened: its files are then stat()ed by path)."""
    if os.stat not in os.supports_dir_fd:
        return None
    try:
        return os.open(top, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _list(top: str, exts: frozenset[str]) -> Listing:
    """``top``'s entries (see :class:`Listing`): subfolders that are neither hidden nor links are
    walked; hidden entries are left out unsaid (.git, .DS_Store); any other entry that is not a
    file with an extension in ``exts`` is skipped with the reason. Entries are looked at as they
    come: none kept."""
    files: list[str] = []
    folders: list[tuple[str, str]] = []
    skipped: list[tuple[str, str]] = []
    with os.scandir(top) as it:
        for entry in it:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir and not entry.is_symlink():
                if not name.startswith("."):
                    folders.append((name, entry.path))
                continue
            dot = name.rfind(".")  # Path.suffix: none for ".name", "name." or no dot
            if 0 < dot < len(name) - 1 and name[dot:].lower() in exts:
                files.append(name)
            elif not name.startswith("."):
                skipped.append((name, _skip_reason(entry, exts)))
    files.sort()
    folders.sort(reverse=True)
    skipped.sort()
    return Listing(files, folders, skipped)


def iter_files(
    paths: Iterable[str], report: IngestReport, walks: list[FolderWalk] | None = None
) -> Iterator[Found]:
    """(absolute path, stamp or None) of each file (see :func:`iter_file_lists`)."""
    return itertools.chain.from_iterable(files.found() for files in iter_file_lists(paths, report, walks))


def iter_file_lists(
    paths: Iterable[str],
    report: IngestReport,
    walks: list[FolderWalk] | None = None,
    listings: Listings | None = None,
) -> Iterator[FileList]:
    """(absolute path, stamp or None) of each file, a list at a time: a folder's files one list
    per folder, a file named by the caller a list of one. Folders are walked recursively (each
    walk is appended to ``walks``; ``listings``: see :func:`walk_folder`). A path that does not exist is recorded in
    ``report.not_found``; one that is not a regular file fails with what it is."""
    for given in paths:
        path = Path(given)
        if not utf8_name(os.path.abspath(given)):
            report.failed.append((given, NOT_UTF8))
        elif path.is_dir():
            walk = FolderWalk(os.path.abspath(path), given)
            if walks is not None:
                walks.append(walk)
            yield from walk_folder(walk.folder, report, walk, listings)
        elif os.path.lexists(path) and not os.path.exists(path):
            report.failed.append((given, "a broken symbolic link"))
        elif path.exists():
            what = not_regular(path)
            if what is None:
                yield FileList([os.path.abspath(path)], [None], [None])
            else:
                report.failed.append((given, f"{what}, not a regular file: only regular files are read"))
        else:
            report.failed.append((given, "no such file or folder"))
            report.not_found.append(given)
