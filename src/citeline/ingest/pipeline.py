"""Incremental ingestion: hash, skip unchanged, parse, chunk, embed what is new, replace atomically."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from citeline.chunking import Chunker, ChunkingOptions, UnstructuredMode
from citeline.embedding.base import Embedder
from citeline.errors import CitelineError, ParseError
from citeline.index.base import Store
from citeline.index.sqlite import text_hash
from citeline.ingest.registry import parser_for, supported_extensions
from citeline.models import DEFAULT_COLLECTION, Chunk, Document, document_id_for
from citeline.retrieval.filters import Filter
from citeline.settings import Settings

# Bump when parsing or chunking changes what a file turns into, so unchanged files are redone.
PIPELINE_VERSION = "4"  # 2: PDF tables; 3: HTML tables: header row only under <th>; 4: manual pages in <pre>

Progress = Callable[[str, int], None]  # (event, amount): "file" per file, "chunks" per chunk embedded


@dataclass
class IngestReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_written: int = 0

    def summary(self) -> str:
        line = (
            f"{len(self.added)} added, {len(self.updated)} updated, {len(self.unchanged)} unchanged, "
            f"{len(self.failed)} failed"
        )
        if self.removed:
            line += f", {len(self.removed)} removed"
        return line

    def to_json(self) -> dict[str, object]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "removed": self.removed,
            "chunks_embedded": self.chunks_embedded,
            "chunks_written": self.chunks_written,
        }


def source_for(path: Path, root: Path) -> str:
    """The path relative to ``root`` with / separators, or the absolute path for a file outside it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, os.path.abspath(root))
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return Path(absolute).as_posix()
    return Path(relative).as_posix()


def iter_files(paths: Iterable[str], report: IngestReport) -> Iterator[tuple[str, Path]]:
    """(source as the user named it, path) for each file; folders are walked recursively."""
    exts = set(supported_extensions())
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    child = Path(root) / name
                    if child.suffix.lower() in exts and not name.startswith("."):
                        yield str(child), child
        elif path.is_file():
            yield given, path
        elif path.exists():
            report.failed.append((given, "not a regular file"))
        else:
            report.failed.append((given, "no such file or folder"))


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


@dataclass(frozen=True)
class Prepared:
    """A parsed, chunked document waiting for its vectors."""

    document: Document
    text: str
    chunks: list[Chunk]
    page_starts: tuple[int, ...]
    original: bytes
    existing: bool


def prepare(job: FileJob, chunker: Chunker, signature: str, settings: Settings) -> Prepared:
    """Parse and chunk one file (ParseError when it cannot be indexed). Pure: the same job gives
    the same document, chunk ids and spans on any machine."""
    path = Path(job.path)
    if not job.data.strip():
        raise ParseError(job.source, "the file is empty (no text to index)")
    parsed = parser_for(path).parse(job.data, path)
    if len(parsed.text) > settings.max_text_chars:
        raise ParseError(
            job.source,
            f"{len(parsed.text):,} characters of text, above the {settings.max_text_chars:,} limit "
            "(raise it with CITELINE_MAX_TEXT_CHARS)",
        )
    chunks = chunker.chunk(parsed, job.document_id)
    if not chunks:
        raise ParseError(job.source, "no text to index after parsing")
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
    return Prepared(document, parsed.text, chunks, tuple(parsed.page_starts), job.data, job.existing)


#: what a failed file is reported with instead of stopping the batch
FILE_ERRORS = (CitelineError, OSError, ValueError, MemoryError, RecursionError)


class Ingestor:
    def __init__(self, store: Store, embedder: Embedder, settings: Settings) -> None:
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.chunker = make_chunker(embedder, settings)
        self.signature = pipeline_signature(settings)

    def add(
        self,
        paths: Iterable[str],
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        progress: Progress | None = None,
        collection: str = DEFAULT_COLLECTION,
        root: str | os.PathLike[str] | None = None,
    ) -> IngestReport:
        """Add or update files and folders. A document is identified by ``collection`` and its path
        relative to ``root`` (default: the current folder), whichever machine adds it."""
        report = IngestReport()
        base = Path(root) if root is not None else Path.cwd()
        for _given, path in iter_files(paths, report):
            source = source_for(path, base)
            try:
                job = self.job(source, path, collection, dict(tags or {}), tuple(sorted(set(acl))), report)
                if job is not None:
                    self.write(prepare(job, self.chunker, self.signature, self.settings), report, progress)
            except ParseError as exc:
                report.failed.append((source, exc.reason))
            except FILE_ERRORS as exc:
                report.failed.append((source, str(exc) or type(exc).__name__))
            if progress:
                progress("file", 1)
        return report

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
            )
            if job is not None:
                self.write(prepare(job, self.chunker, self.signature, self.settings), report, progress)
        except ParseError as exc:
            report.failed.append((name, exc.reason))
        except (CitelineError, ValueError, MemoryError, RecursionError) as exc:
            report.failed.append((name, str(exc) or type(exc).__name__))
        return report

    def _check_size(self, source: str, size: int) -> None:
        limit = int(self.settings.max_file_mb * 1024 * 1024)
        if size > limit:
            raise ParseError(
                source,
                f"file is {size / 1048576:.1f} MB, above the {self.settings.max_file_mb:g} MB limit "
                "(raise it with CITELINE_MAX_FILE_MB or max_file_mb in citeline.toml)",
            )

    def job(
        self,
        source: str,
        path: Path,
        collection: str,
        tags: dict[str, str],
        acl: tuple[str, ...],
        report: IngestReport,
    ) -> FileJob | None:
        """Read and hash a file; None when it is unchanged (its tags and ACL are brought up to date)."""
        stat = path.stat()
        self._check_size(source, stat.st_size)
        data = path.read_bytes()
        absolute = os.path.abspath(path)
        return self._job_for_data(
            source, data, absolute, stat.st_mtime, collection, tags, acl, report, {"path": absolute}
        )

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
    ) -> FileJob | None:
        """The job for a file's or an upload's bytes; None when the stored document is the same."""
        content_hash = hashlib.sha256(data).hexdigest()
        doc_id = document_id_for(collection, source)
        existing = self.store.get_document(doc_id)
        if (
            existing is not None
            and existing.content_hash == content_hash
            and existing.metadata.get("pipeline") == self.signature
        ):
            if existing.tags != tags or existing.acl != acl:
                self.store.update_access(existing.id, tags, acl)
            report.unchanged.append(source)
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
            tags,
            acl,
            existing is not None,
            extra,
        )

    def write(self, prepared: Prepared, report: IngestReport, progress: Progress | None) -> None:
        """Embed what the cache lacks and replace the document (the local, one-file path)."""
        vectors = self._vectors(prepared.chunks, progress, report)
        doc = prepared.document
        self.store.replace_document(
            doc, prepared.text, prepared.chunks, vectors, prepared.page_starts, prepared.original
        )
        report.chunks_written += len(prepared.chunks)
        (report.updated if prepared.existing else report.added).append(doc.source)

    def _vectors(
        self, chunks: list[Chunk], progress: Progress | None, report: IngestReport
    ) -> dict[str, np.ndarray]:
        """Vectors for every chunk: from the cache by indexed-text hash, the rest embedded now."""
        by_hash = {text_hash(c.index_text): c.index_text for c in chunks}
        vectors: dict[str, np.ndarray] = dict(self.store.cached_vectors(by_hash))
        missing = [(h, by_hash[h]) for h in by_hash if h not in vectors]
        for part, part_vectors in embed_batches(self.embedder, missing, progress):
            vectors.update(zip(part, part_vectors, strict=True))
            report.chunks_embedded += len(part)
        return vectors

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


def embed_batches(
    embedder: Embedder, items: list[tuple[str, str]], progress: Progress | None = None, batch: int = 64
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Embed (text hash, text) pairs a batch at a time: (hashes, vectors) per batch."""
    for lo in range(0, len(items), batch):
        part = items[lo : lo + batch]
        vectors = embedder.embed([t for _, t in part])
        if progress:
            progress("chunks", len(part))
        yield [h for h, _ in part], vectors


def reembed(store: Store, new: Embedder, progress: Progress | None = None) -> dict[str, object]:
    """Embed every chunk with another embedder side by side, then make it the index's in one swap."""
    pending = store.all_text_hashes()
    have = store.cached_vectors([h for h, _ in pending], embedder=new.name)
    todo = [(h, t) for h, t in pending if h not in have]
    if max(new.count_tokens([t for _, t in todo]), default=0) > new.max_tokens:
        raise CitelineError(
            f"Some chunks are longer than '{new.name}' accepts ({new.max_tokens} tokens); re-add the "
            "documents with that embedder in a fresh index instead."
        )
    for hashes, vectors in embed_batches(new, todo, progress):
        store.add_vectors(new.name, dict(zip(hashes, vectors, strict=True)))
    store.swap_embedder(new.name, new.version, new.dim)
    return {"embedder": new.name, "chunks": len(pending), "embedded": len(todo)}
