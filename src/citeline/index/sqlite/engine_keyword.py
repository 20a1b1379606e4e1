"""The keyword engine for large embedded indexes: tantivy (BM25), derived from the chunks in SQLite.

One tantivy index in ``engines/keyword-N/`` of the index folder; ``engines/keyword.json`` names the
current folder and the change-log position it holds (index/sqlite/changelog.py). A rebuild writes a new
folder and switches the name atomically; an update deletes the changed rowids and adds back what
SQLite still holds, then commits (tantivy keeps deletes as tombstones per segment and drops them
when it merges segments), then records the position. Queries are the same OR of terms and phrases
as FTS5's (text/terms.py: keyword_phrases), tokenized like FTS5's ``porter unicode61
remove_diacritics 2`` (simple tokens, lowercased, ASCII-folded, English stemmer).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from citeline.errors import MissingExtraError

ANALYZER = "citeline"
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
        _remove_tree(path)
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
                _remove_tree(old)
        self._index, self._dir, self.position = None, None, -1
        self.refresh()

    def apply(self, changed: npt.NDArray[np.int64], rows: Sequence[tuple[int, str]], position: int) -> None:
        """Remove every changed rowid, add back the rows SQLite holds, commit, record ``position``
        (call holding the engines' lock; replaying a range twice is harmless)."""
        if self._index is None:
            raise RuntimeError("no keyword engine to update")
        writer = self._index.writer(WRITER_HEAP, 1)
        try:
            # a process killed in the middle of a commit leaves files no commit names (a .del
            # file tantivy then fails to create again: FileAlreadyExists); drop them first
            writer.garbage_collect_files()
            for rowid in changed.tolist():
                writer.delete_documents_by_term("rowid", int(rowid))
            for rowid, text in rows:
                writer.add_document(self._document(rowid, text))
            writer.commit()
            # let the merges the commit scheduled finish: a writer dropped at once cancels them, so
            # every update left one more segment (300 commits of 100 rows: 300 segments and 3x the
            # CPU against 6 segments; at 384k chunks written 500 at a time, writes had slowed
            # from ~300 to ~50 chunks/s). Consumes the writer.
            writer.wait_merging_threads()
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
            _remove_tree(old)
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

    def search(
        self, phrases: Sequence[str], k: int, allowed: npt.NDArray[np.int64] | None = None
    ) -> list[tuple[int, float]]:
        """Top-k (rowid, BM25), best first; only ``allowed`` rowids (sorted) when given.

        A filter reads the unfiltered ranking in growing pages and keeps the allowed rowids: with
        the index's statistics the allowed chunks rank among themselves as they rank among all,
        so this is the filtered top-k (tantivy's term-set queries cost 50-250 ms here, measured
        with 100 to 10,000 ids at 100k chunks)."""
        query = self._query(phrases)
        if query is None or self._index is None or k <= 0:
            return []
        searcher = self._index.searcher()
        if allowed is None:
            return self._hits(searcher, query, k)
        if len(allowed) == 0:
            return []
        total = max(1, int(searcher.num_docs))
        limit = min(total, max(8 * k, int(3 * k * total / len(allowed))))
        while True:
            hits = self._hits(searcher, query, limit)
            kept = _allowed(hits, allowed)
            if len(kept) >= k or len(hits) < limit or limit >= total:
                return kept[:k]
            limit = min(total, limit * 4)

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
        if allowed is None:
            return int(searcher.search(query, 1, count=True).count)
        return len(_allowed(self._hits(searcher, query, max(1, int(searcher.num_docs))), allowed))

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


def _allowed(hits: list[tuple[int, float]], allowed: npt.NDArray[np.int64]) -> list[tuple[int, float]]:
    """The hits whose rowid is in ``allowed`` (sorted), in their order."""
    if not hits:
        return []
    ids = np.fromiter((r for r, _ in hits), dtype=np.int64, count=len(hits))
    at = np.minimum(np.searchsorted(allowed, ids), len(allowed) - 1)
    keep = np.flatnonzero(allowed[at] == ids)
    return [hits[i] for i in keep.tolist()]


#: BM25 constants (tantivy's and FTS5's)
K1, B = 1.2, 0.75


class SliceIndex:
    """An in-memory inverted index of the few chunks a selective filter lets through, tokenized
    like the engine: the filtered top-k is scored here (BM25 with the engine's row count and
    document frequencies, and the slice's average length) instead of reading tantivy's whole
    ranking until k allowed rows turn up (at 0.1% of 1M chunks: a ranking of ~100k hits)."""

    def __init__(self, engine: KeywordEngine, rows: Sequence[tuple[int, str]]) -> None:
        self.rowids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        self.tokens = [engine.tokens(text) for _, text in rows]
        self.lengths = np.fromiter((len(t) for t in self.tokens), dtype=np.float64, count=len(rows))
        self.avgdl = max(float(self.lengths.mean()) if len(rows) else 1.0, 1e-9)
        postings: dict[str, list[int]] = {}
        for i, tokens in enumerate(self.tokens):
            for token in set(tokens):
                postings.setdefault(token, []).append(i)
        self.postings = {t: np.asarray(rows_, dtype=np.int64) for t, rows_ in postings.items()}
        self.nbytes = int(self.lengths.nbytes * 8 + sum(len(t) for t in self.tokens) * 60)

    def frequencies(self, tokens: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """(slice rows, occurrences) of a token sequence (a phrase: consecutive tokens)."""
        rows = self.postings.get(tokens[0], np.zeros(0, dtype=np.int64))
        for token in tokens[1:]:
            rows = np.intersect1d(rows, self.postings.get(token, np.zeros(0, dtype=np.int64)))
        if len(tokens) == 1:
            counts = [self.tokens[i].count(tokens[0]) for i in rows.tolist()]
        else:
            n = len(tokens)
            counts = [
                sum(1 for j in range(len(self.tokens[i]) - n + 1) if self.tokens[i][j : j + n] == tokens)
                for i in rows.tolist()
            ]
        freq = np.asarray(counts, dtype=np.float64)
        return rows[freq > 0], freq[freq > 0]

    def search(self, engine: KeywordEngine, phrases: Sequence[str], k: int) -> list[tuple[int, float]]:
        if engine._index is None or len(self.rowids) == 0 or k <= 0:
            return []
        searcher = engine._index.searcher()
        total = max(1, int(searcher.num_docs))
        scores = np.zeros(len(self.rowids), dtype=np.float64)
        norm = K1 * (1.0 - B + B * self.lengths / self.avgdl)
        for phrase in phrases:
            tokens = engine.tokens(phrase)
            if not tokens:
                continue
            rows, freq = self.frequencies(tokens)
            if not len(rows):
                continue
            df = int(searcher.doc_freq("text", tokens[0])) if len(tokens) == 1 else engine.count([phrase])
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            scores[rows] += idf * freq * (K1 + 1.0) / (freq + norm[rows])
        hit = np.flatnonzero(scores > 0)
        order = hit[np.lexsort((self.rowids[hit], -scores[hit]))][:k]
        return [(int(self.rowids[i]), float(scores[i])) for i in order]


def _remove_tree(path: Path) -> None:
    import shutil  # for the writers that rebuild the engine, not every search

    shutil.rmtree(path, ignore_errors=True)
