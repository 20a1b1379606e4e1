"""`make fuzz`: every atheris harness for a time budget each, on a corpus seeded with real files.

    python fuzz/run.py --seconds 900 [--work DIR]

Prints, per harness, the inputs executed and whether it found anything (a crash file under
DIR/<harness>/); exits 1 when one did. Without atheris (it has wheels for Linux x86-64) it says so
and exits 0: the hypothesis fuzz tests (tests/reliability/test_hostile.py) still run.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
HARNESSES = {"parsers": "fuzz_parsers.py", "citations": "fuzz_citations.py", "settings": "fuzz_settings.py"}


def main() -> int:
    args = argparse.ArgumentParser()
    args.add_argument("--seconds", type=int, default=900, help="time budget per harness")
    args.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "citeline-fuzz")
    args.add_argument("--only", choices=sorted(HARNESSES), action="append")
    opts = args.parse_args()
    try:
        import atheris  # noqa: F401
    except ImportError:
        print("atheris is not installed (pip install atheris; wheels for Linux x86-64): skipping")
        return 0
    sys.path.insert(0, str(HERE))
    from common import write_corpus

    found, figures = False, {}
    for name in opts.only or sorted(HARNESSES):
        work = opts.work / name
        corpus = write_corpus(work / "corpus", None if name == "parsers" else ["seed.txt"])
        proc = subprocess.run(
            [
                sys.executable,
                str(HERE / HARNESSES[name]),
                f"-max_total_time={opts.seconds}",
                "-timeout=30",
                "-rss_limit_mb=3072",
                "-print_final_stats=1",
                f"-artifact_prefix={work}/",
                str(corpus),
            ],
            capture_output=True,
            text=True,
        )
        runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", proc.stderr)
        crashed = proc.returncode != 0
        figures[name] = {"inputs": int(runs[-1]) if runs else None, "finding": crashed}
        if crashed:
            found = True
            print(proc.stderr[-4000:], file=sys.stderr)
    print("[figures] atheris: " + json.dumps(figures, sort_keys=True))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
