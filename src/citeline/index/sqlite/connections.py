"""The embedded store's connections and records besides documents: settings, the per-index secret,
API keys, traces.

A mixin of SqliteStore (index/sqlite.py); every write is one transaction.

Connections: one per thread (``conn``). A store is shared by threads (the server answers on
several); one SQLite connection shared by them would mix one thread's transaction with another's
statements (a trace written while another thread reads fails with "database table is locked" or
worse). With a connection each, WAL gives every reader its own consistent snapshot, and writers
wait for each other (busy timeout). Connections of threads that ended are closed when the next
one is opened, and all of them by ``close()``.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any

from citeline.index.base import ApiKey
from citeline.index.sqlite.schema import transaction
from citeline.trace import Trace, TraceSummary

_KEY_COLUMNS = "id, user, key_hash, groups, role, created_at, revoked_at, label, meta"


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


class SqliteRecords(ABC):
    _lock: threading.RLock

    @abstractmethod
    def _connect(self) -> sqlite3.Connection:
        """A new connection to the index file (the store decides how: read-write or read-only)."""

    def _init_connections(self) -> None:
        self._local = threading.local()
        self._conns: dict[int, tuple[weakref.ref[threading.Thread], sqlite3.Connection]] = {}
        self._conns_lock = threading.Lock()
        self._busy_ms = 30000
        self._closed = False

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection to the index (opened on first use)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        with self._conns_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            for ident, (thread, other) in list(self._conns.items()):
                alive = thread()
                if alive is None or not alive.is_alive():
                    other.close()
                    del self._conns[ident]
            conn = self._connect()
            self._conns[threading.get_ident()] = (weakref.ref(threading.current_thread()), conn)
        self._local.conn = conn
        return conn

    def _set_busy_timeout(self, ms: int) -> None:
        with self._conns_lock:
            self._busy_ms = ms
            for _thread, conn in self._conns.values():
                conn.execute(f"PRAGMA busy_timeout={ms}")

    def _close_connections(self) -> None:
        with self._conns_lock:
            self._closed = True
            for _thread, conn in self._conns.values():
                conn.close()
            self._conns.clear()

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # -- settings -------------------------------------------------------------------------------

    def stored_settings(self) -> dict[str, Any]:
        return {
            k: json.loads(v) for k, v in self.conn.execute("SELECT key, value FROM settings ORDER BY key")
        }

    def save_settings(self, values: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        with self._lock, transaction(self.conn):
            self.conn.executemany("DELETE FROM settings WHERE key = ?", [(k,) for k in remove])
            self.conn.executemany(
                "INSERT INTO settings(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v)) for k, v in values.items()],
            )

    def secret(self) -> bytes:
        value = self.meta("secret")
        if value is None:
            with self._lock, transaction(self.conn):
                value = self.meta("secret")  # another process may have won the race
                if value is None:
                    value = secrets.token_hex(32)
                    self._set_meta("secret", value)
        return bytes.fromhex(value)

    def adopt_secret(self, secret: bytes) -> None:
        with self._lock, transaction(self.conn):
            self._set_meta("secret", secret.hex())

    # -- API keys -------------------------------------------------------------------------------

    def add_api_key(self, key: ApiKey) -> None:
        with self._lock, transaction(self.conn):
            self.conn.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
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
        rows = self.conn.execute(f"SELECT {_KEY_COLUMNS} FROM api_keys ORDER BY created_at").fetchall()
        return [_api_key(r) for r in rows]

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        row = self.conn.execute(
            f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,)
        ).fetchone()
        return None if row is None else _api_key(row)

    def revoke_api_key(self, key_id: str) -> bool:
        with self._lock, transaction(self.conn):
            cur = self.conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), key_id),
            )
        return cur.rowcount > 0

    # -- traces ---------------------------------------------------------------------------------

    def save_trace(self, trace: Trace) -> None:
        with self._lock, transaction(self.conn):
            self.conn.execute(
                "INSERT INTO traces (id, created_at, question, refused, support, data, owner) "
                "VALUES (?,?,?,?,?,?,?)",
                (
                    trace.id,
                    trace.created_at or time.time(),
                    trace.question,
                    int(trace.refused),
                    trace.support,
                    json.dumps(trace.to_json()),
                    trace.owner,
                ),
            )

    def get_trace(self, trace_id: str) -> Trace | None:
        row = self.conn.execute("SELECT data, owner FROM traces WHERE id = ?", (trace_id,)).fetchone()
        if row is None:
            return None
        return Trace.from_json({**json.loads(row[0]), "owner": row[1]})

    def list_traces(
        self, owner: str | None = None, failed_only: bool = False, limit: int = 20
    ) -> list[TraceSummary]:
        conds, params = [], []
        if failed_only:
            conds.append("(refused = 1 OR support < 1.0)")
        if owner is not None:
            conds.append("owner = ?")
            params.append(owner)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        rows = self.conn.execute(
            f"SELECT id, created_at, question, refused, support, owner FROM traces {where} "
            "ORDER BY created_at DESC LIMIT ?",
            (*params, limit),
        )
        return [TraceSummary(r[0], r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows]
