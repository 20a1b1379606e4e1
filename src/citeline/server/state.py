"""What the server process holds: the knowledge base, a writer beside it, threads, jobs, limits.

Reads (ask, search, documents) go through ``kb``; uploads and deletes through ``writer``, a second
connection to the same index, so a reader never sees a document half-replaced (SQLite in WAL
mode gives each connection committed data only). Writes are serialised by ``write_lock``.
The pipeline is synchronous: every call into it runs on ``executor`` (``server_workers`` threads).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from citeline.jsonable import Jsonable, json_spec
from citeline.kb import KnowledgeBase
from citeline.server.metrics import Metrics
from citeline.server.pdf_pages import PositionCache
from citeline.settings import Settings
from citeline.wiring import open_store

T = TypeVar("T")


class RateLimiter:
    """A token bucket per key: ``per_minute`` requests, refilled continuously (0 = no limit)."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, who: str) -> float:
        """0 when the request may go ahead (and is counted), else seconds until it may."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        rate = self.per_minute / 60.0
        with self._lock:
            tokens, last = self._buckets.get(who, (float(self.per_minute), now))
            tokens = min(float(self.per_minute), tokens + (now - last) * rate)
            if tokens < 1.0:
                self._buckets[who] = (tokens, now)
                return (1.0 - tokens) / rate
            self._buckets[who] = (tokens - 1.0, now)
            if len(self._buckets) > 10_000:  # forget the idlest callers
                for key in list(self._buckets)[:1000]:
                    del self._buckets[key]
            return 0.0


class FailureThrottle:
    """Wrong API keys per client address: ``per_minute`` of them, refilled continuously; once they
    are spent the address waits until one refills (0 = no limit). Guessing keys gets slow."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def _tokens(self, who: str, now: float) -> float:
        tokens, last = self._buckets.get(who, (float(self.per_minute), now))
        return min(float(self.per_minute), tokens + (now - last) * self.per_minute / 60.0)

    def wait(self, who: str) -> float:
        """Seconds until ``who`` may send a key again (0: now)."""
        if self.per_minute <= 0:
            return 0.0
        with self._lock:
            tokens = self._tokens(who, time.monotonic())
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) * 60.0 / self.per_minute

    def failed(self, who: str) -> None:
        if self.per_minute <= 0:
            return
        now = time.monotonic()
        with self._lock:
            self._buckets[who] = (max(0.0, self._tokens(who, now) - 1.0), now)
            if len(self._buckets) > 10_000:  # forget the oldest addresses
                for key in list(self._buckets)[:1000]:
                    del self._buckets[key]


@dataclass
class Job(Jsonable):
    """A background upload: queued, running, done (with the report) or failed (with the reason)."""

    id: str
    owner: str = field(metadata=json_spec(omit=lambda _: True))  # the key's label: never shown back
    name: str
    state: str = "queued"
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None


class JobQueue:
    """Uploads indexed one at a time on a thread of their own; the last 500 jobs are kept."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="citeline-jobs")

    def submit(self, owner: str, name: str, work: Callable[[], dict[str, Any]]) -> Job:
        job = Job(uuid.uuid4().hex[:16], owner, name)
        with self._lock:
            self._jobs[job.id] = job
            while len(self._jobs) > 500:
                self._jobs.popitem(last=False)
        self._executor.submit(self._run, job, work)
        return job

    def _run(self, job: Job, work: Callable[[], dict[str, Any]]) -> None:
        job.state = "running"
        try:
            job.result = work()
            job.state = "done"
        except Exception as exc:  # reported to whoever polls the job
            job.error = str(exc) or type(exc).__name__
            job.state = "failed"
        job.finished_at = time.time()

    def get(self, job_id: str, owner: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.owner == owner else None

    def wait(self, timeout: float = 30.0) -> None:
        """Block until every job submitted so far has finished (tests, shutdown)."""
        self._executor.submit(lambda: None).result(timeout=timeout)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


@dataclass
class ServerState:
    kb: KnowledgeBase
    writer: KnowledgeBase
    allow_anonymous: bool
    executor: ThreadPoolExecutor
    limiter: RateLimiter
    metrics: Metrics
    key_failures: FailureThrottle = field(default_factory=lambda: FailureThrottle(0))
    jobs: JobQueue = field(default_factory=JobQueue)
    positions: PositionCache = field(default_factory=PositionCache)
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def settings(self) -> Settings:
        return self.kb.settings

    @classmethod
    def build(cls, kb: KnowledgeBase, *, allow_anonymous: bool | None = None) -> ServerState:
        settings = kb.settings
        store = open_store(settings.index, create=False)
        writer = KnowledgeBase(settings, store, embedder=kb.embedder)
        return cls(
            kb=kb,
            writer=writer,
            allow_anonymous=settings.server_allow_anonymous if allow_anonymous is None else allow_anonymous,
            executor=ThreadPoolExecutor(max_workers=settings.server_workers, thread_name_prefix="citeline"),
            limiter=RateLimiter(settings.server_rate_limit),
            metrics=Metrics(),
            key_failures=FailureThrottle(settings.server_key_failures),
        )

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking call of the pipeline on the worker threads."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))

    def write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A write through the writer connection, one at a time (call it on a worker thread)."""
        with self.write_lock:
            return fn(*args, **kwargs)

    def close(self) -> None:
        self.jobs.shutdown()
        self.executor.shutdown(wait=True, cancel_futures=True)
        self.writer.close()
