"""The keyword engine for large embedded indexes: tantivy (BM25), derived from the chunks in SQLite.

One tantivy index in ``engines/keyword-N/`` of the index folder; ``engines/keyword.json`` names the
current folder and the change-log position it holds (index/changelog.py). A rebuild writes a new
folder and switches the name atomically; an update deletes the changed rowids and adds back what
SQLite still holds, then commits (tantivy keeps deletes as tombstones per segment and drops them
when it merges segments), then records the position. Queries are the same OR of terms and phrases
as FTS5's (retrieval/bm25.py: keyword_phrases), tokenized like FTS5's ``porter unicode61
remove_diacritics 2`` (simple tokens, lowercased, ASCII-folded, English stemmer).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.errors import MissingExtraError

ANALYZER = "citeline"
#: ids passed to tantivy as a term set when a filter lets through at most this many chunks;
#: above it the unfiltered ranking is read in growing pages and filtered (same order: BM25's
#: statistics are global for these searches)
TERM_SET_MAX = 20_000
WRITER_HEAP = 64_000_000


def _tantivy() -> Any:
    try:
        import tantivy
    except ImportError as exc:  # a core dependency; a broken install lands here
        raise MissingExtraError("the keyword engine for large indexes", "tantivy", "tantivy") from exc
    return tantivy


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class KeywordEngine:
    """BM25 over the chunks' indexed text; rowids are the chunk rowids of SQLite."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.state_path = folder / "keyword.json"
        self._index: Any = None
        self._dir: str | None = None
        self.position = -1
        tv = _tantivy()
        self._tv = tv
        self._analyzer = (
            tv.TextAnalyzerBuilder(tv.Tokenizer.simple())
            .filter(tv.Filter.remove_long(64))
            .filter(tv.Filter.lowercase())
            .filter(tv.Filter.ascii_fold())
            .filter(tv.Filter.stemmer("english"))
            .build()
        )
        builder = tv.SchemaBuilder()
        builder.add_integer_field("rowid", stored=False, indexed=True, fast=True)  # i64: a Python int term
        builder.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="position")
        self._schema = builder.build()

    # -- files -------------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Follow the state file (another process may have updated or rebuilt the engine);
        False when there is no usable engine on disk."""
        state = read_state(self.state_path)
        if state is None or not (self.folder / str(state.get("dir"))).is_dir():
            self._index, self._dir, self.position = None, None, -1
            return False
        if state["dir"] != self._dir or self._index is None:
            self._index = self._open(self.folder / state["dir"])
            self._dir = state["dir"]
        elif int(state["position"]) != self.position:
            self._index.reload()
        self.position = int(state["position"])
        return True

    def _open(self, path: Path) -> Any:
        index = self._tv.Index(self._schema, path=str(path), reuse=True)
        index.register_tokenizer(ANALYZER, self._analyzer)
        return index

    def build(self, rows: Iterable[tuple[int, str]], position: int) -> None:
        """A new engine from ``rows`` (rowid, indexed text), switched to atomically."""
        state = read_state(self.state_path) or {}
        number = int(str(state.get("dir", "keyword-0")).rsplit("-", 1)[-1]) + 1
        name = f"keyword-{number}"
        path = self.folder / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        index = self._open(path)
        writer = index.writer(WRITER_HEAP, 1)
        for rowid, text in rows:
            writer.add_document(self._document(rowid, text))
        writer.commit()
        writer.wait_merging_threads()
        _write_json(self.state_path, {"dir": name, "position": position})
        for old in self.folder.glob("keyword-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        self._index, self._dir, self.position = None, None, -1
        self.refresh()

    def apply(self, changed: npt.NDArray[np.int64], rows: Sequence[tuple[int, str]], position: int) -> None:
        """Remove every changed rowid, add back the rows SQLite holds, commit, record ``position``
        (call holding the engines' lock; replaying a range twice is harmless)."""
        if self._index is None:
            raise RuntimeError("no keyword engine to update")
        writer = self._index.writer(WRITER_HEAP, 1)
        try:
            for rowid in changed.tolist():
                writer.delete_documents_by_term("rowid", int(rowid))
            for rowid, text in rows:
                writer.add_document(self._document(rowid, text))
            writer.commit()
        finally:
            del writer  # releases tantivy's writer lock
        _write_json(self.state_path, {"dir": self._dir, "position": position})
        self._index.reload()
        self.position = position

    def _document(self, rowid: int, text: str) -> Any:
        doc = self._tv.Document()
        doc.add_integer("rowid", int(rowid))
        doc.add_text("text", text)
        return doc

    def remove_files(self) -> None:
        self.state_path.unlink(missing_ok=True)
        for old in self.folder.glob("keyword-*"):
            shutil.rmtree(old, ignore_errors=True)
        self._index, self._dir, self.position = None, None, -1

    # -- search ------------------------------------------------------------------------------

    def tokens(self, phrase: str) -> list[str]:
        return [t for t in self._analyzer.analyze(phrase) if t]

    def _query(self, phrases: Sequence[str]) -> Any:
        tv, parts = self._tv, []
        for phrase in phrases:
            tokens = self.tokens(phrase)
            if len(tokens) == 1:
                parts.append((tv.Occur.Should, tv.Query.term_query(self._schema, "text", tokens[0])))
            elif tokens:
                parts.append((tv.Occur.Should, tv.Query.phrase_query(self._schema, "text", tokens)))
        return tv.Query.boolean_query(parts) if parts else None

    def _restricted(self, query: Any, allowed: npt.NDArray[np.int64]) -> Any:
        tv = self._tv
        ids = tv.Query.term_set_query(self._schema, "rowid", allowed.tolist())
        return tv.Query.boolean_query(
            [(tv.Occur.Must, query), (tv.Occur.Must, tv.Query.const_score_query(ids, 0.0))]
        )

    def search(
        self, phrases: Sequence[str], k: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> list[tuple[int, float]]:
        """Top-k (rowid, BM25), best first; only ``allowed`` rowids (sorted) when given."""
        query = self._query(phrases)
        if query is None or self._index is None or k <= 0:
            return []
        searcher = self._index.searcher()
        if allowed is None:
            return self._hits(searcher, query, k)
        if len(allowed) == 0:
            return []
        if len(allowed) <= TERM_SET_MAX:
            return self._hits(searcher, self._restricted(query, allowed), k)
        out: list[tuple[int, float]] = []
        limit = max(4 * k, int(2 * k * searcher.num_docs / len(allowed)))
        while True:
            hits = self._hits(searcher, query, limit)
            ids = np.asarray([r for r, _ in hits], dtype=np.int64)
            at = np.minimum(np.searchsorted(allowed, ids), len(allowed) - 1)
            keep = allowed[at] == ids
            out = [h for h, ok in zip(hits, keep.tolist(), strict=True) if ok][:k]
            if len(out) >= k or len(hits) < limit:
                return out
            limit *= 4

    def _hits(self, searcher: Any, query: Any, k: int) -> list[tuple[int, float]]:
        result = searcher.search(query, k, count=False)
        if not result.hits:
            return []
        rowids = searcher.fast_field_values("rowid", [a for _, a in result.hits])
        return [(int(r), float(s)) for (s, _), r in zip(result.hits, rowids, strict=True)]

    def count(self, phrases: Sequence[str], allowed: npt.NDArray[np.int64] | None = None) -> int:
        """How many chunks (of ``allowed``) hold one of the phrases."""
        query = self._query(phrases)
        if query is None or self._index is None:
            return 0
        searcher = self._index.searcher()
        if allowed is not None and len(allowed) <= TERM_SET_MAX:
            query = self._restricted(query, allowed)
        elif allowed is not None:
            hits = self._hits(searcher, query, max(1, searcher.num_docs))
            ids = np.asarray([r for r, _ in hits], dtype=np.int64)
            return int(np.isin(ids, allowed).sum())
        return int(searcher.search(query, 1, count=True).count)

    def num_docs(self) -> int:
        return 0 if self._index is None else int(self._index.searcher().num_docs)

    def rowids(self) -> npt.NDArray[np.int64]:
        """Every rowid the engine holds (for ``citeline check``)."""
        if self._index is None:
            return np.zeros(0, dtype=np.int64)
        searcher = self._index.searcher()
        result = searcher.search(self._tv.Query.all_query(), max(1, searcher.num_docs), count=False)
        values = searcher.fast_field_values("rowid", [a for _, a in result.hits])
        return np.sort(np.asarray(values, dtype=np.int64))
