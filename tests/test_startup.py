"""Start-up cost: listing the commands must not load numpy, the store or the models."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
