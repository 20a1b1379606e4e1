"""The PostgreSQL store's connections: a pool, the read and write contexts (writers take turns on
an advisory lock; readers never wait), and the errors a server that is busy, read-only, full or
gone becomes. A mixin of PostgresStore (store.py); every write is one transaction.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import PoolTimeout

from citeline.errors import (
    CitelineError,
    DiskFullError,
    IndexBusyError,
    IndexUnavailableError,
    ReadOnlyIndexError,
)
from citeline.index.sql.dialect import POSTGRES, Session
from citeline.url_secrets import redact_url

# psycopg_pool logs every failed reconnection attempt as a warning; with no handler configured
# Python prints those on stderr in the middle of a command's output. A handler of its own keeps
# them out of plain command output while an application that configures logging still gets them.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

#: pg_advisory_xact_lock key of the single writer (writers take turns, readers never wait)
WRITER_LOCK = 0x6369_7465_6C69_6E65 & 0x7FFF_FFFF_FFFF_FFFF


def storage_error(
    exc: BaseException, url: str, location: str, *, opening: bool = False
) -> CitelineError | None:
    """The user-facing error for a store that cannot be written or reached now (busy writer lock,
    read-only, disk full, server gone), else None. Exit code 4, as the embedded store's.
    ``opening``: nothing was done yet (else the command's last step was rolled back, and what it
    did before stays: an add prints that summary above the error)."""
    detail = redact_url(
        str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__, secret_of=url
    )
    if isinstance(exc, pg_errors.LockNotAvailable):
        return IndexBusyError(
            f"{location} is busy: another process is writing to it and did not finish within the lock "
            "timeout (lock_timeout_s). Nothing was changed by this command's last step; run it again "
            "when the other writer is done."
        )
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return ReadOnlyIndexError(f"{location} is read-only here ({detail}): nothing can be written.")
    if isinstance(exc, (pg_errors.DiskFull, pg_errors.OutOfMemory)):
        return DiskFullError(
            f"Could not write to {location}: the server is out of disk or memory ({detail}). The last "
            "write was rolled back, so nothing is half-written: run the command again once there is room."
        )
    if isinstance(exc, PoolTimeout):
        why = _why_no_connection(url)
        if why is not None:  # the pool only says it waited: say what connecting answers
            detail = f"{detail}: {redact_url(why, secret_of=url)}"
    if isinstance(exc, (psycopg.OperationalError, PoolTimeout)):
        if opening:
            return IndexUnavailableError(f"{location} cannot be reached now ({detail}); nothing was changed.")
        return IndexUnavailableError(
            f"{location} cannot be reached now ({detail}); the step in progress was rolled back, so "
            "nothing is half-written: run the command again once the server is back."
        )
    return None


def _why_no_connection(url: str) -> str | None:
    """What connecting to ``url`` answers now (a refused connection, a server starting up), or
    None when it connects: then every pooled connection was busy."""
    try:
        with psycopg.connect(url, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        return lines[0] if lines else type(exc).__name__


#: what the server answers at connection time when it cannot take sessions *now* (it is starting,
#: stopping or recovering from a crash, or full); anything else it says then (a wrong password,
#: no such database or role, pg_hba) will not change by trying again
_TRANSIENT_AT_CONNECT = (
    "the database system is",  # starting up, shutting down, in recovery mode, not yet accepting...
    "too many clients",
    "too many connections",
    "terminating connection due to administrator command",
)


#: libpq's preamble to what the server (or libpq itself) said: the address is in the message already
_CONNECTING = re.compile(r"^connection failed: connection to server at .*? failed: (FATAL:\s+)?")
#: what libpq or the server says when it refuses the login itself: trying again will not help
_LOGIN_REFUSED = ("no password supplied", "password authentication failed", "authentication failed")


def login_error(exc: BaseException, url: str, location: str) -> CitelineError | None:
    """A CitelineError (exit code 1) when the server refused the login (no password given, a wrong
    one), else None."""
    if not isinstance(exc, psycopg.OperationalError):
        return None
    message = str(exc)
    if exc.sqlstate not in ("28P01", "28000") and not any(t in message for t in _LOGIN_REFUSED):
        return None
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    said = _CONNECTING.sub("", lines[-1]) if lines else type(exc).__name__
    detail = redact_url(said, secret_of=url)
    return CitelineError(
        f"PostgreSQL at {location} refused the login ({detail}). Give the password in ~/.pgpass or "
        "PGPASSWORD (or in the URL), and check the user name; trying again as it is will not help."
    )


def unreachable_error(exc: BaseException, url: str, location: str) -> CitelineError | None:
    """IndexUnavailableError (exit code 4: run again) when opening failed because the server
    cannot be reached or cannot take sessions now: refused, timed out, closed, restarting. None
    when the server refused us for good (password, database, role) or the error is another one."""
    if isinstance(exc, PoolTimeout):
        return storage_error(exc, url, location, opening=True)
    if login_error(exc, url, location) is not None:
        return None
    if not isinstance(exc, psycopg.OperationalError) or exc.sqlstate not in (None, "57P01", "57P03", "53300"):
        return None
    message = str(exc)
    if "FATAL:" in message and not any(t in message for t in _TRANSIENT_AT_CONNECT):
        return None
    return storage_error(exc, url, location, opening=True)


class PostgresConnections:
    """The store's connections: a pool (psycopg_pool) of autocommit connections."""

    pool: Any
    url: str
    location: str
    #: how long a write waits for another writer's transaction (lock_timeout_s), in ms
    lock_timeout_ms: int = 30_000

    @contextmanager
    def _read(self) -> Iterator[Any]:
        # a read that writes (a trace, the secret) may meet a read-only server: ReadOnlyIndexError
        try:
            with self.pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise (storage_error(exc, self.url, self.location) or exc) from None

    @contextmanager
    def _write(self) -> Iterator[Any]:
        """One transaction holding the writer lock (taken first, so writers never deadlock),
        waiting at most ``lock_timeout_ms`` for it. A write that fails because the store is busy,
        read-only, full or gone raises the matching IndexUnavailableError after the rollback."""
        try:
            with self.pool.connection() as conn, conn.transaction():
                previous = conn.execute("SELECT current_setting('lock_timeout')").fetchone()[0]
                conn.execute(
                    "SELECT set_config('lock_timeout', %s, true)", (f"{max(1, self.lock_timeout_ms)}ms",)
                )
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (previous,))
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise (storage_error(exc, self.url, self.location) or exc) from None

    @contextmanager
    def _snapshot(self) -> Iterator[Any]:
        """Reads that agree with each other: one read-only transaction (REPEATABLE READ)."""
        with self._read() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield conn

    # -- the shared code's contexts (index/sql/records.py) ----------------------------------------

    @contextmanager
    def reading(self, snapshot: bool = False) -> Iterator[Session]:
        with self._snapshot() if snapshot else self._read() as conn:
            yield Session(conn, POSTGRES)

    @contextmanager
    def writing(self) -> Iterator[Session]:
        with self._write() as conn:
            yield Session(conn, POSTGRES)

    @contextmanager
    def statement(self) -> Iterator[Session]:
        with self._read() as conn:  # one statement: no writer lock needed
            yield Session(conn, POSTGRES)
