"""The PostgreSQL store's records besides documents: meta, settings, the per-index secret, API keys,
traces. A mixin of PostgresStore (index/postgres.py); every write is one transaction.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
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
from citeline.index.base import ApiKey
from citeline.settings import redact_url
from citeline.trace import Trace, TraceSummary

# psycopg_pool logs every failed reconnection attempt as a warning; with no handler configured
# Python prints those on stderr in the middle of a command's output. A handler of its own keeps
# them out of plain command output while an application that configures logging still gets them.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())

_KEY_COLUMNS = 'id, "user", key_hash, groups, role, created_at, revoked_at, label, meta'
#: pg_advisory_xact_lock key of the single writer (writers take turns, readers never wait)
WRITER_LOCK = 0x6369_7465_6C69_6E65 & 0x7FFF_FFFF_FFFF_FFFF


def _api_key(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(
        id=row[0],
        user=row[1],
        key_hash=row[2],
        groups=tuple(json.loads(row[3])),
        role=row[4],
        created_at=row[5],
        revoked_at=row[6],
        label=row[7],
        meta=json.loads(row[8]),
    )


def storage_error(exc: BaseException, url: str, location: str) -> CitelineError | None:
    """The user-facing error for a store that cannot be written or reached now (busy writer lock,
    read-only, disk full, server gone), else None. Exit code 4, as the embedded store's."""
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
        return IndexUnavailableError(f"{location} cannot be reached now ({detail}); nothing was changed.")
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


def unreachable_error(exc: BaseException, url: str, location: str) -> CitelineError | None:
    """IndexUnavailableError (exit code 4: run again) when opening failed because the server
    cannot be reached or cannot take sessions now: refused, timed out, closed, restarting. None
    when the server refused us for good (password, database, role) or the error is another one."""
    if isinstance(exc, PoolTimeout):
        return storage_error(exc, url, location)
    if not isinstance(exc, psycopg.OperationalError) or exc.sqlstate not in (None, "57P01", "57P03", "53300"):
        return None
    message = str(exc)
    if "FATAL:" in message and not any(t in message for t in _TRANSIENT_AT_CONNECT):
        return None
    return storage_error(exc, url, location)


class PostgresRecords:
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

    def _one(self, sql: str, params: Iterable[Any] = ()) -> Any:
        with self._read() as conn:
            row = conn.execute(sql, tuple(params)).fetchone()
        return None if row is None else row[0]

    def meta(self, key: str) -> str | None:
        value = self._one("SELECT value FROM meta WHERE key = %s", (key,))
        return None if value is None else str(value)

    @staticmethod
    def _set_meta(conn: Any, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    @staticmethod
    def _bump(conn: Any, chunks: int = 0, tokens: int = 0) -> None:
        """Move the corpus totals (BM25's N and average length) and the generation, last in a write."""
        conn.execute(
            "UPDATE counters SET value = value + CASE name WHEN 'generation' THEN 1 WHEN 'chunks' THEN %s "
            "ELSE %s END",
            (chunks, tokens),
        )

    # -- settings -------------------------------------------------------------------------------

    def stored_settings(self) -> dict[str, Any]:
        with self._read() as conn:
            rows = conn.execute("SELECT key, value FROM settings ORDER BY key").fetchall()
        return {k: json.loads(v) for k, v in rows}

    def save_settings(self, values: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        with self._write() as conn:
            for key in remove:
                conn.execute("DELETE FROM settings WHERE key = %s", (key,))
            for key, value in values.items():
                conn.execute(
                    "INSERT INTO settings (key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (key, json.dumps(value)),
                )

    def secret(self) -> bytes:
        value = self.meta("secret")
        if value is None:
            with self._read() as conn:  # first writer wins; everyone reads the winner's
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('secret', %s) ON CONFLICT (key) DO NOTHING",
                    (secrets.token_hex(32),),
                )
            value = self.meta("secret")
        return bytes.fromhex(value or "")

    def adopt_secret(self, secret: bytes) -> None:
        with self._write() as conn:
            self._set_meta(conn, "secret", secret.hex())

    # -- API keys -------------------------------------------------------------------------------

    def add_api_key(self, key: ApiKey) -> None:
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    key.id,
                    key.user,
                    key.key_hash,
                    json.dumps(list(key.groups)),
                    key.role,
                    key.created_at or time.time(),
                    key.revoked_at,
                    key.label,
                    json.dumps(dict(key.meta)),
                ),
            )

    def api_keys(self) -> list[ApiKey]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at").fetchall()
        return [_api_key(r) for r in rows]

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)
            ).fetchone()
        return None if row is None else _api_key(row)

    def revoke_api_key(self, key_id: str) -> bool:
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE api_keys SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL",
                (time.time(), key_id),
            )
            return bool(cur.rowcount > 0)

    # -- traces ---------------------------------------------------------------------------------

    def save_trace(self, trace: Trace) -> None:
        with self._read() as conn:  # one statement: no writer lock needed
            conn.execute(
                "INSERT INTO traces (trace_id, created_at, question, refused, support, data, owner) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s)",
                (
                    trace.id,
                    trace.created_at or time.time(),
                    trace.question,
                    bool(trace.refused),
                    trace.support,
                    json.dumps(trace.to_json()),
                    trace.owner,
                ),
            )

    def get_trace(self, trace_id: str) -> Trace | None:
        with self._read() as conn:
            row = conn.execute("SELECT data, owner FROM traces WHERE trace_id = %s", (trace_id,)).fetchone()
        if row is None:
            return None
        return Trace.from_json({**json.loads(row[0]), "owner": row[1]})

    def list_traces(
        self, owner: str | None = None, failed_only: bool = False, limit: int = 20
    ) -> list[TraceSummary]:
        conds: list[str] = []
        params: list[Any] = []
        if failed_only:
            conds.append("(refused OR support < 1.0)")
        if owner is not None:
            conds.append("owner = %s")
            params.append(owner)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT trace_id, created_at, question, refused, support, owner FROM traces {where} "
                "ORDER BY created_at DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [TraceSummary(r[0], r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows]
