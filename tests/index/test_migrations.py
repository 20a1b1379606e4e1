"""Schema migrations: an index written by schema 1 opens, and its documents take portable ids."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np

import citeline
from citeline.filters import Filter
from citeline.index.sqlite import DB_NAME
from citeline.index.sqlite.schema import SCHEMA_VERSION, _migrate_one
from citeline.types import document_id_for, text_hash
from conftest import ADMIN


def _schema_1_index(folder: Path) -> str:
    """An index as schema 1 wrote it: ids from the adding machine's absolute path."""
    folder.mkdir()
    conn = sqlite3.connect(folder / DB_NAME, isolation_level=None)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    _migrate_one(conn, 1)
    old_id = hashlib.sha256(b"/home/someone/docs/guide.md").hexdigest()[:24]
    text = "# Guide\n\nThe retention period is 45 days."
    vector = (np.ones(384) / np.sqrt(384)).astype(np.float32)
    index_text = "Guide > The retention period is 45 days."
    for key, value in {"embedder": "hashing", "embedder_version": "1", "embedder_dim": "384"}.items():
        conn.execute("INSERT INTO meta VALUES (?, ?)", (key, value))
    conn.execute(
        "INSERT INTO documents VALUES (?, 'docs/guide.md', 'Guide', 'markdown', 'h', 1, 0, NULL, ?, ?, '[]', 0, 0)",
        (old_id, json.dumps({"path": "/home/someone/docs/guide.md"}), text),
    )
    conn.execute("INSERT INTO doc_acl VALUES (?, 'group:eng')", (old_id,))
    conn.execute(
        'INSERT INTO chunks (id, document_id, ordinal, start, "end", heading, kind, index_text, text_hash, '
        "token_count) VALUES (?, ?, 0, 9, ?, '[\"Guide\"]', 'paragraph', ?, ?, 9)",
        (f"{old_id[:12]}-abcdefabcdef", old_id, len(text), index_text, text_hash(index_text)),
    )
    conn.execute("INSERT INTO embeddings VALUES (?, 'hashing', ?)", (text_hash(index_text), vector.tobytes()))
    conn.execute("CREATE TABLE traces_probe (x)")  # unrelated tables are left alone
    conn.close()
    return old_id


def test_schema_1_index_migrates_to_portable_ids(tmp_path: Path) -> None:
    old_id = _schema_1_index(tmp_path / "index")
    with citeline.open(tmp_path / "index") as kb:
        assert kb.store.stats()["schema_version"] == SCHEMA_VERSION
        docs = kb.store.documents(Filter.admin())
        assert [d.source for d in docs] == ["docs/guide.md"]
        new_id = document_id_for("default", "docs/guide.md")
        assert docs[0].id == new_id != old_id and docs[0].acl == ("group:eng",)
        chunk_ids = kb.store.document_chunks(new_id)
        assert chunk_ids == [f"{new_id[:12]}-abcdefabcdef"]
        hits = kb.search("retention period", ADMIN, k=1)
        assert hits and hits[0].chunk.document_id == new_id
        assert kb.store.keyword_search("retention", Filter.admin(), 5)[0][0] == chunk_ids[0]
