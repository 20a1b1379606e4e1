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
