"""Distributed ingestion on a real local Ray cluster (started here: 2 CPUs, loopback only).

The Ray path must turn the samples into exactly what a local run makes: the same document ids,
chunk ids, spans and hashes, and vectors within 1e-5 cosine; a re-run embeds nothing.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import citeline
from citeline.cli.main import main
from citeline.errors import WorkersUnavailableError
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.types import text_hash
from conftest import ROOT, SAMPLES, unavailable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class RayHead:
    address: str  # ray://127.0.0.1:PORT
    home: Path  # the head's home: ~/.ray/auth_token holds its token


def _env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process whose home is ``home`` (Ray looks for its token there); models
    stay where they are (the cache is under the real home)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_AUTH_", "CITELINE_"))}
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"),
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
        **extra,
    )
    return env


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    """A Ray head as README's "PostgreSQL and Ray" starts it (`ray start --head`, 2 CPUs, loopback
    only), on a machine where a Ray token exists: every local ``ray.init()`` writes one to
    ~/.ray/auth_token, and the pinned Ray then turns token authentication on by itself. Reached
    through Ray Client (ray://); stopped by process group afterwards (never `ray stop`, which would
    stop every Ray on the machine)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        unavailable("Ray", f"not installed ({exc}); pip install 'citeline[ray]'")
    ray_bin = Path(sys.executable).parent / "ray"
    home = tmp_path_factory.mktemp("ray-home")
    (home / ".ray").mkdir()
    (home / ".ray" / "auth_token").write_text(secrets.token_hex(32), encoding="utf-8")
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    client = _free_port()
    ports = {
        "--port": _free_port(),
        "--ray-client-server-port": client,
        "--node-manager-port": _free_port(),
        "--object-manager-port": _free_port(),
        "--metrics-export-port": _free_port(),
        "--dashboard-agent-listen-port": _free_port(),
        "--dashboard-agent-grpc-port": _free_port(),
        "--runtime-env-agent-port": _free_port(),
        "--min-worker-port": 0,
        "--max-worker-port": 0,
    }
    command = [
        str(ray_bin), "start", "--head", "--block", "--num-cpus=2", "--num-gpus=0", "--node-ip-address=127.0.0.1",
        "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory=200000000",
        f"--temp-dir={temp}", *(f"{k}={v}" for k, v in ports.items()),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=_env(home), start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 120
    try:
        while True:
            if proc.poll() is not None:
                unavailable(
                    "Ray", (proc.stdout.read() if proc.stdout else b"").decode(errors="replace")[-2000:]
                )
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", client)) == 0:
                    break
            if time.monotonic() > deadline:
                unavailable("Ray", "the head did not open its client port within 120 s")
            time.sleep(1)
        yield RayHead(f"ray://127.0.0.1:{client}", home)
    finally:
        for sig in (signal.SIGINT, signal.SIGKILL):  # `ray start --block` stops its processes on ^C
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture()
def ray_address(ray_head: RayHead, monkeypatch: pytest.MonkeyPatch) -> str:
    """The head's address, for this process: its token where Ray looks for one (a file named by
    RAY_AUTH_TOKEN_PATH; this process keeps its own home)."""
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(ray_head.home / ".ray" / "auth_token"))
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    return ray_head.address


def _chunks(kb: KnowledgeBase, doc_id: str) -> list[tuple[str, int, int, str, str]]:
    found = kb.store.chunks(kb.store.document_chunks(doc_id))
    return [
        (c.id, c.start, c.end, c.text, text_hash(c.index_text))
        for c, _ in sorted(found.values(), key=lambda x: x[0].ordinal)
    ]


def test_ray_ingest_matches_a_local_run(ray_address: str, pg_url: str, tmp_path: Path) -> None:
    shutil.copytree(SAMPLES, tmp_path / "samples")
    docs = tmp_path / "samples"
    local = citeline.open(tmp_path / "local")
    expected = local.add([docs], root=tmp_path)
    assert not expected.failed
    shared = citeline.open(pg_url)
    events: list[str] = []
    report = shared.add([docs], root=tmp_path, workers=ray_address, progress=lambda e, n: events.append(e))
    assert not report.failed, report.failed
    assert sorted(report.added) == sorted(expected.added)
    assert report.chunks_written == expected.chunks_written and "file" in events and "chunks" in events

    admin = Filter.admin()
    ours = {d.id: d for d in shared.store.documents(admin)}
    for doc in local.store.documents(admin):
        other = ours.pop(doc.id)
        assert (other.source, other.content_hash, other.title, other.page_count) == (
            doc.source,
            doc.content_hash,
            doc.title,
            doc.page_count,
        )
        assert shared.store.document_text(doc.id) == local.store.document_text(doc.id)
        assert shared.store.original(doc.id) == local.store.original(doc.id)
        want, got = _chunks(local, doc.id), _chunks(shared, doc.id)
        assert got == want, doc.source
        hashes = [h for *_, h in want]
        a, b = local.store.cached_vectors(hashes), shared.store.cached_vectors(hashes)
        for h in hashes:
            assert float(np.dot(a[h], b[h]) / (np.linalg.norm(a[h]) * np.linalg.norm(b[h]))) >= 1 - 1e-5
    assert not ours
    assert "RAY_AUTH_MODE" not in os.environ  # token mode was this run's only

    again = shared.add([docs], root=tmp_path, workers=ray_address)
    assert len(again.unchanged) == len(expected.added) and again.chunks_embedded == 0 and not again.added

    # the folder is reconciled as a local run does: a document whose file is gone is removed
    gone = sorted(expected.added)[0]
    (tmp_path / gone).unlink()
    pruned = shared.add([docs], root=tmp_path, workers=ray_address)
    assert pruned.removed == [gone] and not pruned.failed and pruned.chunks_embedded == 0
    assert local.add([docs], root=tmp_path).removed == [gone]
    assert {d.id for d in shared.store.documents(admin)} == {d.id for d in local.store.documents(admin)}
    local.close()
    shared.close()


def test_a_progressive_ray_add_writes_the_fast_vectors_a_local_one_writes(
    ray_address: str, tmp_path: Path
) -> None:
    """`add --progressive --workers`: the workers embed with the fast embedder, the chunks are
    pending as after a local progressive add, and `embed` fills in the full vectors."""
    shutil.copytree(SAMPLES, tmp_path / "samples")
    docs = tmp_path / "samples"
    local, shared = citeline.open(tmp_path / "local"), citeline.open(tmp_path / "ray")
    expected = local.add([docs], root=tmp_path, progressive=True)
    report = shared.add([docs], root=tmp_path, workers=ray_address, progressive=True)
    assert not report.failed and sorted(report.added) == sorted(expected.added)
    stats = shared.status()
    assert stats["full_vectors"] == 0 and stats["pending_vectors"] == local.status()["pending_vectors"]
    hashes = [h for h, _ in local.store.all_text_hashes()]
    a = local.store.cached_vectors(hashes, embedder="minilm-static")
    b = shared.store.cached_vectors(hashes, embedder="minilm-static")
    assert set(a) == set(b) == set(hashes)
    assert all(float(np.dot(a[h], b[h])) >= 1 - 1e-5 for h in hashes)
    assert shared.embed()["finished"] and shared.status()["full_vectors"] == stats["chunks"]
    assert shared.check().ok
    local.close()
    shared.close()


def test_workers_spec_is_checked_before_anything_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["--index", str(tmp_path / "i"), "add", "--workers", "ray:/x", str(SAMPLES)]
    )
    assert result.exit_code != 0 and "ray://HOST:PORT or local:N" in result.output
    assert not (tmp_path / "i").exists()


def test_a_ray_client_connection_that_fails_once_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray Client's per-client server can fail to start on a loaded head ("Starting Ray client
    server failed"); the connection is tried again, and a lasting failure still raises."""
    from citeline.ingest import distributed

    class FlakyRay:
        def __init__(self, failures: int) -> None:
            self.failures, self.inits, self.shutdowns = failures, 0, 0

        def is_initialized(self) -> bool:
            return False

        def init(self, **_: object) -> None:
            self.inits += 1
            if self.inits <= self.failures:
                raise ConnectionAbortedError(
                    "Initialization failure from server: Starting Ray client server failed"
                )

        def shutdown(self) -> None:
            self.shutdowns += 1

    monkeypatch.setattr(time, "sleep", lambda s: None)  # the back-off between _connect's tries
    once = FlakyRay(1)
    assert distributed._connect(once, "ray://127.0.0.1:1") is True
    assert (once.inits, once.shutdowns) == (2, 1)
    always = FlakyRay(99)
    with pytest.raises(
        WorkersUnavailableError, match=re.escape("Could not connect to the Ray cluster at ray://127.0.0.1:1")
    ):
        distributed._connect(always, "ray://127.0.0.1:1")
    assert always.inits == distributed.CONNECT_TRIES


# -- token authentication, connection failures, summaries: through the `citeline` command ----------


def citeline_cli(index: str | Path, *args: str, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citeline", "--index", str(index), *args],
        capture_output=True,
        text=True,
        env=_env(home, CITELINE_EMBEDDER="hashing", **env),
        timeout=600,
    )


def test_the_head_turned_token_authentication_on(ray_head: RayHead) -> None:
    """The case README's commands meet: a Ray Client call without the token is refused."""
    from citeline.ingest.ray_connect import client_address, probe

    host, port = client_address(ray_head.address)
    token = (ray_head.home / ".ray" / "auth_token").read_text(encoding="utf-8")
    assert probe(host, port, None) == "unauthenticated"
    assert probe(host, port, token) == "ok"


def test_add_with_workers_joins_a_head_that_wants_a_token(ray_head: RayHead, tmp_path: Path) -> None:
    """`citeline add --workers ray://...` as README shows it, the token in ~/.ray/auth_token (where
    `ray start` found it): it works, and prints the summary line. It was: exit 70 after ~98 s,
    "internal error: ConnectionError: ray client connection timeout"."""
    shutil.copytree(SAMPLES, tmp_path / "samples")
    n = len(list(SAMPLES.iterdir()))
    add = citeline_cli(
        tmp_path / "index",
        "add",
        "--workers",
        ray_head.address,
        str(tmp_path / "samples"),
        home=ray_head.home,
    )
    assert add.returncode == 0, add.stderr[-2000:]
    assert add.stdout == f"{n} added, 0 updated, 0 unchanged, 0 failed\n"


@pytest.mark.parametrize(
    ("how", "message"),
    [
        (
            "nothing-there",
            "Cannot reach the Ray cluster at {address}: connection refused. Check that `ray start --head` runs there",
        ),
        (
            "no-token",
            "The Ray cluster at {address} requires token authentication and no token was found here: put the head's token",
        ),
        (
            "wrong-token",
            "The Ray cluster at {address} refused the token in RAY_AUTH_TOKEN: it is not the head's token",
        ),
    ],
)
def test_a_cluster_that_cannot_be_joined_is_exit_4_naming_it(
    ray_head: RayHead, tmp_path: Path, how: str, message: str
) -> None:
    address = f"ray://127.0.0.1:{_free_port()}" if how == "nothing-there" else ray_head.address
    env = {"RAY_AUTH_TOKEN": "not-the-token"} if how == "wrong-token" else {}
    (tmp_path / "doc.md").write_text("# Doc\n\nSome text.\n", encoding="utf-8")
    t = time.monotonic()
    add = citeline_cli(
        tmp_path / "index", "add", "--workers", address, str(tmp_path / "doc.md"), home=tmp_path, **env
    )
    assert add.returncode == 4, add.stderr[-2000:]
    assert f"error: {message.format(address=address)}" in add.stderr
    assert "Traceback" not in add.stderr and "internal error" not in add.stderr
    assert time.monotonic() - t < 60  # not Ray Client's ~100 s of retries


def test_a_re_add_after_an_interrupted_ray_load_builds_the_vector_index(
    ray_head: RayHead, pg_url: str, tmp_path: Path
) -> None:
    """A Ray load into an empty PostgreSQL index drops the HNSW index and builds it at the end;
    killed in between, the index has none. The next `add --workers` builds it and says so."""
    from reliability.util import generation, write_docs

    docs = tmp_path / "docs"
    write_docs(docs, 400, paragraphs=2)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "citeline",
            "--index",
            pg_url,
            "add",
            "--workers",
            ray_head.address,
            str(docs),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env(ray_head.home, CITELINE_EMBEDDER="hashing"),
    )
    deadline = time.monotonic() + 300
    while generation(pg_url) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)  # a batch of documents is written: the HNSW index is gone until the end
    assert proc.poll() is None, "the load finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert citeline_cli(pg_url, "check", home=ray_head.home).returncode == 1  # "HNSW index is missing"

    again = citeline_cli(pg_url, "add", "--workers", ray_head.address, str(docs), home=ray_head.home)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "note: the vector index (HNSW) was missing, as an interrupted bulk load leaves it" in again.stderr
    assert "400 added" not in again.stdout and "0 failed" in again.stdout
    check = citeline_cli(pg_url, "check", home=ray_head.home)
    assert check.returncode == 0, check.stdout


def test_a_worker_says_whether_a_file_it_cannot_index_failed_or_was_skipped() -> None:
    """A Ray worker's answer for a file it does not index keeps the local run's split: a file with no
    text is skipped (exit 0), one that cannot be read fails (exit 3)."""
    from citeline.ingest.distributed import NotIndexed, Worker
    from citeline.ingest.pipeline import FileJob
    from citeline.settings import Settings

    worker = Worker("hashing", Settings())

    def job(name: str, data: bytes, existing: bool = False) -> FileJob:
        return FileJob(name, f"/d/{name}", data, "h", "id", "default", len(data), 0.0, {}, (), existing, {})

    nav = b"<html><body><nav><a href='a.html'>A</a></nav></body></html>"
    assert worker.prepare(job("nav.html", nav)) == NotIndexed([], [("nav.html", "no text content")])
    assert worker.prepare(job("blank.md", b"  \n", existing=True)) == NotIndexed(
        [], [("blank.md", "the file is empty (no text to index); the version indexed before is kept")]
    )
    broken = worker.prepare(job("broken.pdf", b"%PDF-1.4 not really a pdf"))
    assert isinstance(broken, NotIndexed) and not broken.skipped and broken.failed[0][0] == "broken.pdf"
