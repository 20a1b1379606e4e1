"""One writer ingesting while readers ask: threads, separate processes, and the HTTP server under a
bounded load generator on loopback. No errors, no torn reads (every quote is exactly the span of
one whole version of its document), latency figures reported. A second writer waits for the
first, or fails cleanly with exit code 4 and a clear message when it waited lock_timeout_s.

Every test runs on both stores: an index folder (SQLite), and a database on the test session's
PostgreSQL server, where readers use their own pooled connections and the writer lock is an
advisory lock. Sizes: CITELINE_TEST_ROUNDS (writer versions), CITELINE_TEST_REQUESTS (HTTP load);
`make stress` raises them.
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

import citeline
from citeline.access import create_key
from citeline.filters import Filter, Principal
from citeline.kb import KnowledgeBase
from conftest import OpenIndex
from serve.live import serving, variant

from .util import Index, cli, cli_env, document, hold_write_lock, report_figures, size, write_docs

ADMIN = Principal.local_admin()
N_DOCS = 6
QUESTIONS = [
    "How often does component C2-3 retry?",
    "What is the quorum of cluster Q4?",
    "After how many attempts does component C1-0 give up?",
    "component C5-2 retries",
]
_REVISION = re.compile(r"Revision (\d+) of report (\d+)")


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile(values, 0.5) * 1000, 1),
        "p95_ms": round(percentile(values, 0.95) * 1000, 1),
        "max_ms": round(max(values, default=0.0) * 1000, 1),
        "mean_ms": round(statistics.fmean(values) * 1000, 1) if values else 0.0,
    }


def assert_whole(quote: str, start: int, end: int, source: str) -> None:
    """A quote is the exact span of one whole version of its document, never a mix of two."""
    i = int(re.search(r"report-(\d+)", source).group(1))  # type: ignore[union-attr]
    revisions = {int(r) for r, doc in _REVISION.findall(quote) if int(doc) == i}
    assert len(revisions) <= 1, f"torn read: {source} quotes revisions {revisions}"
    candidates = [document(i, v, paragraphs=8) for v in (revisions or range(0, 200))]
    assert any(t[start:end] == quote for t in candidates), f"{source} [{start}:{end}] is no version's span"


@pytest.fixture()
def corpus(open_index: OpenIndex, tmp_path: Path) -> tuple[KnowledgeBase, Path]:
    """An index (of each store) of N_DOCS documents, and their folder."""
    docs = tmp_path / "docs"
    write_docs(docs, N_DOCS, version=0, paragraphs=8)
    kb = open_index("index", embedder="hashing")
    assert not kb.add([docs]).failed
    return kb, docs


def _store(kb: KnowledgeBase) -> str:
    return "postgresql" if kb.store.location.startswith("postgres") else "sqlite"


def writer_loop(index: Index, docs: Path, rounds: int, stop: threading.Event) -> int:
    """Rewrite every document `rounds` times through a second connection (as another process
    would): each version names its revision in every paragraph."""
    kb = citeline.open(index, create=False)
    try:
        for version in range(1, rounds + 1):
            if stop.is_set():
                return version - 1
            for i in range(N_DOCS):
                (docs / f"report-{i:03d}.md").write_text(document(i, version, paragraphs=8), encoding="utf-8")
            report = kb.add([docs])
            assert not report.failed, report.failed
        return rounds
    finally:
        kb.close()


def test_threads_read_while_one_writes(corpus: tuple[KnowledgeBase, Path]) -> None:
    kb, docs = corpus
    rounds = size("ROUNDS", 4)
    stop = threading.Event()
    errors: list[str] = []
    timings: list[float] = []
    reads = 0

    def reader(n: int) -> None:
        nonlocal reads
        while not stop.is_set():
            q = QUESTIONS[n % len(QUESTIONS)]
            t = time.perf_counter()
            try:
                hits = kb.search(q, Filter.admin(), k=10)
                answer = kb.ask(q, ADMIN)
            except Exception as exc:  # any error fails the test
                errors.append(f"{type(exc).__name__}: {exc}")
                return
            timings.append(time.perf_counter() - t)
            reads += 1
            for h in hits:
                assert_whole(h.chunk.text, h.chunk.start, h.chunk.end, h.source)
            for c in answer.citations:
                assert_whole(c.quote, c.start, c.end, c.source)
            n += 1

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(reader, n) for n in range(3)]
        try:
            done = writer_loop(kb.settings.index, docs, rounds, stop)
        finally:
            stop.set()
        for f in futures:
            f.result(timeout=120)
    assert not errors, errors[:3]
    assert done == rounds and reads >= 3
    assert kb.check().ok
    report_figures(
        f"concurrency_threads_{_store(kb)}",
        {"writer_rounds": done, "reads": reads, "errors": 0, **latency(timings)},
    )


READER = textwrap.dedent(
    """
    import json, sys, time
    import citeline
    from citeline.filters import Filter
    kb = citeline.open(sys.argv[1], create=False)
    out = {"reads": 0, "errors": [], "seconds": [], "hits": []}
    deadline = time.monotonic() + float(sys.argv[2])
    questions = json.loads(sys.argv[3])
    i = 0
    while time.monotonic() < deadline:
        t = time.perf_counter()
        try:
            hits = kb.search(questions[i % len(questions)], Filter.admin(), k=5)
        except Exception as exc:
            out["errors"].append(f"{type(exc).__name__}: {exc}")
            continue
        out["seconds"].append(time.perf_counter() - t)
        out["hits"] += [[h.chunk.text, h.chunk.start, h.chunk.end, h.source] for h in hits]
        out["reads"] += 1
        i += 1
    print(json.dumps(out))
    """
)


def test_processes_read_while_one_writes(corpus: tuple[KnowledgeBase, Path], tmp_path: Path) -> None:
    kb, docs = corpus
    index = kb.settings.index
    seconds = float(size("PROCESS_SECONDS", 6))
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, str(index), str(seconds), json.dumps(QUESTIONS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for _ in range(2)
    ]
    rounds = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and rounds < 200:  # a writer process, version after version
        rounds += 1
        for i in range(N_DOCS):
            (docs / f"report-{i:03d}.md").write_text(document(i, rounds, paragraphs=8), encoding="utf-8")
        proc = cli(index, "add", str(docs))
        assert proc.returncode == 0, proc.stderr
    results = []
    for r in readers:
        out, err = r.communicate(timeout=120)
        assert r.returncode == 0, err
        results.append(json.loads(out))
    assert all(not r["errors"] for r in results), [r["errors"][:3] for r in results]
    for r in results:
        for quote, start, end, source in r["hits"]:
            assert_whole(quote, start, end, source)
    reads = sum(r["reads"] for r in results)
    assert reads > 0 and rounds >= 1
    report_figures(
        f"concurrency_processes_{_store(kb)}",
        {
            "writer_rounds": rounds,
            "reads": reads,
            "errors": 0,
            **latency([s for r in results for s in r["seconds"]]),
        },
    )


def test_http_load_while_uploading(corpus: tuple[KnowledgeBase, Path]) -> None:
    """A bounded load generator on loopback (count and time), a writer uploading meanwhile."""
    kb, _docs = corpus
    requests_total = size("REQUESTS", 60)
    time_limit = float(size("LOAD_SECONDS", 60))
    key, _ = create_key(kb.store, "loader", ("eng",), "writer")
    served = variant(kb, server_rate_limit=0, server_workers=4)
    statuses: dict[int, int] = {}
    errors: list[str] = []
    timings: list[float] = []
    lock = threading.Lock()
    with serving(served) as url:
        headers = {"Authorization": f"Bearer {key}"}
        stop = threading.Event()

        def uploader() -> int:
            n = 0
            with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
                while not stop.is_set() and n < 200:
                    n += 1
                    body = document(90 + n % 3, n, paragraphs=8).encode()
                    r = c.post("/v1/documents", files={"file": (f"report-{90 + n % 3:03d}.md", body)})
                    if r.status_code not in (201, 202):
                        with lock:
                            errors.append(f"upload {r.status_code}: {r.text[:200]}")
            return n

        def one(i: int) -> None:
            if stop.is_set():
                return
            q = QUESTIONS[i % len(QUESTIONS)]
            with httpx.Client(base_url=url, headers=headers, timeout=120) as c:
                t = time.perf_counter()
                if i % 2:
                    r = c.post("/v1/search", json={"query": q, "k": 5})
                else:
                    r = c.post("/v1/ask", json={"question": q})
                elapsed = time.perf_counter() - t
            with lock:
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
                timings.append(elapsed)
            if r.status_code != 200:
                with lock:
                    errors.append(f"{r.status_code}: {r.text[:200]}")
                return
            data = r.json()
            for item in data.get("results", []) + data.get("citations", []):
                text = item.get("text", item.get("quote"))
                assert_whole(text, item["start"], item["end"], item["source"])

        started = time.monotonic()
        with ThreadPoolExecutor(1) as up, ThreadPoolExecutor(6) as pool:
            uploads = up.submit(uploader)
            futures = [pool.submit(one, i) for i in range(requests_total)]
            for f in futures:
                f.result(timeout=time_limit + 120)
                if time.monotonic() - started > time_limit:
                    stop.set()
            stop.set()
            uploaded = uploads.result(timeout=120)
        wall = time.monotonic() - started
    served.close()
    assert not errors, errors[:3]
    assert statuses.get(200, 0) == len(timings) >= min(requests_total, 10)
    report_figures(
        f"concurrency_http_{_store(kb)}",
        {
            "requests": len(timings),
            "errors": len(errors),
            "uploads": uploaded,
            "clients": 6,
            "wall_s": round(wall, 1),
            "requests_per_s": round(len(timings) / wall, 1),
            **latency(timings),
        },
    )


def test_a_second_writer_waits_or_fails_cleanly(open_index: OpenIndex, tmp_path: Path) -> None:
    a, b, index = tmp_path / "a", tmp_path / "b", open_index.location("index")
    write_docs(a, 3)
    write_docs(b, 3, version=1)
    assert cli(index, "add", str(a)).returncode == 0
    release = hold_write_lock(index)  # another writer in the middle of a long transaction
    try:
        t = time.perf_counter()
        busy = cli(index, "add", str(b), CITELINE_LOCK_TIMEOUT_S="1")
        waited = time.perf_counter() - t
        as_json = cli(index, "add", "--json", str(b), CITELINE_LOCK_TIMEOUT_S="0.5")
    finally:
        release()
    assert busy.returncode == 4, busy.stderr
    assert "busy" in busy.stderr and "another process is writing" in busy.stderr
    assert "Traceback" not in busy.stderr and waited < 30
    error: dict[str, Any] = json.loads(as_json.stdout)["error"]
    assert as_json.returncode == 4 and error["code"] == "IndexBusyError" and error["exit_code"] == 4
    assert cli(index, "check").returncode == 0
    # two writers at once: the second waits for each of the first's transactions, both finish
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "citeline", "--index", str(index), "add", str(folder)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(),
        )
        for folder in (a, b)
    ]
    for p in procs:
        _out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    kb = citeline.open(index, create=False)
    assert len(kb.documents(Filter.admin())) == 6 and kb.check().ok
    kb.close()


def test_two_processes_create_one_new_index_at_once(open_index: OpenIndex, tmp_path: Path) -> None:
    a, b, index = tmp_path / "a", tmp_path / "b", open_index.location("index")
    write_docs(a, 2)
    write_docs(b, 2, version=2)
    for _attempt in range(2):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "citeline", "--index", str(index), "add", str(folder)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=cli_env(),
            )
            for folder in (a, b)
        ]
        for p in procs:
            _out, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
    assert cli(index, "check").returncode == 0
