"""Distributed ingestion on a real local Ray cluster (started here: 2 CPUs, loopback only).

The Ray path must turn the samples into exactly what a local run makes: the same document ids,
chunk ids, spans and hashes, and vectors within 1e-5 cosine; a re-run embeds nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import citeline
from citeline.cli import main
from citeline.index.sqlite import text_hash
from citeline.kb import KnowledgeBase
from citeline.retrieval.filters import Filter
from conftest import ROOT, SAMPLES, unavailable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def ray_address() -> Iterator[str]:
    """A Ray head on 127.0.0.1 with 2 CPUs, reached through Ray Client (ray://); stopped by
    process group afterwards (never `ray stop`, which would stop every Ray on the machine)."""
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        unavailable("Ray", f"not installed ({exc}); pip install 'citeline[ray]'")
    ray_bin = Path(sys.executable).parent / "ray"
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
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        str(ray_bin), "start", "--head", "--block", "--num-cpus=2", "--num-gpus=0", "--node-ip-address=127.0.0.1",
        "--include-dashboard=false", "--disable-usage-stats", "--object-store-memory=200000000",
        f"--temp-dir={temp}", *(f"{k}={v}" for k, v in ports.items()),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
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
        yield f"ray://127.0.0.1:{client}"
    finally:
        for sig in (signal.SIGINT, signal.SIGKILL):  # `ray start --block` stops its processes on ^C
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(temp, ignore_errors=True)


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

    monkeypatch.setattr(distributed.time, "sleep", lambda s: None)
    once = FlakyRay(1)
    assert distributed._connect(once, "ray://127.0.0.1:1") is True
    assert (once.inits, once.shutdowns) == (2, 1)
    always = FlakyRay(99)
    with pytest.raises(ConnectionAbortedError):
        distributed._connect(always, "ray://127.0.0.1:1")
    assert always.inits == distributed.CONNECT_TRIES
