"""Shared fixtures: a real index over the bundled samples, built once per test process."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

import citeline
from citeline.filters import Principal
from citeline.kb import KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
QUESTIONS = ROOT / "tests" / "data" / "questions.jsonl"
#: the principal of tests that read everything (the command line's local administrator)
ADMIN = Principal.local_admin()


@pytest.fixture(scope="session")
def samples_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """An index of samples/ (read-mostly: tests that change documents use their own index)."""
    folder = tmp_path_factory.mktemp("samples-index")
    docs = folder / "samples"
    shutil.copytree(SAMPLES, docs)
    kb = citeline.open(folder / "index")
    report = kb.add([docs])
    assert not report.failed, report.failed
    yield kb
    kb.close()


@pytest.fixture()
def docs_dir(tmp_path: Path) -> Path:
    """A small, writable folder of documents for tests that edit or remove files."""
    d = tmp_path / "docs"
    d.mkdir()
    (d / "alpha.md").write_text(
        "# Alpha Guide\n\n## Setup\n\nInstall the alpha package with the installer. It takes two minutes.\n\n"
        "## Limits\n\nThe alpha queue holds at most 900 jobs. Older jobs are dropped first.\n\n"
        "## Errors\n\nError ZX-7781 means the alpha queue is full. Drain it with `alpha drain`.\n",
        encoding="utf-8",
    )
    (d / "beta.md").write_text(
        "# Beta Handbook\n\n## Overview\n\nBeta replicates tables between regions every five minutes.\n\n"
        "## Security\n\nBeta encrypts every replica with a per-region key. Keys rotate monthly.\n",
        encoding="utf-8",
    )
    (d / "notes.txt").write_text(
        "Team notes\n\nThe gamma service restarts nightly at 02:00 UTC.\n\nNobody owns the delta service yet.\n",
        encoding="utf-8",
    )
    return d


# -- PostgreSQL: one server per test session, shared by the xdist workers, started on first use ------

PG_DIR = "CITELINE_TEST_PG_DIR"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and PG_DIR not in os.environ:
        os.environ[PG_DIR] = tempfile.mkdtemp(prefix="citeline-pg-")
        config.stash[_PG_OWNER] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_PG_OWNER, False):
        folder = Path(os.environ.pop(PG_DIR))
        if (folder / "server.json").exists():
            from citeline.index.postgres.local import LocalPostgres

            LocalPostgres.load(folder / "server.json").stop()
        shutil.rmtree(folder, ignore_errors=True)


_PG_OWNER = pytest.StashKey[bool]()


def unavailable(what: str, reason: str) -> NoReturn:
    """Skip with the reason, except under CI=true, where a missing service is a failure."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{what} must run under CI=true but cannot: {reason}")
    pytest.skip(f"{what} unavailable: {reason}")


@pytest.fixture(scope="session")
def pg_server() -> Any:
    """The session's PostgreSQL 16 + pgvector server on 127.0.0.1 (pgserver's binaries)."""
    from citeline.index.postgres.local import LocalPostgres

    folder = Path(os.environ[PG_DIR])
    with (folder / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "server.json").exists():
            return LocalPostgres.load(folder / "server.json")
        if (folder / "failed").exists():
            unavailable("PostgreSQL", (folder / "failed").read_text())
        try:
            server = LocalPostgres.start(folder / "server")
        except Exception as exc:  # not installed, no useradd, no port...
            reason = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, subprocess.CalledProcessError):
                reason += f" {exc.stderr!r}"
            (folder / "failed").write_text(reason)
            unavailable("PostgreSQL", reason)
        server.save(folder / "server.json")
        return server


@pytest.fixture()
def pg_url(pg_server: Any) -> Iterator[str]:
    """A fresh database on the session's server (dropped afterwards)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield pg_server.create_database(name)
    pg_server.drop_database(name)


#: the store backends that end-to-end tests run against (CITELINE_TEST_STORES=postgresql narrows a
#: run, e.g. `make stress STRESS_STORES=postgresql`)
STORES = tuple(os.environ.get("CITELINE_TEST_STORES", "sqlite,postgresql").split(","))


class OpenIndex:
    """Opens indexes of one store kind (``store``) by name: a folder, or a fresh PostgreSQL
    database; ``location`` says where a name's index is, ``close`` closes them all (and drops the
    databases)."""

    def __init__(self, store: str, tmp_path: Path, server: Any) -> None:
        self.store = store
        self._tmp_path, self._server = tmp_path, server
        self._opened: list[KnowledgeBase] = []
        self._locations: dict[str, str] = {}

    def location(self, name: str) -> str:
        if name not in self._locations:
            if self._server is None:
                self._locations[name] = str(self._tmp_path / name)
            else:
                self._locations[name] = self._server.create_database(f"t_{uuid.uuid4().hex[:16]}")
        return self._locations[name]

    def __call__(self, name: str = "index", **overrides: Any) -> KnowledgeBase:
        kb = citeline.open(self.location(name), **overrides)
        self._opened.append(kb)
        return kb

    def close(self) -> None:
        for kb in self._opened:
            kb.close()
        if self._server is not None:
            for url in self._locations.values():
                self._server.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture(params=STORES)
def open_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[OpenIndex]:
    """An ``OpenIndex`` of each store kind; its indexes are closed afterwards."""
    server = request.getfixturevalue("pg_server") if request.param == "postgresql" else None
    opener = OpenIndex(request.param, tmp_path, server)
    yield opener
    opener.close()


@pytest.fixture()
def kb(open_index: OpenIndex) -> KnowledgeBase:
    """A new, empty index with the real embedder, on each store."""
    return open_index("index")
