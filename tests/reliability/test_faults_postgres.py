"""Faults of the PostgreSQL store: the server crashed, stopped or SIGKILLed in the middle of
`citeline add`, crashed in the middle of `ask`, nothing listening at open, a wrong password, a
read-only database.

Every one ends in a clear error that names the index with its password masked (exit code 4 when
trying again later can work, 1 when it cannot), and never in corruption: after the server comes
back the index passes `check`, holds whole documents only, and `add` completes the work. A store
that stays open (a server process) rides out a restart: broken pooled connections are replaced
and the pool reconnects with backoff within ``pg_connect_timeout_s``.

The tests that stop the server use a server of their own (the session's is shared by every test
worker); the others use a database on the session's server.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

import citeline
from citeline.errors import CitelineError, IndexBusyError, IndexUnavailableError, ReadOnlyIndexError
from citeline.filters import Principal
from citeline.index.postgres.local import LocalPostgres
from conftest import unavailable

from .util import cli, cli_env, generation, matches_folder, report_figures, size, verify_whole, write_docs

ADMIN = Principal.local_admin()
QUESTION = "How often does component C1-2 retry?"
FAULTS: dict[str, int] = {}


def injected(kind: str, n: int = 1) -> None:
    FAULTS[kind] = FAULTS.get(kind, 0) + n


@pytest.fixture(scope="module", autouse=True)
def figures() -> Iterator[None]:
    yield
    report_figures("faults_injected_postgresql", dict(FAULTS))


class Server:
    """A PostgreSQL server of this module's own, to crash, stop and start again."""

    def __init__(self, folder: Path) -> None:
        self.pg = LocalPostgres.start(folder)
        self.up = True

    def crash(self) -> None:
        self.pg.crash()
        self.up = False

    def stop(self) -> None:
        self.pg.stop(remove=False)
        self.up = False

    def kill(self) -> None:
        self.pg.kill()
        self.up = False

    def start(self) -> None:
        self.pg = self.pg.start_again()
        self.up = True

    def database(self, name: str) -> str:
        if not self.up:  # a test before this one left it down
            self.start()
        return self.pg.create_database(name)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    # not under pytest's basetemp: a concurrent pytest run of the same user prunes old basetemps,
    # and a running server whose data folder goes away fails every test after
    folder = Path(tempfile.mkdtemp(prefix="citeline-pg-faults-"))
    try:
        own = Server(folder / "server")
    except Exception as exc:  # as the session's server: CI=true fails instead of skipping
        unavailable("PostgreSQL (a server of the fault tests' own)", f"{type(exc).__name__}: {exc}")
    yield own
    if own.up:
        own.crash()  # faster than a clean shutdown, and nothing is kept
    # a data folder is a thousand files (seconds of CI time on a busy machine): removed meanwhile
    subprocess.Popen(["rm", "-rf", str(folder)], start_new_session=True)


def _password(url: str) -> str:
    return url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]


def _clear(proc: subprocess.CompletedProcess[str], url: str) -> str:
    """The command's error: one clear line naming the index, its password masked, no traceback."""
    out = proc.stdout + proc.stderr
    assert _password(url) not in out
    assert "Traceback" not in out
    assert "postgresql://citeline:***@127.0.0.1" in out, out[-500:]
    return out


def _add(url: str, docs: Path, **settings: Any) -> None:
    """`add` through the API (a command's start-up is seconds of CI time), the hashing embedder."""
    kb = citeline.open(url, embedder="hashing", **settings)
    try:
        report = kb.add([docs])
        assert not report.failed, report.failed
    finally:
        kb.close()


# -- nothing there, the wrong password -----------------------------------------------------------


def test_nothing_listening_at_open_is_unavailable_not_a_crash(pg_url: str) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = pg_url.replace(pg_url.split("@", 1)[1].split("/", 1)[0], f"127.0.0.1:{port}")
    t = time.perf_counter()
    with pytest.raises(IndexUnavailableError, match="cannot be reached now") as caught:
        citeline.open(url)
    assert _password(url) not in str(caught.value) and time.perf_counter() - t < 10
    status = cli(url, "status")
    asked = cli(url, "ask", "--json", QUESTION)
    injected("connection_refused", 3)
    assert status.returncode == 4 and "cannot be reached now" in _clear(status, url)
    error = json.loads(asked.stdout)["error"]
    assert asked.returncode == 4 and error["code"] == "IndexUnavailableError" and error["exit_code"] == 4
    _clear(asked, url)


def test_a_wrong_password_is_an_error_not_a_retry(pg_url: str) -> None:
    wrong = pg_url.replace(_password(pg_url), "not-the-password", 1)
    proc = cli(wrong, "status")
    injected("wrong_password")
    assert proc.returncode == 1 and "password authentication failed" in proc.stderr
    assert "not-the-password" not in proc.stdout + proc.stderr and "***" in proc.stderr


# -- a read-only database (a hot standby, or default_transaction_read_only) ---------------------


def test_read_only_database_answers_and_refuses_writes_clearly(
    pg_server: LocalPostgres, tmp_path: Path
) -> None:
    name = "t_readonly_" + os.urandom(4).hex()
    url = pg_server.create_database(name)
    docs = tmp_path / "docs"
    try:
        earlier = write_docs(docs, 3)
        _add(url, docs)
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        asked = cli(url, "ask", "--json", QUESTION)
        write_docs(docs, 5, version=1)
        added = cli(url, "add", "--json", str(docs))
        injected("read_only_database", 2)
        assert asked.returncode == 0 and "answer" in json.loads(asked.stdout), asked.stderr
        error = json.loads(added.stdout)["error"]
        assert (
            added.returncode == 4
            and error["code"] == "ReadOnlyIndexError"
            and "read-only" in error["message"]
        )
        assert json.loads(added.stdout)["report"]["added"] == []
        _clear(added, url)
        kb = citeline.open(url, create=False, embedder="hashing")
        try:
            assert kb.search("component C1-2 retries", ADMIN, k=3) and kb.check().ok
            with pytest.raises(ReadOnlyIndexError, match="read-only") as caught:
                kb.save_settings({"top_k": 7})
            assert _password(url) not in str(caught.value)
            with pytest.raises(ReadOnlyIndexError):
                kb.store.remove_document(kb.documents(ADMIN)[0].id)
            injected("read_only_database", 2)
        finally:
            kb.close()
        verify_whole(url, {n: {t} for n, t in earlier.items()})  # nothing was half-written
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
        _add(url, docs)
        matches_folder(url, docs)
    finally:
        pg_server.drop_database(name)


# -- the server crashes or stops while `citeline add` writes --------------------------------------


@pytest.mark.parametrize("how", ["crash", "stop", "kill"])
def test_server_gone_mid_ingest(server: Server, tmp_path: Path, how: str) -> None:
    """`add` stops with exit code 4 and its summary; after the restart the index is whole and the
    next `add` completes the work. The server crashes (pg_ctl stop -m immediate), stops (a fast
    shutdown: sessions are terminated) or has every process SIGKILLed (no cleanup at all).
    CITELINE_TEST_SERVER_CRASHES rounds of each (`make stress` raises it)."""
    rounds = size("SERVER_CRASHES", 1)
    rng = random.Random(int(os.environ.get("CITELINE_TEST_SEED", "15")))
    url = server.database(f"ingest_{how}")
    docs = tmp_path / "docs"
    first = write_docs(docs, 4)
    _add(url, docs)
    versions = {n: {t} for n, t in first.items()}
    figures: dict[str, Any] = {"rounds": 0, "exit_4": 0, "checks_passed": 0, "documents_after_restart": []}
    for round_ in range(1, rounds + 1):
        # enough files that the add is still writing when the server goes, even on a busy machine
        for n, t in write_docs(docs, 64, version=round_, paragraphs=10).items():
            versions.setdefault(n, set()).add(t)
        before = generation(url)
        proc = subprocess.Popen(
            [sys.executable, "-m", "citeline", "--index", url, "add", str(docs)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(CITELINE_PG_CONNECT_TIMEOUT_S="2"),
        )
        deadline = time.monotonic() + 120
        while generation(url) == before and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # once it has committed a document: in the middle of the work
        time.sleep(rng.uniform(0.0, 0.4))
        assert proc.poll() is None, "add finished before the server could be stopped"
        getattr(server, how)()
        injected(f"server_{how}_mid_ingest")
        out, err = proc.communicate(timeout=120)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        assert proc.returncode == 4, (proc.returncode, err[-1000:])
        message = _clear(done, url)
        assert "cannot be reached now" in message and "added" in out  # the summary of what was done
        # ... said as what was done before the error, and the error does not deny it (it said
        # "nothing was changed" under "80 added")
        assert out.startswith("before the error: ") and "nothing was changed" not in err
        assert "error connecting in" not in err  # the pool's reconnection warnings stay out of it
        figures["exit_4"] += 1
        server.start()
        counts = verify_whole(url, versions)  # no corruption: check passes, whole documents only
        figures["checks_passed"] += 1
        figures["documents_after_restart"].append(counts["documents"])
        figures["rounds"] += 1
    _add(url, docs)  # the work is completed
    matches_folder(url, docs)
    report_figures(f"server_{how}_mid_ingest", figures)


# -- the server goes away while a long-running process (a server, a notebook) asks --------------


def test_server_gone_mid_ask_then_back(server: Server, tmp_path: Path) -> None:
    url = server.database("ask")
    docs = tmp_path / "docs"
    texts = write_docs(docs, 4)
    kb = citeline.open(
        url, embedder="hashing", pg_connect_timeout_s=2, refusal_threshold=0.0, min_answer_score=0.0
    )
    try:
        assert not kb.add([docs]).failed
        assert kb.ask(QUESTION, ADMIN).citations
        server.crash()
        injected("server_crash_mid_ask")
        t = time.perf_counter()
        with pytest.raises(IndexUnavailableError) as caught:
            kb.ask(QUESTION, ADMIN)
        waited = time.perf_counter() - t
        message = str(caught.value)
        assert "cannot be reached now" in message and "postgresql://citeline:***@" in message
        # not only "couldn't get a connection": why (refused, or, when the pool's last attempt met the
        # server while it went down, "server closed the connection unexpectedly")
        assert "Connection refused" in message or "closed the connection unexpectedly" in message
        assert _password(url) not in message and waited < 30
        asked = cli(url, "ask", "--json", QUESTION, CITELINE_PG_CONNECT_TIMEOUT_S="2")
        assert asked.returncode == 4 and json.loads(asked.stdout)["error"]["exit_code"] == 4
        _clear(asked, url)
        server.start()
        # the same open store answers again at once: its broken connections are replaced
        for _ in range(5):
            assert kb.ask(QUESTION, ADMIN).citations
        assert kb.check().ok
    finally:
        kb.close()
    verify_whole(url, {n: {t} for n, t in texts.items()})


def test_a_restart_within_the_wait_is_ridden_out(server: Server, tmp_path: Path) -> None:
    """A question asked while the server restarts waits for it (the pool reconnects with
    backoff) instead of failing, when the server is back within pg_connect_timeout_s."""
    url = server.database("ride_out")
    docs = tmp_path / "docs"
    write_docs(docs, 3)
    kb = citeline.open(url, embedder="hashing", pg_connect_timeout_s=60, refusal_threshold=0.0)
    try:
        assert not kb.add([docs]).failed
        server.stop()
        injected("server_restart_during_ask")
        later = threading.Timer(1.5, server.start)
        later.start()
        t = time.perf_counter()
        try:
            hits = kb.search("component C1-2 retries", ADMIN, k=3)
        finally:
            later.join()
        assert hits and time.perf_counter() - t >= 1.0  # it did wait for the server
        writes = kb.add([docs])  # and writes again
        assert not writes.failed and kb.check().ok
    finally:
        kb.close()


def test_a_killed_writer_leaves_no_writer_lock_behind(pg_url: str, docs_dir: Path) -> None:
    """SIGKILL of a writer in the middle of its transaction: the server rolls it back and frees the
    writer lock (an advisory transaction lock), so the next writer need not wait for it."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, pg_url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(IndexBusyError, match="busy"):  # the lock is really held
            _add(pg_url, docs_dir, lock_timeout_s=0.5)
        os.kill(holder.pid, signal.SIGKILL)
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    injected("writer_sigkill_holding_the_lock")
    t = time.perf_counter()
    _add(pg_url, docs_dir, lock_timeout_s=30)
    assert time.perf_counter() - t < 25  # it did not wait for a lock nobody holds any more
    matches_folder(pg_url, docs_dir)


HOLDER = """
import sys, time
import psycopg
import citeline
from citeline.index.postgres.connection import WRITER_LOCK
citeline.open(sys.argv[1], embedder="hashing").close()  # the index, then a writer mid-transaction
conn = psycopg.connect(sys.argv[1])
conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
print("holding", flush=True)
time.sleep(600)
"""


def test_errors_name_the_index_never_the_password(server: Server) -> None:
    url = server.database("names")
    kb = citeline.open(url, embedder="hashing", pg_connect_timeout_s=1)
    try:
        server.crash()
        injected("server_crash_errors")
        for call in (lambda: kb.store.stats(), lambda: kb.save_settings({"top_k": 3}), kb.check):
            with pytest.raises(CitelineError) as caught:
                call()
            assert _password(url) not in str(caught.value) and "***" in str(caught.value)
    finally:
        kb.close()  # the server stays down: the next test that needs it starts it
