"""The embedded store: one folder, SQLite (WAL) + FTS5 + exact vectors, derived engines when large."""

from citeline.index.sqlite.store import DB_NAME, SqliteStore, sqlite_factory

__all__ = ["DB_NAME", "SqliteStore", "sqlite_factory"]
