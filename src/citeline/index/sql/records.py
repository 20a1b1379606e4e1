"""The records of a SQL store besides documents: meta, settings, the per-index secret, API keys
and traces, written once for both stores over their read and write contexts.

A store provides the contexts (``reading``, ``writing``, ``statement``), each giving a Session
(index/sql/dialect.py) on one of its connections: SQLite's connection of the calling thread,
PostgreSQL's pooled ones. Every write is one transaction.
"""

from __future__ import annotations

import json
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

from citeline.index.base import ApiKey, EmbedderInfo
from citeline.index.sql import rows
from citeline.index.sql.dialect import Dialect, Session, insert_sql, upsert_sql

if TYPE_CHECKING:  # loaded by what reads or writes traces: a search does neither
    from citeline.trace import Trace, TraceSummary

_EMBEDDER_KEYS = ("embedder", "embedder_version", "embedder_dim")


class SqlRecords(ABC):
    dialect: ClassVar[Dialect]
    location: str
    read_only: bool

    # -- the contexts a store provides ------------------------------------------------------------

    @abstractmethod
    def reading(self, snapshot: bool = False) -> AbstractContextManager[Session]:
        """A connection to read with; ``snapshot``: the reads inside agree with each other (one
        read transaction: a writer committing meanwhile changes none of them)."""

    @abstractmethod
    def writing(self) -> AbstractContextManager[Session]:
        """One write transaction holding the store's writer lock (writers take turns), rolled back
        on any error; a store that is busy, read-only, full or gone raises the matching
        IndexUnavailableError."""

    def statement(self) -> AbstractContextManager[Session]:
        """For one statement that writes (a trace, the secret): atomic by itself, so a store may
        run it without waiting for the writer lock."""
        return self.writing()

    # -- meta -------------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        with self.reading() as s:
            return self._meta(s, key)

    @staticmethod
    def _meta(s: Session, key: str) -> str | None:
        value = s.value("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    @staticmethod
    def _set_meta(s: Session, key: str, value: str) -> None:
        s.execute(upsert_sql("meta", "key", ["value"]), (key, value))

    def embedder_info(self) -> EmbedderInfo | None:
        with self.reading() as s:
            found = dict(s.rows("SELECT key, value FROM meta WHERE key IN (?, ?, ?)", _EMBEDDER_KEYS))
        if "embedder" not in found:
            return None
        return EmbedderInfo(
            found["embedder"], found.get("embedder_version") or "", int(found.get("embedder_dim") or 0)
        )

    def _set_embedder(self, s: Session, name: str, version: str, dim: int) -> None:
        for key, value in zip(_EMBEDDER_KEYS, (name, version, str(dim)), strict=True):
            self._set_meta(s, key, value)

    # -- settings and the secret ----------------------------------------------------------------

    def stored_settings(self) -> dict[str, Any]:
        with self.reading() as s:
            found = s.rows("SELECT key, value FROM settings ORDER BY key")
        return {k: json.loads(v) for k, v in found}

    def save_settings(self, values: Mapping[str, Any], remove: Iterable[str] = ()) -> None:
        with self.writing() as s:
            s.many("DELETE FROM settings WHERE key = ?", [(k,) for k in remove])
            s.many(upsert_sql("settings", "key", ["value"]), [(k, json.dumps(v)) for k, v in values.items()])

    def secret(self) -> bytes:
        value = self.meta("secret")
        if value is None:
            with self.statement() as s:  # the first writer wins; everyone reads the winner's
                s.execute(
                    insert_sql("meta", ["key", "value"], "ON CONFLICT (key) DO NOTHING"),
                    ("secret", secrets.token_hex(32)),
                )
            value = self.meta("secret")
        return bytes.fromhex(value or "")

    def adopt_secret(self, secret: bytes) -> None:
        with self.writing() as s:
            self._set_meta(s, "secret", secret.hex())

    # -- API keys ---------------------------------------------------------------------------------

    def add_api_key(self, key: ApiKey) -> None:
        with self.writing() as s:
            s.execute(insert_sql("api_keys", rows.API_KEY_COLUMNS.split(", ")), rows.api_key_params(key))

    def api_keys(self) -> list[ApiKey]:
        with self.reading() as s:
            found = s.rows(f"SELECT {rows.API_KEY_COLUMNS} FROM api_keys ORDER BY created_at")
        return [rows.api_key(r) for r in found]

    def find_api_key(self, key_hash: str) -> ApiKey | None:
        with self.reading() as s:
            found = s.rows(f"SELECT {rows.API_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,))
        return rows.api_key(found[0]) if found else None

    def revoke_api_key(self, key_id: str) -> bool:
        with self.writing() as s:
            cur = s.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), key_id),
            )
            return bool(cur.rowcount > 0)

    # -- traces -----------------------------------------------------------------------------------

    def save_trace(self, trace: Trace) -> None:
        with self.statement() as s:
            s.execute(insert_sql("traces", rows.trace_write_columns(self.dialect)), rows.trace_params(trace))

    def get_trace(self, trace_id: str) -> Trace | None:
        with self.reading() as s:
            found = s.rows(f"SELECT data, owner FROM traces WHERE {self.dialect.trace_id} = ?", (trace_id,))
        return rows.trace(found[0][0], found[0][1]) if found else None

    def list_traces(
        self, owner: str | None = None, failed_only: bool = False, limit: int = 20
    ) -> list[TraceSummary]:
        conds: list[str] = []
        params: list[Any] = []
        if failed_only:
            conds.append("(refused = TRUE OR support < 1.0)")
        if owner is not None:
            conds.append("owner = ?")
            params.append(owner)
        where = f"WHERE {' AND '.join(conds)}" if conds else ""
        with self.reading() as s:
            found = s.rows(
                f"SELECT {rows.trace_summary_columns(self.dialect)} FROM traces {where} "
                "ORDER BY created_at DESC LIMIT ?",
                (*params, limit),
            )
        return [rows.trace_summary(r) for r in found]
