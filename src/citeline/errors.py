"""User-facing errors. Each message says what went wrong and what to do about it.

Exit codes of the ``citeline`` command (README, "Exit codes"):

* 0 ``EXIT_OK``: everything asked for was done.
* 1 ``EXIT_ERROR``: an error; nothing (more) was done (the message says why).
* 2 ``EXIT_USAGE``: a usage error: an unknown option, a bad value, a path that does not exist.
* 3 ``EXIT_PARTIAL``: some files failed (the others were done; the summary says which).
* 4 ``EXIT_UNAVAILABLE``: the index could not be written: busy (another writer), read-only, disk full;
  or the Ray cluster of ``--workers`` cannot be reached or refuses this client now.
* 5 ``EXIT_REGRESSION``: a quality gate held: ``reindex --compare`` found a metric worse by more
  than ``--max-drop`` with the new embedder, so nothing was swapped (the message names it).
* 70 ``EXIT_INTERNAL``: a bug (CITELINE_DEBUG=1 prints the traceback).
* 130: interrupted (Ctrl-C).
* 141: the reader of the output went away (``citeline documents | head -1``): nothing is printed,
  as a Unix tool killed by SIGPIPE exits (128 + 13).
"""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_UNAVAILABLE = 4
EXIT_REGRESSION = 5
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class CitelineError(Exception):
    """Base class: the CLI prints the message (no traceback) and exits non-zero."""

    exit_code = EXIT_ERROR


class ParseError(CitelineError):
    """A file could not be read as a document. The batch goes on without it."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class UnsupportedFormatError(ParseError):
    pass


class NoTextError(ParseError):
    """The file was read but holds no text to index (empty, headings only, a navigation-only HTML
    page): reported as skipped, not failed, since there is nothing wrong with it."""


class NotAnIndexError(CitelineError):
    def __init__(self, path: str, reason: str = "") -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"{path} is not a citeline index{detail}. Point --index (or CITELINE_INDEX) at an "
            "index folder, or at an empty or new folder to create one."
        )


class IndexFolderError(CitelineError):
    """The index folder cannot be created or opened where it was asked for."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(
            f"Cannot create the index folder {path}: {reason}. Point --index (or CITELINE_INDEX) "
            "at a folder you can write."
        )


_FOLDER_ERRORS = {
    errno.ENOTDIR: "a part of its path is a file, not a folder",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.ENAMETOOLONG: "the path is too long",
    # mkdir -p reports ENOENT where a parent cannot hold folders (/proc, /sys)
    errno.ENOENT: "folders cannot be made there",
}


def folder_error_reason(exc: OSError) -> str:
    """Why a folder could not be created or read, in words, with the system's own message."""
    said = exc.strerror or type(exc).__name__
    reason = _FOLDER_ERRORS.get(exc.errno or 0)
    return f"{reason} ({said})" if reason else said


class SchemaTooNewError(CitelineError):
    def __init__(self, path: str, found: int, supported: int) -> None:
        super().__init__(
            f"{path} has index schema version {found}, newer than this citeline supports "
            f"({supported}). Upgrade citeline to open it."
        )


class EmbedderMismatchError(CitelineError):
    def __init__(self, index_embedder: str, requested: str) -> None:
        super().__init__(
            f"This index holds vectors from embedder '{index_embedder}', not '{requested}'. "
            f"Vectors from two embedders cannot be mixed: run `citeline reindex --embedder {requested}` "
            "to rebuild them, or use the index's embedder."
        )


class UnknownBackendError(CitelineError):
    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        super().__init__(f"Unknown {kind} '{name}'. Choose one of: {', '.join(sorted(known))}.")


class MissingExtraError(CitelineError, ImportError):
    """An optional dependency is not installed."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        super().__init__(
            f"{feature} needs the '{package}' package. Install it with: pip install 'citeline[{extra}]'"
        )


class InvalidQuestionError(CitelineError):
    """An empty or overlong question (or search query): the command was used wrongly."""

    exit_code = EXIT_USAGE


class DocumentNotFoundError(CitelineError):
    def __init__(self, source: str) -> None:
        super().__init__(f"No document '{source}' in this index. `citeline documents` lists what is indexed.")


class ConfigError(CitelineError):
    pass


class ConvexWithExpansionError(ConfigError):
    """Convex fusion weighs one BM25 list against one dense list; query expansion adds more lists."""

    def __init__(self, where: str) -> None:
        super().__init__(
            f"fusion = convex cannot fuse the extra lists of query expansion ({where}): convex "
            "fusion weighs one BM25 list against one dense list. Use fusion = rrf, or query_expansion = none."
        )


class GeneratorError(CitelineError):
    """The generator backend failed (server down, bad key, model file missing)."""


class AccessError(CitelineError):
    """A read without a principal, or by one that may not read what it asked for."""


class UsageError(CitelineError):
    """The command was given something it cannot use (a path that does not exist)."""

    exit_code = EXIT_USAGE


class IndexUnavailableError(CitelineError):
    """The index cannot be written now: another writer holds it, it is read-only, or the disk is
    full. Nothing was half-written; the command can be run again once the cause is gone."""

    exit_code = EXIT_UNAVAILABLE


class WorkersUnavailableError(CitelineError):
    """The Ray cluster given to ``--workers`` cannot be reached or refuses this client (no token,
    another token); nothing was added. The message names the address and what to check."""

    exit_code = EXIT_UNAVAILABLE


class SwapRefusedError(CitelineError):
    """``reindex --compare``: the new embedder made a metric worse by more than ``--max-drop`` on
    the question set, so the index keeps its embedder. ``comparison`` holds both reports."""

    exit_code = EXIT_REGRESSION

    def __init__(self, message: str, comparison: object = None) -> None:
        super().__init__(message)
        self.comparison = comparison


class IndexBusyError(IndexUnavailableError):
    pass


class ReadOnlyIndexError(IndexUnavailableError):
    pass


class DiskFullError(IndexUnavailableError):
    pass
