"""Re-adding an unchanged corpus of many files: the cost of `kb.add` when nothing changed.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_readd.py                 # 10,000 files
    PYTHONPATH=src .venv/bin/python benchmarks/bench_readd.py --files 2000 --out /tmp/readd.json

Stages ``--files`` small Markdown files from SciFact abstracts (``--dataset``), the texts repeating
from a pool of ``--distinct`` abstracts, so that the cold ingest embeds only the distinct chunks
(citeline keeps one embedding per chunk-text hash). The files' modification time is set an hour
back, as a corpus is usually older than its first indexing (a file indexed within 2 s of its mtime
is read and hashed on every re-add: citeline.ingest.pipeline.RACY_S). Then: one cold ingest into a
new index, and ``--repeats`` re-adds of the unchanged folder, each timed in wall and CPU seconds
(this process, all threads: time.process_time). The same script measures any version of citeline
(``PYTHONPATH=<its src>``): it uses ``citeline.open`` and ``kb.add`` only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import citeline
from citeline.ingest.pipeline import IngestReport

ROOT = Path(__file__).resolve().parents[1]


def abstracts(dataset: Path, n: int) -> list[tuple[str, str]]:
    """(title, text) of the first ``n`` corpus records with some text."""
    path = dataset / "corpus.jsonl"
    opener = gzip.open if not path.exists() else open
    source = path if path.exists() else dataset / "corpus.jsonl.gz"
    out: list[tuple[str, str]] = []
    with opener(source, "rt", encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if len(rec.get("text", "").strip()) > 200:
                out.append((rec.get("title") or rec["_id"], rec["text"].strip()))
            if len(out) == n:
                break
    return out


def stage(folder: Path, files: int, pool: list[tuple[str, str]]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    old = time.time() - 3600
    for i in range(files):
        title, text = pool[i % len(pool)]
        p = folder / f"part{i // 1000:02d}" / f"doc{i:05d}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: {json.dumps(title)}\n---\n\n{text}\n", encoding="utf-8")
        os.utime(p, (old, old))


def timed(fn: Callable[[], IngestReport]) -> tuple[IngestReport, float, float]:
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact")
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--distinct", type=int, default=200, help="distinct abstracts the files repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "citeline-bench-readd"
    )
    ap.add_argument("--out", type=Path, help="also write the result as JSON here")
    args = ap.parse_args()
    corpus, index = args.work / "corpus", args.work / f"index-{os.getpid()}"
    stage(corpus, args.files, abstracts(args.dataset, args.distinct))
    kb = citeline.open(index)
    _ = kb.embedder  # load the model outside the timing
    cold, cold_wall, cold_cpu = timed(lambda: kb.add([corpus], root=corpus))
    runs = []
    for _ in range(args.repeats):
        report, wall, cpu = timed(lambda: kb.add([corpus], root=corpus))
        assert len(report.unchanged) == args.files and not report.added and not report.updated
        runs.append((wall, cpu))
    kb.close()
    shutil.rmtree(index, ignore_errors=True)
    result = {
        "citeline": str(Path(citeline.__file__).resolve().parent),
        "files": args.files,
        "distinct": args.distinct,
        "cold": {
            "wall_s": round(cold_wall, 2),
            "cpu_s": round(cold_cpu, 2),
            "added": len(cold.added),
            "failed": len(cold.failed),
            "chunks_written": cold.chunks_written,
            "chunks_embedded": cold.chunks_embedded,
        },
        "readd": {
            "wall_s": [round(w, 3) for w, _ in runs],
            "cpu_s": [round(c, 3) for _, c in runs],
            "median_wall_s": round(statistics.median(w for w, _ in runs), 3),
            "median_cpu_s": round(statistics.median(c for _, c in runs), 3),
        },
        "loadavg": os.getloadavg(),
        "command": " ".join(["python", "benchmarks/bench_readd.py", *sys.argv[1:]]),
    }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
