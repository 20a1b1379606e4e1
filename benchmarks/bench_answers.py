"""Answer quality of the offline default on the shared public datasets: RGB, ConditionalQA, SciFact.

Run: .venv/bin/python benchmarks/bench_answers.py [--datasets rgb,conditionalqa,scifact]
     [--limit N] [--seed 13] [--scifact-distractors 300] [--out /tmp/citeline-bench-answers]
     [--fresh]

Every question of each adapted set (``--limit`` for a stratified slice instead): RGB's 100
negative-rejection questions, ConditionalQA dev (285, pages rebuilt from evidence) plus 71
absent-page questions from test_no_answer, SciFact's 300 dev claims over their cited abstracts
and seeded distractor abstracts. Prints one table and writes ``<name>.json`` / ``<name>.html``
per dataset and ``summary.json`` under --out. Indexes are kept under --out and reused by the
next run (only changed documents are embedded again); --fresh rebuilds them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from citeline.cli.eval_answers import DATASET_FOLDERS
from citeline.eval.adapters import evaluate_dataset
from citeline.eval.report import write_reports

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
COLUMNS = (
    ("hit_rate@5", "Hit@5"),
    ("context_hit_rate", "ctx"),
    ("answer_contains", "contains"),
    ("token_f1", "F1"),
    ("citation_precision", "cit P"),
    ("citation_recall", "cit R"),
    ("refusal_precision", "ref P"),
    ("refusal_recall", "ref R"),
    ("false_refusal_rate", "false ref"),
    ("faithfulness", "faithful"),
)


def _cell(value: Any) -> str:
    return "  n/a" if value is None else f"{value:.3f}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", default="rgb,conditionalqa,scifact")
    parser.add_argument(
        "--limit", type=int, default=None, help="a stratified slice of N questions per dataset"
    )
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--scifact-distractors", type=int, default=300, help="extra random abstracts")
    parser.add_argument("--out", type=Path, default=Path("/tmp/citeline-bench-answers"))
    parser.add_argument("--fresh", action="store_true", help="rebuild the indexes instead of reusing them")
    args = parser.parse_args()
    root = Path(os.environ.get("CITELINE_DATASETS", DATASETS))
    args.out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {}
    for name in [n.strip() for n in args.datasets.split(",") if n.strip()]:
        folder = root / DATASET_FOLDERS.get(name, name)
        if not folder.is_dir():
            print(f"{name}: dataset not found under {root}; skipped", file=sys.stderr)
            continue
        options = {"distractors": args.scifact_distractors} if name == "scifact" else {}
        started = time.perf_counter()

        def progress(done: int, total: int, name: str = name) -> None:
            if done % 25 == 0 or done == total:
                print(f"  {name}: asked {done}/{total}", file=sys.stderr, flush=True)

        report = evaluate_dataset(
            name,
            folder,
            args.out / name,
            limit=args.limit,
            seed=args.seed,
            progress=progress,
            reuse_index=not args.fresh,
            **options,
        )
        report["dataset_notes"]["wall_s"] = round(time.perf_counter() - started, 1)
        write_reports(report, args.out / f"{name}.json", args.out / f"{name}.html")
        summary[name] = {
            "questions": report["counts"],
            "metrics": report["metrics"],
            "latency_ms": report["latency_ms"],
            "failures": report["failures"],
            "notes": report["dataset_notes"],
        }
        print(
            f"{name}: {report['counts']['questions']} questions in {report['dataset_notes']['wall_s']} s "
            f"(indexing {report['dataset_notes']['indexing_s']} s)",
            file=sys.stderr,
            flush=True,
        )
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    header = f"{'dataset':<14}{'Qs':>5}{'ans':>5}" + "".join(f"{label:>10}" for _, label in COLUMNS)
    header += f"{'p50 ms':>9}{'p95 ms':>9}"
    print(header)
    for name, s in summary.items():
        c, m, lat = s["questions"], s["metrics"], s["latency_ms"]
        line = f"{name:<14}{c['questions']:>5}{c['answerable']:>5}"
        line += "".join(f"{_cell(m.get(key)):>10}" for key, _ in COLUMNS)
        line += f"{lat['p50'] or 0:>9.0f}{lat['p95'] or 0:>9.0f}"
        print(line)
    print(f"reports: {args.out}/<dataset>.html and .json; summary: {args.out}/summary.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
