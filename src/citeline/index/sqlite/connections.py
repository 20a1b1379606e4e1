"""The embedded store's connections: one per thread (``conn``). A mixin of SqliteStore (store.py).

A store is shared by threads (the server answers on several); one SQLite connection shared by
them would mix one thread's transaction with another's statements (a trace written while
another thread reads fails with "database table is locked" or worse). With a connection each, WAL gives every reader its own consistent snapshot, and writers
wait for each other (busy timeout). Connections of threads that ended are closed when the next
one is opened, and all of them by ``close()``.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from abc import ABC, abstractmethod


class SqliteConnections(ABC):
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
