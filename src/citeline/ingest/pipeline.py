"""Incremental ingestion: skip unchanged, parse, chunk, embed what is new, replace atomically.

A file is unchanged when its stored document has the same content hash and pipeline signature; its
bytes are not even read when its size and modification time match the document's and it was not
modified within :data:`RACY_S` of being indexed (``trust_mtime``, as git and rsync do). Documents
are looked up a group of files at a time, and the chunks of several files are embedded together
(citeline.ingest.batches).

Files as users keep them: only regular files are read (a named pipe, socket or device inside a
folder is skipped with the reason and never opened, so it cannot block ingestion), unreadable
folders are reported, and adding a folder again reconciles it: documents whose files are gone are
removed (see :meth:`Ingestor.add` for the safety rules).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import numpy as np

from citeline.chunking import Chunker, ChunkingOptions, UnstructuredMode
from citeline.embedding.base import Embedder
from citeline.errors import (
    CitelineError,
    IndexUnavailableError,
    NoTextError,
    ParseError,
    ReadOnlyIndexError,
)
from citeline.filters import Filter
from citeline.index.base import Store, StoredFile
from citeline.ingest.batches import FILE_ERRORS as FILE_ERRORS  # what a failed file is reported with
from citeline.ingest.batches import (
    EmbedBatch,
    Prepared,
    failure_reason,
    fill_vectors,
    not_indexed,
    write_prepared,
)
from citeline.ingest.embed import (
    Progress as Progress,  # (event, amount): "file" per file, "chunks" per chunk embedded
)
from citeline.ingest.files import (
    FolderWalk,
    Found,
    Listings,
    Sources,
    Stamp,
    iter_file_lists,
    read_regular,
    regular_stat,
    too_big,
)
from citeline.ingest.readd import RACY_S as RACY_S  # the racy-file rule (see citeline.ingest.files)
from citeline.ingest.readd import (
    KnownFiles,
    StoredFilesMemo,
    pass_changed,
    reconcile,
    stamp_unchanged,
    stored_file,
)
from citeline.ingest.registry import parser_for
from citeline.ingest.report import STAGES as STAGES  # the stages timed in IngestReport.seconds
from citeline.ingest.report import IngestReport as IngestReport  # what an add did
from citeline.settings import Settings
from citeline.types import DEFAULT_COLLECTION, Document, document_id_for

#: collections of documents uploaded through the server: never reconciled against a folder
UPLOAD_COLLECTION_PREFIX = "uploads/"

# Bump when parsing or chunking changes what a file turns into, so unchanged files are redone.
# 2: PDF tables; 3: HTML <th> header rows; 4: man pages in <pre>; 5: <dt> sections; 6: a man page's
# paragraph that opens with a page's name ("posttls-finger(1) connects ...") is kept; 7: Markdown's
# HTML comments left out and raw HTML tables stored as pipe tables, a PDF's title from its first page
# when its first heading is a numbered section, its printed page labels kept, its accents composed;
# 8: a split table's pieces repeat its caption with its header rows, a manual page rendered to text
# is read as one (sections and option entries as headings), a man page's bulleted list is a list
PIPELINE_VERSION = "8"


#: files named one by one whose documents are looked up in one query
LOOKUP_FILES = 256


def make_chunker(embedder: Embedder, settings: Settings) -> Chunker:
    return Chunker(
        embedder.count_tokens,
        ChunkingOptions(
            target_tokens=settings.chunk_tokens,
            max_tokens=embedder.max_tokens,
            overlap_tokens=settings.overlap_tokens,
            unstructured=cast(UnstructuredMode, settings.chunk_unstructured),
        ),
        embed=embedder.embed,
    )


def pipeline_signature(settings: Settings) -> str:
    """What a stored document was made with: a document made otherwise is redone."""
    signature = f"{PIPELINE_VERSION}:{settings.chunk_tokens}:{settings.overlap_tokens}"
    if settings.chunk_unstructured != "windows":
        signature += f":{settings.chunk_unstructured}"
    return signature


@dataclass(frozen=True)
class FileJob:
    """A file to (re)index, read and hashed by whoever walks the folders; everything a worker
    needs to parse and chunk it, even on another machine."""

    source: str
    path: str  # a file's absolute path, or an upload's name (the parser picks by its extension)
    data: bytes
    content_hash: str
    document_id: str
    collection: str
    size: int
    mtime: float
    tags: dict[str, str]
    acl: tuple[str, ...]
    existing: bool
    #: metadata kept beside the parser's: {"path": absolute path} for a file, the caller's for an upload
    extra: dict[str, object]


def prepare(job: FileJob, chunker: Chunker, signature: str, settings: Settings) -> Prepared:
    """Parse and chunk one file (ParseError when it cannot be indexed). Pure: the same job gives
    the same document, chunk ids and spans on any machine."""
    path = Path(job.path)
    if not job.data.strip():
        raise NoTextError(job.source, "the file is empty (no text to index)")
    t0 = time.perf_counter()
    parsed = parser_for(path).parse(job.data, path)
    t1 = time.perf_counter()
    if len(parsed.text) > settings.max_text_chars:
        raise ParseError(
            job.source,
            f"{len(parsed.text):,} characters of text, above the {settings.max_text_chars:,} limit "
            "(raise it with CITELINE_MAX_TEXT_CHARS)",
        )
    chunks = chunker.chunk(parsed, job.document_id)
    t2 = time.perf_counter()
    if not chunks:
        raise NoTextError(job.source, "no text to index after parsing")
    document = Document(
        id=job.document_id,
        collection=job.collection,
        source=job.source,
        title=parsed.title,
        format=parsed.format,
        content_hash=job.content_hash,
        size=job.size,
        mtime=job.mtime,
        page_count=parsed.page_count,
        tags=job.tags,
        acl=job.acl,
        metadata={**parsed.metadata, **job.extra, "pipeline": signature},
    )
    return Prepared(
        document, parsed.text, chunks, tuple(parsed.page_starts), job.data, job.existing, t1 - t0, t2 - t1
    )


def finish_store(store: Store, report: IngestReport) -> None:
    """After an add: the store's derived index whole again (PostgreSQL's HNSW index, which a bulk
    load that was interrupted leaves missing), said in the report's notes when it was not."""
    ensure = getattr(store, "ensure_vector_index", None)
    if ensure is not None and ensure():
        report.notes.append(
            "the vector index (HNSW) was missing, as an interrupted bulk load leaves it: it was built again"
        )


def _groups(items: Iterable[Found], n: int) -> Iterator[list[Found]]:
    it = iter(items)
    while group := list(itertools.islice(it, n)):
        yield group


class Ingestor:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        settings: Settings,
        *,
        memo: StoredFilesMemo | None = None,
        listings: Listings | None = None,
        fast: Embedder | None = None,
    ) -> None:
        """``memo``: the stored files read by an earlier add; ``listings``: the folders listed by
        earlier adds (both kept by the knowledge base). ``fast``: progressive indexing, chunks get
        this embedder's vectors now and the index's embedder's later (``citeline embed``)."""
        self.store = store
        self.embedder = embedder
        self.fast = fast
        self.settings = settings
        self.chunker = make_chunker(embedder, settings)
        self.signature = pipeline_signature(settings)
        self.stored_memo = memo or StoredFilesMemo()
        self.listings = listings or Listings()

    def add(
        self,
        paths: Iterable[str],
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        progress: Progress | None = None,
        collection: str = DEFAULT_COLLECTION,
        root: str | os.PathLike[str] | None = None,
        *,
        keep_missing: bool = False,
        prune: bool = False,
    ) -> IngestReport:
        """Add or update files and folders. A document is identified by ``collection`` and its path
        relative to ``root`` (default: the current folder), whichever machine adds it.

        A folder given is reconciled afterwards: documents of ``collection`` read from files under
        it whose files are gone are removed (``keep_missing`` keeps them, reported as missing).
        Nothing is removed when the folder holds no file at all or could not be listed (nor under
        a subfolder that could not be listed), and removing more than half of the folder's
        documents needs ``prune``. Uploaded documents have no file and are never reconciled.

        A store that cannot be written (busy, read-only, disk full) stops the batch: the
        IndexUnavailableError carries the report of what was done (``.report``).
        """
        report = IngestReport()
        if self.store.read_only:
            raise ReadOnlyIndexError(
                f"The index at {self.store.location} is read-only here: nothing can be added. Open it "
                "where its folder can be written."
            )
        paths = list(paths)
        walks: list[FolderWalk] = []
        access = tuple(sorted(set(acl)))
        given_tags = dict(tags or {})
        batch = EmbedBatch(
            self.store,
            self.fast or self.embedder,
            report,
            progress,
            self.settings.embed_retries,
            progressive=self.fast is not None,
        )
        sources = Sources(root if root is not None else Path.cwd())
        start = self.store.write_mark()  # what the memo must hold for this add's writes to join it
        known = KnownFiles(
            self.store, collection, whole=any(os.path.isdir(p) for p in paths), memo=self.stored_memo
        )
        done: set[str] = set()
        try:
            listings = self.listings if self.settings.trust_mtime else None
            found = iter_file_lists(paths, report, walks, listings)
            if self.settings.trust_mtime:
                found = pass_changed(
                    found,
                    known,
                    sources,
                    done,
                    report,
                    progress,
                    signature=self.signature,
                    limit=int(self.settings.max_file_mb * 1024 * 1024),
                    tags=given_tags,
                    acl=access,
                )
            for group in _groups(itertools.chain.from_iterable(f.found() for f in found), LOOKUP_FILES):
                named = [(sources(path), path, stamp) for path, stamp in group]
                known.look_up(source for source, _, _ in named)
                for source, path, stamp in named:
                    existing = known.get(source)
                    if source in done:  # named twice: compare with what the first one wrote
                        batch.flush()
                        existing = known.fresh(source)
                    done.add(source)
                    try:
                        job = self.job(source, path, collection, given_tags, access, report, existing, stamp)
                        if job is not None:  # "file" fires when the batch writes it
                            batch.add(prepare(job, self.chunker, self.signature, self.settings))
                            continue
                    except IndexUnavailableError:
                        raise
                    except FILE_ERRORS as exc:
                        not_indexed(report, source, exc, existing is not None)
                    if progress:
                        progress("file", 1)
            batch.flush()
            for walk in walks:
                self._reconcile(
                    walk,
                    collection,
                    report,
                    keep_missing=keep_missing,
                    prune=prune,
                    known=known,
                    processed=done,
                )
            finish_store(self.store, report)
        except IndexUnavailableError as exc:
            report.note_meanwhile()
            exc.report = report  # type: ignore[attr-defined]
            raise
        report.note_meanwhile()
        written = (*report.added, *report.updated, *report.removed, *report.retagged)
        self.stored_memo.written(self.store, collection, written, start)
        return report

    def _reconcile(
        self,
        walk: FolderWalk,
        collection: str,
        report: IngestReport,
        *,
        keep_missing: bool,
        prune: bool,
        known: KnownFiles | None = None,
        processed: set[str] | None = None,
    ) -> None:
        """Remove the documents of ``walk.folder`` whose files are gone (see :meth:`add` and
        :func:`citeline.ingest.readd.reconcile`)."""
        if collection.startswith(UPLOAD_COLLECTION_PREFIX):
            return
        if known is None or not known.whole:
            known = KnownFiles(self.store, collection, whole=True)
        reconcile(self.store, walk, known, self.stored_memo, report, keep_missing, prune, processed or set())

    def add_bytes(
        self,
        name: str,
        data: bytes,
        *,
        collection: str = DEFAULT_COLLECTION,
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        metadata: Mapping[str, object] | None = None,
        progress: Progress | None = None,
    ) -> IngestReport:
        """Add or update one document from bytes (an upload): ``name`` is its source in ``collection``
        and its extension picks the parser. Nothing is written outside the store."""
        report = IngestReport()
        try:
            self._check_size(name, len(data))
            job = self._job_for_data(
                name,
                data,
                name,
                time.time(),
                collection,
                dict(tags or {}),
                tuple(sorted(set(acl))),
                report,
                dict(metadata or {}),
                stored_file(self.store, document_id_for(collection, name)),
            )
            if job is not None:
                self.write(prepare(job, self.chunker, self.signature, self.settings), report, progress)
        except IndexUnavailableError:
            raise
        except (CitelineError, ValueError, MemoryError, RecursionError) as exc:  # not OSError: no file
            report.failed.append((name, failure_reason(exc)))
        return report

    def _check_size(self, source: str, size: int) -> None:
        limit = int(self.settings.max_file_mb * 1024 * 1024)
        if size > limit:
            raise too_big(source, size, limit)

    def job(
        self,
        source: str,
        path: str,
        collection: str,
        tags: dict[str, str],
        acl: tuple[str, ...],
        report: IngestReport,
        existing: StoredFile | None,
        stamp: Stamp | None = None,
    ) -> FileJob | None:
        """Read and hash the regular file at ``path`` (absolute); None when it is unchanged (its
        tags and ACL are brought up to date). ``existing``: its stored document (None: not stored);
        ``stamp``: its size and modification time when already taken (a folder's walk takes them)."""
        limit = int(self.settings.max_file_mb * 1024 * 1024)
        if existing is not None and self.settings.trust_mtime:
            if stamp is None:
                info, _ = regular_stat(path)
                stamp = None if info is None else (info.st_size, info.st_mtime)
            if stamp is not None and stamp_unchanged(existing, path, stamp, self.signature, limit):
                self._unchanged(existing, tags, acl, report, source)
                return None
        data, mtime = read_regular(path, source, limit)
        extra: dict[str, object] = {"path": path}
        return self._job_for_data(source, data, path, mtime, collection, tags, acl, report, extra, existing)

    def _unchanged(
        self,
        existing: StoredFile,
        tags: dict[str, str],
        acl: tuple[str, ...],
        report: IngestReport,
        source: str,
    ) -> None:
        """An unchanged document: its tags and ACL are written only when they differ."""
        if existing.tags != tags or existing.acl != acl:
            self.store.update_access(existing.id, tags, acl)
            report.retagged.append(source)
        report.unchanged.append(source)

    def _job_for_data(
        self,
        source: str,
        data: bytes,
        path: str,
        mtime: float,
        collection: str,
        tags: dict[str, str],
        acl: tuple[str, ...],
        report: IngestReport,
        extra: dict[str, object],
        existing: StoredFile | None,
    ) -> FileJob | None:
        """The job for a file's or an upload's bytes; None when the stored document is the same."""
        content_hash = hashlib.sha256(data).hexdigest()
        doc_id = document_id_for(collection, source)
        if (
            existing is not None
            and existing.content_hash == content_hash
            and existing.pipeline == self.signature
        ):
            self._unchanged(existing, tags, acl, report, source)
            return None
        return FileJob(
            source,
            path,
            data,
            content_hash,
            doc_id,
            collection,
            len(data),
            mtime,
            dict(tags),
            acl,
            existing is not None,
            extra,
        )

    def write(self, prepared: Prepared, report: IngestReport, progress: Progress | None) -> None:
        """Embed what the cache lacks and replace the document (the local, one-file path)."""
        t0 = time.perf_counter()
        vectors: dict[str, np.ndarray] = {}
        retries = self.settings.embed_retries
        embedder, fast = self.fast or self.embedder, self.fast is not None
        fill_vectors(self.store, embedder, prepared.chunks, vectors, progress, report, retries, fast)
        report.seconds["embed"] += time.perf_counter() - t0
        write_prepared(self.store, prepared, vectors, report, embedder.name if fast else None)

    def remove(self, paths: Iterable[str]) -> IngestReport:
        report = IngestReport()
        docs = self.store.documents(Filter.admin())
        for given in paths:
            target = os.path.abspath(given)
            matched = [
                d
                for d in docs
                if d.source == Path(given).as_posix()
                or d.metadata.get("path") == target
                or str(d.metadata.get("path", "")).startswith(target + os.sep)
            ]
            if not matched:
                report.failed.append((given, "not in the index"))
            for doc in matched:
                self.store.remove_document(doc.id)
                report.removed.append(doc.source)
        return report
