"""Distributed ingestion on Ray: ``citeline add --workers ray://HOST:PORT PATH`` (or ``local:N``).

The driver (this process) walks the folders, reads and hashes each file and skips the unchanged
ones exactly as a local run does (by content hash and pipeline signature), so a crashed or re-run
job neither duplicates nor loses work. Each changed file goes to a Ray actor that parses and
chunks it (``pipeline.prepare``, the local run's own code, so ids, spans and hashes are the
same); the driver looks the chunks up in the store's vector cache and sends only the missing
texts back to the actors to embed, in the local run's batches; whole documents are then written
in batches, each batch one transaction (``Store.replace_documents``). Only the driver talks to
the store, so any store works, an embedded folder included.

Workers: ``ray://HOST:PORT`` joins a running cluster through Ray Client (the actors load the
index's embedder there; files travel from the driver, so workers need no shared file system;
token authentication and connection failures: citeline.ingest.ray_connect);
``local:N`` starts a local Ray with N CPUs for this run. An already initialised Ray (a test's, a
notebook's) is used as it is. Ray is an optional extra: ``pip install 'citeline[ray]'``.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from citeline.errors import (
    ConfigError,
    IndexUnavailableError,
    MissingExtraError,
    ReadOnlyIndexError,
)
from citeline.filters import Filter
from citeline.index.base import DocumentWrite
from citeline.ingest.batches import Prepared, account, not_indexed
from citeline.ingest.embed import embed_checked
from citeline.ingest.files import FolderWalk, Sources, iter_files
from citeline.ingest.pipeline import (
    FILE_ERRORS,
    FileJob,
    Ingestor,
    IngestReport,
    Progress,
    finish_store,
    make_chunker,
    pipeline_signature,
    prepare,
)
from citeline.ingest.ray_connect import client_auth, connection_failed
from citeline.ingest.readd import KnownFiles
from citeline.settings import Settings
from citeline.types import text_hash

_SPEC = re.compile(r"^(?:ray://[^\s/]+|local:\d+)$")
EMBED_BATCH = 64  # embed_batches' size: the same batches as a local run


def check_workers(spec: str) -> str:
    if not _SPEC.match(spec):
        raise ConfigError(f"--workers must be ray://HOST:PORT or local:N (N CPUs), got '{spec}'.")
    if spec.startswith("local:") and int(spec.split(":", 1)[1]) < 1:
        raise ConfigError("--workers local:N needs N >= 1.")
    return spec


class Worker:
    """A Ray actor: the index's embedder and chunker, loaded once. ``fast_name``: progressive
    indexing, chunks are embedded by that embedder (chunked as the index's embedder chunks them)."""

    def __init__(self, embedder_name: str, settings: Settings, fast_name: str | None = None) -> None:
        from citeline.embedding import make_embedder

        self.embedder = make_embedder(embedder_name)
        self.vectorizer = make_embedder(fast_name) if fast_name else self.embedder
        self.settings = settings
        self.chunker = make_chunker(self.embedder, settings)
        self.signature = pipeline_signature(settings)

    def prepare(self, job: FileJob) -> Prepared | NotIndexed:
        """The prepared document, or why the file is not indexed."""
        try:
            return prepare(job, self.chunker, self.signature, self.settings)
        except FILE_ERRORS as exc:
            report = IngestReport()  # a picklable answer: exceptions carrying a path and reason are not
            not_indexed(report, job.source, exc, job.existing)
            return NotIndexed(report.failed, report.skipped)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors as a local run checks them: retried with backoff, one finite vector per text."""
        return embed_checked(self.vectorizer, texts, self.settings.embed_retries)


@dataclass(frozen=True)
class NotIndexed:
    """A worker's file that is not indexed: (source, reason) in one of the two lists."""

    failed: list[tuple[str, str]]
    skipped: list[tuple[str, str]]


@dataclass
class _Pending:
    prepared: Prepared
    vectors: dict[str, np.ndarray]
    waiting: int = 0


@dataclass
class _Run:
    ingestor: Ingestor
    report: IngestReport
    progress: Progress | None
    batch: int
    ready: list[_Pending] = field(default_factory=list)

    def tick(self, event: str, amount: int) -> None:
        if self.progress and amount:
            self.progress(event, amount)

    def flush(self, force: bool = False) -> None:
        if not self.ready or (len(self.ready) < self.batch and not force):
            return
        writes = [
            DocumentWrite(
                p.prepared.document,
                p.prepared.text,
                p.prepared.chunks,
                p.vectors,
                p.prepared.page_starts,
                p.prepared.original,
                vectors_from=self.ingestor.fast.name if self.ingestor.fast else None,
            )
            for p in self.ready
        ]
        existed = self.ingestor.store.replace_documents(writes)
        for p in self.ready:
            self.report.chunks_written += len(p.prepared.chunks)
            doc = p.prepared.document
            account(self.report, doc.source, doc.id in existed, p.prepared.existing)
        self.tick("file", len(self.ready))
        self.ready = []


#: tries to reach a Ray cluster through Ray Client (ray://)
CONNECT_TRIES = 3


def _connect(ray: Any, spec: str) -> bool:
    """Start or join Ray; True when this run owns the connection (and shuts it down)."""
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "warning"}
    if spec.startswith("ray://"):
        # The head starts a server process for each client and gives it a fixed time to come up;
        # on a loaded machine that can fail once ("Starting Ray client server failed"): retried.
        # Any other failure to connect is Ray Client giving up after its own retries (~100 s).
        for attempt in range(CONNECT_TRIES):
            try:
                ray.init(address=spec, logging_level="warning", log_to_driver=False)
                break
            except ConnectionAbortedError as exc:
                ray.shutdown()
                if attempt == CONNECT_TRIES - 1:
                    raise connection_failed(spec, exc) from exc
                time.sleep(2.0 * 2**attempt)
            except ConnectionError as exc:
                ray.shutdown()
                raise connection_failed(spec, exc) from exc
    else:
        ray.init(num_cpus=int(spec.split(":", 1)[1]), **options)
    return True


def add_distributed(
    ingestor: Ingestor,
    paths: Iterable[str],
    workers: str,
    tags: dict[str, str] | None = None,
    acl: Iterable[str] = (),
    progress: Progress | None = None,
    collection: str = "default",
    root: str | os.PathLike[str] | None = None,
    batch: int = 32,
    *,
    keep_missing: bool = False,
    prune: bool = False,
) -> IngestReport:
    """``Ingestor.add`` on Ray: the same report, the same folder reconciliation afterwards
    (``keep_missing``, ``prune``), and an IndexUnavailableError (with ``.report``) when the store
    cannot be written."""
    if ingestor.store.read_only:
        raise ReadOnlyIndexError(
            f"The index at {ingestor.store.location} is read-only here: nothing can be added. Open it "
            "where its folder can be written."
        )
    try:
        import ray
        from ray.util import ActorPool  # noqa: F401  (part of the extra)
    except ImportError as exc:
        raise MissingExtraError("--workers (distributed ingestion)", "ray", "ray") from exc
    check_workers(workers)
    joining = workers.startswith("ray://") and not ray.is_initialized()
    report = IngestReport()
    with client_auth(workers) if joining else nullcontext():
        owned = _connect(ray, workers)
        store = ingestor.store
        # A new index: build the vector index once at the end instead of row by row (PostgreSQL).
        bulk = getattr(store, "bulk_load", None) if store.count_chunks(Filter.admin()) == 0 else None
        try:
            with bulk() if bulk is not None else nullcontext():
                request = _Request(
                    list(paths),
                    workers,
                    tags or {},
                    tuple(sorted(set(acl))),
                    progress,
                    collection,
                    root,
                    batch,
                    keep_missing,
                    prune,
                )
                _run(ray, ingestor, report, request)
            finish_store(store, report)
        except IndexUnavailableError as exc:  # whatever stopped it: the report says what was done
            exc.report = report  # type: ignore[attr-defined]
            raise
        finally:
            if owned:
                ray.shutdown()
    return report


@dataclass(frozen=True)
class _Request:
    """What ``add_distributed`` was asked to add, and how (its arguments; tags and ACL normalized)."""

    paths: list[str]
    workers: str
    tags: dict[str, str]
    acl: tuple[str, ...]
    progress: Progress | None
    collection: str
    root: str | os.PathLike[str] | None
    batch: int
    keep_missing: bool
    prune: bool


def _run(ray: Any, ingestor: Ingestor, report: IngestReport, request: _Request) -> None:
    walks: list[FolderWalk] = []
    try:
        _run_files(ray, ingestor, report, walks, request)
        for walk in walks:
            ingestor._reconcile(
                walk, request.collection, report, keep_missing=request.keep_missing, prune=request.prune
            )
    finally:
        report.note_meanwhile()


def _run_files(
    ray: Any, ingestor: Ingestor, report: IngestReport, walks: list[FolderWalk], request: _Request
) -> None:
    paths, workers, tags, acl = request.paths, request.workers, request.tags, request.acl
    collection, root = request.collection, request.root
    run = _Run(ingestor, report, request.progress, request.batch)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    size = max(1, min(cpus, int(workers.split(":", 1)[1]) if workers.startswith("local:") else cpus))
    actor = ray.remote(num_cpus=1)(Worker)
    fast = ingestor.fast.name if ingestor.fast else None
    actors = [actor.remote(ingestor.embedder.name, ingestor.settings, fast) for _ in range(size)]
    turn = itertools.cycle(actors)
    sources = Sources(root if root is not None else Path.cwd())
    known = KnownFiles(ingestor.store, collection, whole=any(os.path.isdir(p) for p in paths))
    files = iter_files(paths, report, walks)
    done: set[str] = set()
    inflight: dict[Any, tuple[str, Any]] = {}

    def submit_files() -> None:
        while len(inflight) < 2 * size:
            item = next(files, None)
            if item is None:
                return
            path, stamp = item
            source = sources(path)
            try:
                if source in done:  # named twice: compared with what is stored now
                    existing = known.fresh(source)
                else:
                    known.look_up([source])
                    existing = known.get(source)
                done.add(source)
                job = ingestor.job(source, path, collection, dict(tags), acl, report, existing, stamp)
            except IndexUnavailableError:
                raise
            except FILE_ERRORS as exc:
                not_indexed(report, source, exc, existing is not None)
                job = None
            if job is None:
                run.tick("file", 1)
                continue
            inflight[next(turn).prepare.remote(job)] = ("prepare", None)

    submit_files()
    while inflight:
        (ref,), _ = ray.wait(list(inflight), num_returns=1)
        kind, payload = inflight.pop(ref)
        result = ray.get(ref)
        if kind == "prepare":
            if isinstance(result, NotIndexed):
                report.failed.extend(result.failed)
                report.skipped.extend(result.skipped)
                run.tick("file", 1)
            else:
                _vectors_for(ray, run, result, turn, inflight)
        else:
            pending, hashes = payload
            pending.vectors.update(zip(hashes, result, strict=True))
            report.chunks_embedded += len(hashes)
            run.tick("chunks", len(hashes))
            pending.waiting -= 1
            if pending.waiting == 0:
                run.ready.append(pending)
        run.flush()
        submit_files()
    run.flush(force=True)
    for a in actors:
        ray.kill(a)


def _vectors_for(
    ray: Any, run: _Run, prepared: Prepared, turn: Any, inflight: dict[Any, tuple[str, Any]]
) -> None:
    """Take cached vectors from the store; send the rest to the actors, a local run's batches."""
    by_hash = {text_hash(c.index_text): c.index_text for c in prepared.chunks}
    store, fast = run.ingestor.store, run.ingestor.fast
    if fast is not None:  # progressive: a text with its full vector needs none, the others a fast one
        for h in store.cached_vectors(by_hash):
            del by_hash[h]
    pending = _Pending(prepared, dict(store.cached_vectors(by_hash, embedder=fast.name if fast else None)))
    missing = [(h, t) for h, t in by_hash.items() if h not in pending.vectors]
    for lo in range(0, len(missing), EMBED_BATCH):
        part = missing[lo : lo + EMBED_BATCH]
        inflight[next(turn).embed.remote([t for _, t in part])] = ("embed", (pending, [h for h, _ in part]))
        pending.waiting += 1
    if pending.waiting == 0:
        run.ready.append(pending)
