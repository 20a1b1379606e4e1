"""Resource faults: a full disk during ingest, a read-only index, a generator endpoint that is down,
slow or answers garbage, an embedder that fails mid-batch, a dense side that fails or is too slow
(the circuit breaker falls back to keyword-only retrieval and says so). Clear errors, no corruption,
retries with backoff where they make sense."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import citeline
from citeline.embedding.hashing import HashingEmbedder
from citeline.errors import GeneratorError, ReadOnlyIndexError
from citeline.filters import Filter, Principal
from citeline.index.sqlite import DB_NAME
from citeline.kb import KnowledgeBase
from citeline.retrieval.breaker import CircuitBreaker

from .util import cli, cli_env, report_figures, write_docs

ADMIN = Principal.local_admin()
FAULTS: dict[str, int] = {}


def injected(kind: str, n: int = 1) -> None:
    FAULTS[kind] = FAULTS.get(kind, 0) + n


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    yield
    report_figures("faults_injected", dict(FAULTS))


def _whole(index: Path, docs: Path, earlier: dict[str, str] | None = None) -> int:
    """check passes and every stored document is exactly its file (or its ``earlier`` version)."""
    kb = citeline.open(index, create=False)
    try:
        assert kb.check().ok
        stored = kb.documents(Filter.admin())
        for doc in stored:
            name = Path(doc.source).name
            text = kb.text(doc)
            assert text == (docs / name).read_text(encoding="utf-8") or text == (earlier or {}).get(name)
        return len(stored)
    finally:
        kb.close()


# -- disk full -------------------------------------------------------------------------------------


def _limit_file_size(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_disk_full_during_ingest_fails_cleanly_and_resumes(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    earlier = write_docs(docs, 3)
    assert cli(index, "add", str(docs)).returncode == 0
    write_docs(docs, 60, version=1, paragraphs=12)  # 3 changed, 57 new: far more than the limit allows
    limit = sum(p.stat().st_size for p in index.iterdir()) + 96 * 1024
    proc = subprocess.run(
        [sys.executable, "-m", "citeline", "--index", str(index), "add", str(docs)],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
        preexec_fn=lambda: _limit_file_size(limit),
    )
    injected("disk_full_rlimit_fsize")
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    assert "disk is full" in proc.stderr and "Traceback" not in proc.stderr
    assert "added" in proc.stdout  # the summary of what was done before
    before = _whole(index, docs, earlier)
    assert before < 60
    again = cli(index, "add", str(docs))
    assert again.returncode == 0, again.stderr
    assert _whole(index, docs) == 60


def test_disk_full_on_a_small_tmpfs(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (not root or no CAP_SYS_ADMIN); RLIMIT_FSIZE covers it")
    try:
        docs, index = tmp_path / "docs", mount / "index"
        write_docs(docs, 80, paragraphs=14)
        proc = cli(index, "add", str(docs), "--json")
        injected("disk_full_tmpfs")
        assert proc.returncode == 4, proc.stdout
        error = json.loads(proc.stdout)["error"]
        assert error["code"] == "DiskFullError" and "disk is full" in error["message"]
        assert 0 < len(json.loads(proc.stdout)["report"]["added"]) < 80
        kb = citeline.open(index, create=False)
        assert kb.check().ok and kb.ask("How often does component C1-1 retry?", ADMIN)
        kb.close()
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


# -- read-only index -------------------------------------------------------------------------------


def test_read_only_index_answers_and_refuses_writes_clearly(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    write_docs(docs, 2)
    assert cli(index, "add", str(docs)).returncode == 0
    kb = citeline.open(index, read_only=True, refusal_threshold=0.0, min_answer_score=0.0)
    try:
        answer = kb.ask("How often does component C1-2 retry?", ADMIN)
        assert answer.citations and answer.trace_id is None  # no trace is written
        with pytest.raises(ReadOnlyIndexError, match="read-only"):
            kb.add([docs])
        with pytest.raises(ReadOnlyIndexError):
            kb.store.remove_document(kb.documents(ADMIN)[0].id)
        injected("read_only_index", 2)
    finally:
        kb.close()
    assert _whole(index, docs) == 2


def test_index_on_a_read_only_file_system(tmp_path: Path) -> None:
    """A read-only mount (a shipped index, a snapshot): SQLite cannot create the WAL index file it
    needs, so the index is opened immutable; reads work, writes exit 4."""
    docs, index, view = tmp_path / "docs", tmp_path / "index", tmp_path / "ro"
    write_docs(docs, 2)
    assert cli(index, "add", str(docs)).returncode == 0
    view.mkdir()
    bound = subprocess.run(["mount", "--bind", str(index), str(view)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip("cannot bind-mount here (not root or no CAP_SYS_ADMIN)")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(view)], capture_output=True).returncode:
            pytest.skip("cannot remount read-only here")
        search = cli(view, "search", "--json", "component C1-2 retries")
        assert search.returncode == 0 and json.loads(search.stdout)["results"], search.stderr
        assert cli(view, "check").returncode == 0
        add = cli(view, "add", str(docs))
        injected("read_only_file_system")
        assert add.returncode == 4 and "read-only" in add.stderr
    finally:
        subprocess.run(["umount", str(view)], capture_output=True)


def test_read_only_files_for_another_user(tmp_path: Path) -> None:
    """The index as its files are for a user who may read but not write them."""
    shared = Path(os.environ.get("TMPDIR", "/tmp")) / f"citeline-ro-{os.getpid()}"
    shutil.rmtree(shared, ignore_errors=True)
    docs, index = shared / "docs", shared / "index"
    write_docs(docs, 2)
    try:
        assert cli(index, "add", str(docs)).returncode == 0
        for path in [shared, docs, index, *docs.iterdir(), *index.iterdir()]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        if os.geteuid() == 0:
            run_as: dict[str, Any] = {"user": 65534, "group": 65534, "extra_groups": []}
        else:  # not root: make the files read-only for ourselves
            for path in index.iterdir():
                path.chmod(0o444)
            index.chmod(0o555)
            run_as = {}
        env = cli_env(HOME=str(shared))

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "citeline", "--index", str(index), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                **run_as,
            )

        try:
            probe = run("--help")
        except OSError as exc:
            pytest.skip(f"the other user cannot run this Python: {exc}")
        if probe.returncode != 0:
            pytest.skip(f"the other user cannot run Python here: {probe.stderr[-200:]}")
        ask = run("ask", "--json", "How often does component C1-2 retry?")
        assert ask.returncode == 0, ask.stderr
        assert json.loads(ask.stdout)["citations"]
        add = run("add", str(docs / "report-000.md"))
        injected("read_only_files")
        assert add.returncode == 4 and "read-only" in add.stderr, add.stderr
    finally:
        for path in shared.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(shared, ignore_errors=True)


# -- generator endpoint down, slow, garbage ------------------------------------------------------------


class Endpoint:
    """A tiny OpenAI-compatible server on loopback that misbehaves as told."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                outer.hits += 1
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                mode = outer.mode
                if mode == "slow":
                    time.sleep(3)
                if mode == "500":
                    self._send(500, b'{"error": {"message": "overloaded"}}')
                elif mode == "html":
                    self._send(200, b"<html><body>Bad gateway, try later</body></html>", "text/html")
                elif mode == "not-json":
                    self._send(200, b'{"choices": [ {"message": ', "application/json")
                elif mode == "wrong-shape":
                    self._send(200, b'{"id": "x", "object": "chat.completion", "choices": []}')
                elif mode == "nonsense":
                    content = json.dumps({"answer": {"sentences": [{"text": "PWNED", "citations": [99]}]}})
                    body = {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "m",
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                    }
                    self._send(200, json.dumps(body).encode())
                else:
                    self._send(404, b"{}")

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    yield e
    e.close()


@pytest.fixture()
def llm_kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KnowledgeBase]:
    pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-not-secret")
    docs = tmp_path / "docs"
    write_docs(docs, 3)
    # the guards off (the relevance threshold and the extractive floor, which the hashing
    # embedder's similarities never reach): each test is about what the LLM endpoint does
    kb = citeline.open(tmp_path / "index", embedder="hashing", refusal_threshold=0.0, min_answer_score=0.0)
    kb.add([docs])
    yield kb
    kb.close()


def _llm(kb: KnowledgeBase, url: str, **settings: Any) -> None:
    kb.settings = kb.settings.replace(generator="openai", generator_base_url=url, **settings)


def test_generator_endpoint_down(llm_kb: KnowledgeBase, endpoint: Endpoint) -> None:
    url = endpoint.url
    endpoint.close()  # nothing listens there any more
    _llm(llm_kb, url, generator_retries=1, generator_timeout_s=2)
    t = time.perf_counter()
    with pytest.raises(GeneratorError, match="failed calling") as caught:
        llm_kb.ask("How often does component C1-2 retry?", ADMIN)
    injected("generator_down")
    assert "127.0.0.1" in str(caught.value) and time.perf_counter() - t < 30
    assert llm_kb.check().ok


@pytest.mark.parametrize("mode", ["500", "slow", "html", "not-json", "wrong-shape"])
def test_generator_endpoint_misbehaving(llm_kb: KnowledgeBase, endpoint: Endpoint, mode: str) -> None:
    endpoint.mode = mode
    _llm(llm_kb, endpoint.url, generator_retries=2, generator_timeout_s=1)
    t = time.perf_counter()
    with pytest.raises(GeneratorError) as caught:
        llm_kb.ask("How often does component C1-2 retry?", ADMIN)
    elapsed = time.perf_counter() - t
    injected(f"generator_{mode}")
    message = str(caught.value)
    assert "openai generator" in message and "Traceback" not in message
    if mode in ("500", "slow"):  # transient: retried with backoff, then a clear error
        assert endpoint.hits == 3, endpoint.hits
    assert elapsed < 60
    assert llm_kb.check().ok


def test_generator_nonsense_is_refused_not_shown(
    llm_kb: KnowledgeBase, endpoint: Endpoint, tmp_path: Path
) -> None:
    endpoint.mode = "nonsense"  # well-formed, but cites a source that does not exist
    _llm(llm_kb, endpoint.url)
    answer = llm_kb.ask("How often does component C1-2 retry?", ADMIN)
    injected("generator_nonsense")
    # the extractive answer on the same passages replaces it (answer/fallback.py); the trace keeps it
    assert not answer.refused, answer.refusal_reason
    assert answer.generator == "extractive" and "PWNED" not in answer.answer
    assert answer.trace_id is not None
    trace = llm_kb.trace(answer.trace_id)
    assert trace is not None and trace.fallback is not None
    assert trace.fallback["reason"] == "no answer sentence is supported by its cited passage"
    # ... and `citeline ask` says so
    proc = cli(
        tmp_path / "index",
        "ask",
        "How often does component C1-2 retry?",
        CITELINE_GENERATOR="openai",
        CITELINE_GENERATOR_BASE_URL=endpoint.url,
        CITELINE_REFUSAL_THRESHOLD="0",  # llm_kb's guards
        CITELINE_MIN_ANSWER_SCORE="0",
    )
    assert proc.returncode == 0, proc.stderr
    assert "[1]" in proc.stdout and "PWNED" not in proc.stdout
    assert "the model's answer was refused (no answer sentence is supported" in " ".join(proc.stderr.split())
    _llm(llm_kb, endpoint.url, fallback_reader_score=2.0)  # no extractive answer in its place
    answer = llm_kb.ask("How often does component C1-2 retry?", ADMIN)
    assert answer.refused and "PWNED" not in answer.answer and 99 in answer.dropped_citations


def test_generator_failure_through_the_server_is_a_502(llm_kb: KnowledgeBase, endpoint: Endpoint) -> None:
    pytest.importorskip("fastapi")
    import httpx

    from citeline.access import create_key
    from serve.live import serving

    endpoint.mode = "html"
    _llm(llm_kb, endpoint.url, generator_retries=0)
    key, _ = create_key(llm_kb.store, "ann", (), "reader")
    with serving(llm_kb) as url:
        r = httpx.post(
            f"{url}/v1/ask",
            json={"question": "How often does C1-2 retry?"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
    injected("generator_via_server")
    assert r.status_code == 502 and r.json()["error"]["code"] == "GeneratorError"


# -- embedder failure mid-batch --------------------------------------------------------------------


class FlakyEmbedder(HashingEmbedder):
    """The hashing embedder, failing (or lying) on chosen calls of embed()."""

    def __init__(
        self,
        fail_calls: Collection[int] = (),
        nan_calls: Collection[int] = (),
        fail_texts: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.fail_calls, self.nan_calls, self.fail_texts = set(fail_calls), set(nan_calls), tuple(fail_texts)
        self.n = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.n += 1
        if self.n in self.fail_calls or any(f in t for f in self.fail_texts for t in texts):
            raise RuntimeError(f"onnxruntime: out of memory on call {self.n}")
        out = super().embed(texts)
        if self.n in self.nan_calls:
            out[0, 0] = np.nan
        return out


def _big_doc(path: Path, sections: int = 150) -> None:
    body = "\n\n".join(f"## Section {i}\n\nThe valve V{i} opens at {i + 10} bar." for i in range(sections))
    path.write_text(f"# Valves\n\n{body}\n", encoding="utf-8")


def _kb_with(tmp_path: Path, embedder: HashingEmbedder) -> KnowledgeBase:
    base = citeline.open(tmp_path / "index", embedder="hashing")
    assert base.embedder.name == embedder.name  # binds the index to it
    return KnowledgeBase(base.settings, base.store, embedder=embedder)


def test_embedder_failing_mid_batch_writes_nothing_of_that_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import citeline.ingest.embed as embed

    monkeypatch.setattr(embed, "RETRY_BACKOFF_S", 0.01)
    docs = tmp_path / "docs"
    write_docs(docs, 2)
    _big_doc(docs / "valves.md")  # > 64 chunks: several batches
    # The three files' chunks are embedded together, shortest first: the calls before the one that
    # holds valves' last section work, that one fails every try. Each file is then embedded alone
    # with the vectors already made: the reports' work, valves' fails again: nothing of it is written.
    embedder = FlakyEmbedder(fail_texts=["valve V149 "])
    kb = _kb_with(tmp_path, embedder)
    report = kb.add([docs])
    injected("embedder_failure_mid_batch", 3)
    assert embedder.texts_embedded > 64  # valves' first batches were embedded before the failure
    reason = dict(report.failed)[str(docs / "valves.md")]
    assert "failed on a batch of" in reason and "3 tries" in reason and "nothing of this document" in reason
    assert {Path(s).name for s in report.added} == {"report-000.md", "report-001.md"}
    assert kb.store.find_document(os.path.abspath(docs / "valves.md")) is None
    assert kb.check().ok  # the first batch's vectors were never written
    assert kb.store.stats()["vectors"] == kb.store.stats()["chunks"]
    healthy = KnowledgeBase(kb.settings, kb.store, embedder=HashingEmbedder())
    assert [Path(s).name for s in healthy.add([docs]).added] == ["valves.md"]
    kb.close()


def test_transient_embedder_failure_is_retried_with_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from types import SimpleNamespace

    import citeline.ingest.embed as embed

    pauses: list[float] = []
    monkeypatch.setattr(embed, "time", SimpleNamespace(sleep=pauses.append, time=time.time))
    docs = tmp_path / "docs"
    docs.mkdir()
    _big_doc(docs / "valves.md")
    embedder = FlakyEmbedder(fail_calls={2, 3})  # batch 2 fails twice, then works
    kb = _kb_with(tmp_path, embedder)
    report = kb.add([docs])
    injected("embedder_transient_failure", 2)
    assert not report.failed and report.added
    assert pauses == [embed.RETRY_BACKOFF_S, embed.RETRY_BACKOFF_S * 2]  # exponential backoff
    assert kb.check().ok
    kb.close()


def test_embedder_returning_nan_is_refused(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_docs(docs, 1)
    kb = _kb_with(tmp_path, FlakyEmbedder(nan_calls={1}))
    report = kb.add([docs])
    injected("embedder_nan")
    assert "NaN" in report.failed[0][1] and not report.added and kb.check().ok
    kb.close()


# -- the circuit breaker ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_failures_and_closes_after_a_good_trial() -> None:
    clock = Clock()
    breaker = CircuitBreaker(timeout_ms=500, failures=2, cooldown_s=30, clock=clock)

    def boom() -> int:
        raise RuntimeError("vector engine down")

    for _ in range(2):
        out = breaker.result(breaker.submit(boom), time.perf_counter())
        assert out.value is None and "vector engine down" in (out.degraded or "")
    assert breaker.state == "open"
    calls: list[int] = []

    def counted() -> int:
        calls.append(1)
        return 1

    shut = breaker.result(breaker.submit(counted), time.perf_counter())
    assert not calls and "circuit open" in (shut.degraded or "")
    clock.now += 31
    assert breaker.state == "half-open"
    assert breaker.result(breaker.submit(lambda: 7), time.perf_counter()).value == 7
    assert breaker.state == "closed"

    def sleepy() -> int:
        time.sleep(2)
        return 1

    slow = breaker.result(breaker.submit(sleepy), time.perf_counter())
    assert "longer than 500 ms" in (slow.degraded or "")


@pytest.fixture()
def breaker_kb(tmp_path: Path) -> Iterator[KnowledgeBase]:
    docs = tmp_path / "docs"
    write_docs(docs, 4)
    kb = citeline.open(
        tmp_path / "index",
        embedder="hashing",
        dense_timeout_ms=1000,
        breaker_failures=2,
        refusal_threshold=0.2,
        min_answer_score=0.0,
    )
    kb.add([docs])
    yield kb
    kb.close()


QUESTION = "How often does component C2-3 retry and after how many attempts does it give up?"


def test_dense_failure_falls_back_to_keyword_search(
    breaker_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    healthy = breaker_kb.ask(QUESTION, ADMIN)
    assert healthy.degraded is None and healthy.to_json()["degraded"] is None
    calls = []

    def down(*args: object, **kwargs: object) -> list[tuple[str, float]]:
        calls.append(1)
        raise ConnectionError("vector engine unreachable")

    monkeypatch.setattr(breaker_kb.store, "vector_search", down)
    answer = breaker_kb.ask(QUESTION, ADMIN)
    injected("dense_failure")
    assert answer.degraded and "vector engine unreachable" in answer.degraded
    assert not answer.refused and "C2-3" in answer.citations[0].quote  # keyword search found it
    assert answer.to_json()["degraded"] == answer.degraded
    trace = breaker_kb.trace(answer.trace_id or "")
    assert trace is not None and trace.degraded == answer.degraded and trace.relevance["keyword_only"]
    hits = breaker_kb.search("component C2-3 retries", ADMIN, k=5)
    assert hits and all("dense" not in h.stages for h in hits)
    # two failures in a row: the circuit is open, the dense side is not even tried
    before = len(calls)
    third = breaker_kb.ask(QUESTION, ADMIN)
    assert len(calls) == before and "circuit open" in (third.degraded or "")


def test_slow_dense_side_is_cut_off_at_its_budget(
    breaker_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = breaker_kb.store.vector_search

    def slow(*args: Any, **kwargs: Any) -> list[tuple[str, float]]:
        time.sleep(8.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(breaker_kb.store, "vector_search", slow)
    t = time.perf_counter()
    answer = breaker_kb.ask(QUESTION, ADMIN)
    elapsed = time.perf_counter() - t
    injected("dense_slow")
    assert "longer than 1000 ms" in (answer.degraded or "") and not answer.refused
    assert elapsed < 7.0  # did not wait for the slow side


def test_ask_json_reports_degraded(tmp_path: Path) -> None:
    docs, index = tmp_path / "docs", tmp_path / "index"
    write_docs(docs, 2)
    assert cli(index, "add", str(docs)).returncode == 0
    data = json.loads(cli(index, "ask", "--json", "How often does component C1-2 retry?").stdout)
    assert "degraded" in data and data["degraded"] is None
    assert (index / DB_NAME).exists()
