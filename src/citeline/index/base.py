"""The store contract: everything the pipeline keeps, behind one interface.

Two stores implement it, both on one SQL core (index/sql/): the embedded SQLite store
(index/sqlite/) and the PostgreSQL store (index/postgres/); each passes the same contract suite
(tests/index/test_store_contract.py).

* Documents, their text, original bytes and chunks; a document is replaced atomically (readers
  see the old or the new version, never half). Document ids come from (collection, source), see
  ``citeline.types.document_id_for``.
* Vectors cached by the hash of the indexed chunk text, per embedder.
* Keyword and vector search with filters applied *before* ranking (pre-filtering): a filter
  matching 1% of chunks still returns k results.
* Settings kept in the index itself (an index that is a database URL has no folder for a toml).
* Access data: API keys (hashes only), a per-index secret, and traces with their owner.
* Keyword scores for a principal who is not an admin use statistics (row count, average length,
  document frequencies) over the chunks it may read only: a document it may not read changes
  nothing it sees, neither scores nor order.
* ``check()`` finds what a crash, a full disk or a bug could leave inconsistent (the source of
  truth's integrity; derived keyword and vector indexes against the chunks; spans; orphans) and,
  with ``repair=True``, rebuilds what is derived.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from citeline.filters import Filter
from citeline.jsonable import Jsonable
from citeline.types import Chunk, Document

if TYPE_CHECKING:
    from citeline.query.analysis import Query
    from citeline.settings import Settings
    from citeline.trace import Trace, TraceSummary

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class EmbedderInfo:
    name: str
    version: str
    dim: int


@dataclass(frozen=True)
class ApiKey:
    """An API key as stored: never the key itself, only its keyed hash."""

    id: str
    user: str
    key_hash: str
    groups: tuple[str, ...] = ()
    role: str = "reader"  # reader, writer or admin
    created_at: float = 0.0
    revoked_at: float | None = None
    label: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.revoked_at is None and not self.expired()

    @property
    def expires_at(self) -> float | None:
        """When the key stops working (Unix time), or None: kept in ``meta``, so every store has it."""
        value = self.meta.get("expires_at")
        return None if value is None else float(value)

    def expired(self, now: float | None = None) -> bool:
        return self.expires_at is not None and (time.time() if now is None else now) >= self.expires_at


@dataclass(frozen=True)
class DocumentWrite:
    """One document to replace whole: its text, chunks, their vectors (by text hash), pages, bytes.

    ``keep_times``: keep ``document.added_at``/``updated_at`` as given (copying an index), instead
    of the time of the write (and the first version's ``added_at``).

    ``vectors_from``: the fast embedder that made ``vectors`` (progressive indexing), when not the
    index's own. A chunk whose text has no vector of the index's embedder yet is then *pending*:
    searchable by the fast vector until ``citeline embed`` fills in the full one.
    """

    document: Document
    text: str
    chunks: Sequence[Chunk]
    vectors: Mapping[str, Vector]
    page_starts: Sequence[int] = ()
    original: bytes | None = None
    keep_times: bool = False
    vectors_from: str | None = None


@dataclass(frozen=True)
class StoredFile:
    """What adding a file again is compared with: a stored document's identity, content hash,
    file stamp (size, modification time, when it was indexed), the pipeline and absolute path it
    was read with, and its tags and ACL. Much lighter than a Document (no title, no metadata)."""

    id: str
    source: str
    content_hash: str
    size: int
    mtime: float
    updated_at: float
    #: metadata["path"] when it is a string: the absolute path the file was read from
    path: str | None = None
    #: metadata["pipeline"] when it is a string: what the document was made with
    pipeline: str | None = None
    #: "uploaded_by" in metadata: an upload, never reconciled against a folder
    uploaded: bool = False
    tags: Mapping[str, str] = field(default_factory=dict)
    acl: tuple[str, ...] = ()

    @classmethod
    def from_row(cls, row: Sequence[Any], tags: Mapping[str, str], acl: Sequence[str]) -> StoredFile:
        """From a store's row: id, source, content_hash, size, mtime, updated_at, metadata's
        path, its pipeline (each kept only when a string) and whether it names an uploader."""
        path, pipeline = row[6], row[7]
        return cls(
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            row[5],
            path if isinstance(path, str) else None,
            pipeline if isinstance(pipeline, str) else None,
            bool(row[8]),
            tags,
            tuple(acl),
        )

    @classmethod
    def of(cls, doc: Document) -> StoredFile:
        path, pipeline = doc.metadata.get("path"), doc.metadata.get("pipeline")
        return cls(
            doc.id,
            doc.source,
            doc.content_hash,
            doc.size,
            doc.mtime,
            doc.updated_at,
            path if isinstance(path, str) else None,
            pipeline if isinstance(pipeline, str) else None,
            "uploaded_by" in doc.metadata,
            doc.tags,
            doc.acl,
        )


@dataclass(frozen=True)
class Problem(Jsonable):
    """One inconsistency found by ``Store.check``.

    ``kind``: ``integrity`` (the database itself), ``keyword-index`` / ``vector-index`` (a derived
    index disagrees with the chunks), ``vectors`` (chunks without a usable vector), ``span`` (a
    chunk whose span does not resolve in its document's text), ``document`` (a document without
    chunks), ``orphan`` (rows nothing refers to). ``repaired`` is True once ``check(repair=True)``
    fixed it.
    """

    kind: str
    detail: str
    repaired: bool = False


class Store(Protocol):
    location: str
    read_only: bool

    # -- index metadata -------------------------------------------------------------------------
    def embedder_info(self) -> EmbedderInfo | None: ...

    def bind_embedder(self, name: str, version: str, dim: int) -> None:
        """Record the index's embedder on first use; EmbedderMismatchError for another one later."""
        ...

    def stored_settings(self) -> dict[str, Any]: ...

    def save_settings(self, values: Mapping[str, Any], remove: Iterable[str] = ()) -> None: ...

    def secret(self) -> bytes:
        """A random per-index secret, created on first use (keys are hashed with it)."""
        ...

    def adopt_secret(self, secret: bytes) -> None:
        """Take another index's secret (a copied index keeps its API keys valid)."""
        ...

    def configure(self, settings: Settings) -> None:
        """Apply the settings that concern the store (SQLite: how long a writer waits for another;
        PostgreSQL: pool size, scan thresholds)."""
        ...

    def check(self, repair: bool = False) -> list[Problem]:
        """Consistency problems (none: an empty list). ``repair`` rebuilds derived indexes from the
        source of truth and drops orphans; documents that cannot be repaired are removed (their
        files are re-added by the next ``citeline add``) and reported."""
        ...

    # -- documents ------------------------------------------------------------------------------
    def get_document(self, document_id: str) -> Document | None: ...

    def get_documents(self, document_ids: Sequence[str]) -> dict[str, Document]:
        """The stored documents of ``document_ids`` by id, in a few queries (absent ids are left out)."""
        ...

    def stored_files(self, collection: str) -> list[StoredFile]:
        """What re-adding compares with, for every document of ``collection``, in a few queries
        (however many documents): a folder added again is checked against it without a query
        per file."""
        ...

    def write_mark(self) -> tuple[object, int] | None:
        """Where the store's writes stand: (a value that changes whenever another connection or
        process may have written, how many writes this connection has made); None when the backend
        cannot tell. What was read under an equal mark can be used again without reading; under
        an equal first value, only this connection wrote in between."""
        ...

    def find_document(self, source: str, collection: str | None = None) -> Document | None:
        """By source (in ``collection``, or any collection when None), else by absolute file path."""
        ...

    def documents(self, flt: Filter, limit: int | None = None, offset: int = 0) -> list[Document]: ...

    def count_documents(self, flt: Filter) -> int: ...

    def document_text(self, document_id: str) -> str: ...

    def page_starts(self, document_id: str) -> list[int]: ...

    def original(self, document_id: str) -> bytes | None:
        """The file's bytes as they were added (None when not kept)."""
        ...

    def replace_document(  # noqa: PLR0913 (the one-document form of replace_documents, kept for callers)
        self,
        document: Document,
        text: str,
        chunks: Sequence[Chunk],
        vectors: Mapping[str, Vector],
        page_starts: Sequence[int] = (),
        original: bytes | None = None,
    ) -> bool:
        """Atomically replace a document and all its chunks (readers see old or new, never half).
        True when the document was there when written (by its id, or its collection and source)."""
        ...

    def replace_documents(self, writes: Sequence[DocumentWrite]) -> frozenset[str]:
        """Replace several documents in one transaction (batched ingestion; all or nothing). The ids
        of those that were there when written: an add that found a document absent and then
        replaced it learns that another writer added it meanwhile."""
        ...

    def update_access(self, document_id: str, tags: Mapping[str, str], acl: Iterable[str]) -> None: ...

    def remove_document(self, document_id: str) -> None: ...

    def document_chunks(self, document_id: str) -> list[str]: ...

    # -- vectors --------------------------------------------------------------------------------
    def cached_vectors(self, text_hashes: Iterable[str], embedder: str | None = None) -> dict[str, Vector]:
        """Vectors already computed (by ``embedder``, default the index's), keyed by indexed-text hash."""
        ...

    def all_text_hashes(self) -> list[tuple[str, str]]: ...

    def add_vectors(self, embedder: str, vectors: Mapping[str, Vector]) -> None: ...

    def swap_embedder(self, name: str, version: str, dim: int) -> None: ...

    # -- progressive indexing: chunks waiting for the index's embedder ----------------------------
    def pending_embedder(self) -> str | None:
        """The fast embedder whose vectors stand in for chunks that have none of the index's
        embedder yet (None: every chunk has its full vector; a cheap read)."""
        ...

    def unembedded(self, limit: int) -> list[tuple[str, str]]:
        """Up to ``limit`` (text hash, index text) of pending chunk texts (no vector of the index's
        embedder), by text hash: what ``citeline embed`` embeds next."""
        ...

    def finish_pending(self) -> bool:
        """When no chunk is pending any more: drop the fast vectors and the pending mark in one
        transaction (True); else change nothing (False)."""
        ...

    def pending_vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine of the fast embedder's vectors), best first, over pending chunks only:
        each chunk is searched in exactly one space (see citeline.retrieval.progressive)."""
        ...

    # -- search ---------------------------------------------------------------------------------
    def keyword_search(self, query: Query | str, flt: Filter, k: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score: higher is better), best first. For a principal who is not an
        admin the statistics come from the chunks it may read only (see the module docstring)."""
        ...

    def vector_search(self, vector: Vector, flt: Filter, k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity), best first."""
        ...

    def chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[Chunk, Document]]: ...

    def term_weights(self, terms: Sequence[str], flt: Filter) -> dict[str, float]:
        """IDF of each term over the chunks ``flt`` lets through (restricted documents do not count)."""
        ...

    def count_chunks(self, flt: Filter) -> int: ...

    def stats(self) -> dict[str, Any]: ...

    # -- traces and access ----------------------------------------------------------------------
    def save_trace(self, trace: Trace) -> None: ...

    def get_trace(self, trace_id: str) -> Trace | None: ...

    def list_traces(
        self, owner: str | None = None, failed_only: bool = False, limit: int = 20
    ) -> list[TraceSummary]: ...

    def add_api_key(self, key: ApiKey) -> None: ...

    def api_keys(self) -> list[ApiKey]: ...

    def find_api_key(self, key_hash: str) -> ApiKey | None: ...

    def revoke_api_key(self, key_id: str) -> bool: ...

    def close(self) -> None: ...
