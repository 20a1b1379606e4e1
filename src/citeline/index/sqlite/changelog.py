"""The change log of chunks: how the derived engines (index/sqlite/engines.py) stay consistent with SQLite.

``changes(seq, chunk, op)`` gets one row per chunk row added (op 1) or removed (op 0), written by
triggers on ``chunks`` (index/sqlite/schema.py, version 3), so in the same transaction as the chunk rows
themselves, whatever wrote them (ingestion, removal, ``check --repair``). ``seq`` is AUTOINCREMENT:
a position is never reused, even after the log is compacted.

Each derived engine records the position it has applied with its own files. Catching up replays
the chunk rowids changed after that position: every one of them is removed from the engine and
the ones SQLite still holds are added again, read in the same snapshot as the position. Replaying
a range twice gives the same engine (a crash between an engine's write and its position's write
is harmless), and a rowid SQLite reused is handled like any other change.

Compaction deletes log rows every engine has applied and raises ``changes_floor`` (in ``meta``)
to the highest position deleted; an engine whose position is below the floor cannot catch up from
the log and is rebuilt from SQLite.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

FLOOR_KEY = "changes_floor"


def log_position(conn: sqlite3.Connection) -> int:
    """The position of the last change ever logged (0 for none)."""
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'changes'").fetchone()
    return int(row[0]) if row else 0


def log_floor(conn: sqlite3.Connection) -> int:
    """Changes at or below this position were compacted away."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (FLOOR_KEY,)).fetchone()
    return int(row[0]) if row else 0


def changed_rowids(conn: sqlite3.Connection, after: int, upto: int) -> npt.NDArray[np.int64]:
    """The distinct chunk rowids added or removed in (after, upto], sorted."""
    rows = conn.execute(
        "SELECT DISTINCT chunk FROM changes WHERE seq > ? AND seq <= ? ORDER BY chunk", (after, upto)
    )
    return np.fromiter((r[0] for r in rows), dtype=np.int64)


def compact(conn: sqlite3.Connection, upto: int) -> None:
    """Drop the changes at or below ``upto`` (every engine applied them); call inside a write
    transaction."""
    if upto <= log_floor(conn):
        return
    conn.execute("DELETE FROM changes WHERE seq <= ?", (upto,))
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (FLOOR_KEY, str(upto)),
    )
