"""A throwaway PostgreSQL 16 + pgvector server on loopback, for tests and benchmarks.

The binaries come from the PyPI package ``pgserver`` (PostgreSQL 16 with pgvector 0.6.2, no
download at run time; ``pip install 'citeline[dev]'``). PostgreSQL refuses to run as root, so
when this process is root the server runs as an unprivileged system user (created with useradd
if missing). The server listens on 127.0.0.1 only, with password (SCRAM) authentication, so tests
see a real password in the URL and can check that it never appears in output.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import socket
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

SERVICE_USER = "citeline-pg"
DB_USER = "citeline"
TEMPLATE_DB = "citeline_template"


def binaries() -> Path:
    """pgserver's bin folder (initdb, pg_ctl, postgres), found without importing the package."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pgserver is not installed: pip install 'citeline[dev]'", name="pgserver")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _service_account() -> tuple[int, int] | None:
    """(uid, gid) to run the server as: an unprivileged user when we are root, else ourselves."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(SERVICE_USER)
    return entry.pw_uid, entry.pw_gid


def _traversable(path: Path) -> None:
    """Let other users reach ``path`` (o+x on every parent folder, o+rx on the folder itself)."""
    for folder in [path, *path.parents]:
        mode = folder.stat().st_mode
        extra = stat.S_IXOTH | stat.S_IXGRP | (stat.S_IROTH | stat.S_IRGRP if folder == path else 0)
        if mode & extra != extra:
            folder.chmod(mode | extra)


@dataclass(frozen=True)
class LocalPostgres:
    data: str
    port: int
    password: str
    pid: int = 0
    durable: bool = False

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{DB_USER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> LocalPostgres:
        return cls(**json.loads(path.read_text(encoding="utf-8")))

    # -- life cycle ----------------------------------------------------------------------------

    @classmethod
    def start(cls, folder: Path, *, durable: bool = False, timeout: float = 300.0) -> LocalPostgres:
        """initdb in ``folder``/data and start the server; ``durable=False`` turns fsync off (tests)."""
        account = _service_account()
        folder.mkdir(parents=True, exist_ok=True)
        data, password = folder / "data", secrets.token_urlsafe(18)
        pwfile = folder / "pwfile"
        pwfile.write_text(password + "\n", encoding="utf-8")
        run_as: dict[str, Any] = {}
        if account is not None:
            _traversable(folder)
            _traversable(binaries())
            os.chown(folder, *account)
            os.chown(pwfile, *account)
            run_as = {"user": account[0], "group": account[1], "extra_groups": []}
        pwfile.chmod(0o600)
        bin_dir = binaries()
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", DB_USER, f"--pwfile={pwfile}", "-E", "UTF8",
             "--locale=C", "--auth-host=scram-sha-256", "--auth-local=scram-sha-256"],
            check=True, capture_output=True, timeout=timeout, **run_as,
        )  # fmt: skip
        pwfile.unlink()
        port = _free_port()
        pid = _launch(data, port, durable, timeout, run_as)
        server = cls(str(data), port, password, pid, durable)
        server.create_template()
        return server

    def start_again(self, timeout: float = 120.0) -> LocalPostgres:
        """Start this server again (after ``stop(remove=False)`` or ``crash()``) on the same port;
        after a crash PostgreSQL replays its WAL first. The same server, with its new pid."""
        account = _service_account()
        run_as: dict[str, Any] = {} if account is None else {"user": account[0], "group": account[1]}
        pid = _launch(Path(self.data), self.port, self.durable, timeout, run_as)
        return LocalPostgres(self.data, self.port, self.password, pid, self.durable)

    def crash(self) -> None:
        """Stop the server the way a crash does (``pg_ctl stop -m immediate``: every process quits
        at once, nothing is checkpointed; the next start recovers from the WAL). Kept on disk."""
        account = _service_account()
        run_as: dict[str, Any] = {} if account is None else {"user": account[0], "group": account[1]}
        subprocess.run(
            [str(binaries() / "pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"],
            check=True, capture_output=True, timeout=60, **run_as,
        )  # fmt: skip

    def kill(self, timeout: float = 60.0) -> None:
        """SIGKILL the postmaster and every process it started, as the OOM killer or a host that
        lost power would (no process gets to clean up; the next start recovers from the WAL)."""
        import signal
        import time

        pid = int((Path(self.data) / "postmaster.pid").read_text().split()[0])
        children = _children(pid)
        for victim in [pid, *children]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while any(Path(f"/proc/{p}").exists() for p in [pid, *children]) and time.monotonic() < deadline:
            time.sleep(0.02)  # (zombies of a parent that is not us vanish when init reaps them)

    def create_template(self) -> None:
        """A template database with pgvector, so each test database is one CREATE DATABASE away."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (TEMPLATE_DB,)).fetchone():
                return
            conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
        with psycopg.connect(self.url(TEMPLATE_DB), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def create_database(self, name: str) -> str:
        """A fresh database (with pgvector); its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE_DB}')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self, remove: bool = True) -> None:
        """A fast shutdown (sessions are ended, the server checkpoints); ``remove`` deletes its files."""
        data = Path(self.data)
        if (data / "postmaster.pid").exists():
            account = _service_account()
            run_as: dict[str, Any] = {} if account is None else {"user": account[0], "group": account[1]}
            try:
                subprocess.run(
                    [str(binaries() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                    check=True, capture_output=True, timeout=60, **run_as,
                )  # fmt: skip
            except (subprocess.SubprocessError, OSError):
                with contextlib.suppress(OSError):
                    os.kill(self.pid, 9)
        if remove:
            shutil.rmtree(data.parent, ignore_errors=True)


def _launch(data: Path, port: int, durable: bool, timeout: float, run_as: dict[str, Any]) -> int:
    """pg_ctl start on 127.0.0.1:``port``, waiting until the server accepts connections; its pid."""
    options = [
        f"-p {port}", "-h 127.0.0.1", "-k ''", "-c max_connections=100", "-c shared_buffers=128MB",
        "-c maintenance_work_mem=256MB", "-c synchronous_commit=off",
    ]  # fmt: skip
    if not durable:
        options += ["-c fsync=off", "-c full_page_writes=off"]
    subprocess.run(
        [str(binaries() / "pg_ctl"), "-D", str(data), "-l", str(data.parent / "server.log"), "-w",
         "-t", str(int(timeout)), "-o", " ".join(options), "start"],
        check=True, capture_output=True, timeout=timeout + 10, **run_as,
    )  # fmt: skip
    return int((data / "postmaster.pid").read_text().split()[0])


def _children(pid: int) -> list[int]:
    """The pids of the processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry.parent.name))
    return out
