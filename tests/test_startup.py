"""Start-up cost: listing the commands must not load numpy, the store or the models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import citeline

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_the_cli_and_the_package_import_without_numpy() -> None:
    code = (
        "import sys\n"
        "import citeline\n"
        "from citeline.cli import main as cli\n"
        "heavy = [m for m in ('numpy', 'onnxruntime', 'tokenizers', 'citeline.kb', 'citeline.index.base') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert callable(citeline.open) and 'citeline.kb' in sys.modules\n"  # the API loads on first use
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_a_command_loads_only_its_own_module_and_the_list_loads_every_one() -> None:
    code = (
        "import sys\n"
        "from citeline.cli.main import main\n"
        "others = ('citeline.cli.eval', 'citeline.cli.server', 'citeline.cli.embed', 'citeline.cli.inspect')\n"
        "assert main.get_command(None, 'search') is not None\n"
        "assert not [m for m in others if m in sys.modules], [m for m in others if m in sys.modules]\n"
        "assert main.get_command(None, 'serve') is not None and 'citeline.cli.server' in sys.modules\n"
        "assert {'eval', 'keys', 'embed', 'show', 'check', 'config'} <= set(main.list_commands(None))\n"
        "assert main.get_command(None, 'no-such-command') is None\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_blingfire_loads_without_changing_inspect() -> None:
    import inspect

    before = inspect.getframeinfo
    from citeline.text.sentences import blingfire, sentence_spans

    assert inspect.getframeinfo is before
    assert Path(blingfire.path).is_dir()
    assert sentence_spans("One. Two here.", 0, 14) == [(0, 4), (5, 14)]


#: packages a one-shot search has no use for (each ~0.01-0.03 s of imports)
ONE_SHOT_UNNEEDED = (
    "rich",
    "citeline.answer",
    "citeline.eval",
    "citeline.server",
    "citeline.trace",
    "citeline.ingest",
    "tokenizers",
)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("startup")
    docs = folder / "docs"
    docs.mkdir()
    (docs / "queue.md").write_text(
        "# Queue\n\n## Limits\n\nThe alpha queue holds at most 900 jobs. Older jobs are dropped first.\n",
        encoding="utf-8",
    )
    kb = citeline.open(folder / "index")
    assert not kb.add([docs]).failed
    kb.close()
    return folder / "index"


@pytest.mark.parametrize("output", [[], ["--json"]])
def test_a_one_shot_search_loads_no_answering_tracing_printing_or_serving_module(
    small_index: Path, output: list[str]
) -> None:
    code = (
        "import sys\n"
        "from citeline.cli.main import main\n"
        f"main(['--index', {str(small_index)!r}, 'search', '-k', '2', *{output!r}, 'alpha queue'], standalone_mode=False)\n"
        f"loaded = [m for m in sys.modules if m.startswith(tuple(p + '.' for p in {ONE_SHOT_UNNEEDED!r})) "
        f"or m in {ONE_SHOT_UNNEEDED!r}]\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "alpha queue holds at most 900 jobs" in done.stdout


def test_a_one_shot_command_ends_after_its_threads_atexit_handlers_and_output(tmp_path: Path) -> None:
    code = (
        "import atexit, sys, threading, time\n"
        "from citeline.cli import ending\n"
        "atexit.register(lambda: print('atexit handler ran'))\n"
        "def later():\n"
        "    time.sleep(0.2)\n"
        "    print('thread ended')\n"
        "def command():\n"
        "    threading.Thread(target=later).start()\n"
        "    ending.end_quickly()\n"
        "    print('buffered output', end='')\n"
        "    sys.exit(3)\n"
        "ending.run(command)\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", code], env=env, timeout=60, capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered outputthread ended\natexit handler ran\n"


@pytest.mark.parametrize("args", [["search", "alpha queue"], ["status"], ["search", "--no-such-option"]])
def test_a_one_shot_process_closes_its_index_and_keeps_its_exit_code(
    small_index: Path, args: list[str]
) -> None:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-m", "citeline", "--index", str(small_index), *args],
        env=env,
        timeout=120,
        capture_output=True,
        text=True,
    )
    assert done.returncode == (2 if "--no-such-option" in args else 0), done.stderr
    # the last connection closed checkpoints the log and removes it: no -wal or -shm file stays
    assert sorted(p.name for p in small_index.glob("citeline.db*")) == ["citeline.db"]
