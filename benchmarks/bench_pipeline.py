"""Ingest speed and query latency on the bundled samples (and a repeated copy of them).

Run: .venv/bin/python benchmarks/bench_pipeline.py [--copies N]
Prints chunks/s for a cold ingest, the cost of re-adding unchanged files, and p50/p95 latency
of search and ask.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import citeline
from citeline.eval.metrics import percentile
from citeline.filters import Principal

ADMIN = Principal.local_admin()

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    json.loads(line)["question"] for line in (ROOT / "tests/data/questions.jsonl").open() if line.strip()
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=1, help="index N copies of the samples")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        docs = Path(tmp) / "docs"
        for i in range(args.copies):
            shutil.copytree(ROOT / "samples", docs / f"copy{i}")
        kb = citeline.open(Path(tmp) / "index")
        _ = kb.embedder  # load the model outside the timing
        t = time.perf_counter()
        report = kb.add([docs])
        cold = time.perf_counter() - t
        t = time.perf_counter()
        again = kb.add([docs])
        warm = time.perf_counter() - t
        chunks = kb.store.stats()["chunks"]
        print(
            f"ingest: {len(report.added)} files, {chunks} chunks in {cold:.2f} s "
            f"= {chunks / cold:.1f} chunks/s ({report.chunks_embedded} embedded)"
        )
        print(
            f"re-add unchanged: {len(again.unchanged)} files in {warm * 1000:.0f} ms, "
            f"{again.chunks_embedded} embedded; ratio cold/warm = {cold / warm:.0f}x"
        )
        for name, fn in (
            ("search", lambda q: kb.search(q, ADMIN, k=10)),
            ("ask", lambda q: kb.ask(q, ADMIN)),
        ):
            times = []
            for q in QUESTIONS:
                t = time.perf_counter()
                fn(q)
                times.append((time.perf_counter() - t) * 1000)
            print(
                f"{name}: {len(times)} queries, p50 {percentile(times, 50):.0f} ms, "
                f"p95 {percentile(times, 95):.0f} ms, mean {statistics.mean(times):.0f} ms"
            )
        kb.close()


if __name__ == "__main__":
    main()
