"""Where a one-shot `citeline search` spends its CPU: each step a `python -c` that goes one step further.

    python benchmarks/oneshot_steps.py --index DIR                      # this tree's sources
    python benchmarks/oneshot_steps.py --index DIR --src OTHER/src      # another tree's (e.g. main's)

Each step runs ``--runs`` times after one warm-up run and ends with ``os._exit``, so that no step
pays for the interpreter's teardown; the last row is the whole `python -m citeline search -k 5`
process. Printed: the fewest seconds of CPU (user + system, all threads) and of wall time of each
step, and the load average (on a shared machine the CPU column is the steadier one). Compile the
sources first (`python -m compileall src`), as `make run` does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = "how do I limit the memory of a container"
START = "import os\nos.environ.setdefault('OPENBLAS_NUM_THREADS', '1')\nimport citeline.cli.main\n"


def steps(index: str) -> list[tuple[str, str | None]]:
    opened = START + f"from citeline.kb import open_kb\nkb = open_kb({index!r}, create=False)\n"
    return [
        ("the interpreter", "pass"),
        ("click", "import click"),
        ("citeline's CLI modules", START),
        (
            "numpy, the index and retrieval modules",
            START + "import numpy, citeline.kb, citeline.index.sqlite.store, citeline.embedding.onnx",
        ),
        ("opening the index", opened + "kb.components.retriever()"),
        ("embedding the query", opened + f"kb.components.retriever().embedder.embed([{QUERY!r}])"),
        (
            "the search",
            opened + "from citeline.filters import Filter, Principal\n"
            f"kb.search({QUERY!r}, flt=Filter(principal=Principal.local_admin()), k=5)\nkb.close()",
        ),
        ("the whole `python -m citeline search -k 5`", None),
    ]


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[-1][:200]} failed")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", required=True, help="an index folder")
    ap.add_argument("--src", default=str(ROOT / "src"), help="the sources to run (default: this tree's)")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": args.src}
    print(f"load average before {os.getloadavg()[0]:.2f}")
    for name, code in steps(args.index):
        if code is None:
            argv = [sys.executable, "-m", "citeline", "--index", args.index, "search", "-k", "5", QUERY]
        else:
            argv = [sys.executable, "-c", code + "\nimport os as _os\n_os._exit(0)"]
        run_once(argv, env)  # warm-up: the page cache, the saved graph, the word and vocabulary files
        runs = [run_once(argv, env) for _ in range(args.runs)]
        print(f"{name:<45} CPU {min(r[1] for r in runs):.3f} s   wall {min(r[0] for r in runs):.3f} s")
    print(f"load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
