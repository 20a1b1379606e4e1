"""User-facing errors. Each message says what went wrong and what to do about it.

Exit codes of the ``citeline`` command (README, "Exit codes"):

* 0 ``EXIT_OK``: everything asked for was done.
* 1 ``EXIT_ERROR``: an error; nothing (more) was done (the message says why).
* 2 ``EXIT_USAGE``: a usage error: an unknown option, a bad value, a path that does not exist.
* 3 ``EXIT_PARTIAL``: some files failed (the others were done; the summary says which).
* 4 ``EXIT_UNAVAILABLE``: the index could not be written: busy (another writer), read-only, disk full.
* 70 ``EXIT_INTERNAL``: a bug (CITELINE_DEBUG=1 prints the traceback).
* 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_UNAVAILABLE = 4
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


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


class NotAnIndexError(CitelineError):
    def __init__(self, path: str, reason: str = "") -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(
            f"{path} is not a citeline index{detail}. Point --index (or CITELINE_INDEX) at an "
            "index folder, or at an empty or new folder to create one."
        )


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
    pass


class DocumentNotFoundError(CitelineError):
    def __init__(self, source: str) -> None:
        super().__init__(f"No document '{source}' in this index. `citeline documents` lists what is indexed.")


class ConfigError(CitelineError):
    pass


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


class IndexBusyError(IndexUnavailableError):
    pass


class ReadOnlyIndexError(IndexUnavailableError):
    pass


class DiskFullError(IndexUnavailableError):
    pass
