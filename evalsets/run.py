"""Every golden manual set at once: fetch each manual, index it, evaluate one split, print one table.

    python evalsets/run.py --split dev                 # tune on this (every manual's dev split pooled)
    python evalsets/run.py --split test --out DIR      # report on this; never tune on it
    python evalsets/run.py --split dev --sets borg,aptitude --compare OLD_DIR

Each set is a folder of evalsets/ with a fetch.sh (prints the folder of documents) and dev.jsonl /
test.jsonl (postfix's dev split also takes dev-extra.jsonl). Indexes are kept per set and pipeline
version in ``${CITELINE_CACHE:-~/.cache/citeline}/golden/``, so a rerun only asks. Reports go to
``--out`` as SET-SPLIT.json; ``--compare`` prints `citeline eval compare` of each against the same
file in another folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLUMNS = (
    ("answer_contains", "names gold"),
    ("first_sentence_contains", "first sentence"),
    ("refusal_precision", "refusal P"),
    ("refusal_recall", "refusal R"),
    ("false_refusal_rate", "false refusals"),
    ("fragment_openings", "fragments"),
    ("context_hit_rate", "evidence in context"),
)


def golden_sets() -> list[str]:
    return sorted(p.parent.name for p in HERE.glob("*/fetch.sh") if (p.parent / "dev.jsonl").exists())


def questions(name: str, split: str, scratch: Path) -> Path:
    """The split's questions; postfix's dev split with its extra dev questions."""
    path = HERE / name / f"{split}.jsonl"
    extra = HERE / name / "dev-extra.jsonl"
    if split != "dev" or not extra.exists():
        return path
    pooled = scratch / f"{name}-dev.jsonl"
    pooled.write_text(path.read_text() + extra.read_text())
    return pooled


def pipeline_version() -> str:
    from citeline.ingest.pipeline import PIPELINE_VERSION

    return PIPELINE_VERSION


def run_set(name: str, split: str, out: Path, scratch: Path) -> dict[str, Any]:
    docs = subprocess.run(
        ["bash", str(HERE / name / "fetch.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    cache = Path(os.environ.get("CITELINE_CACHE", Path.home() / ".cache" / "citeline"))
    index = cache / "golden" / f"{name}-v{pipeline_version()}"
    report = out / f"{name}-{split}.json"
    cmd = [sys.executable, "-m", "citeline", "eval", "answers", str(questions(name, split, scratch))]
    cmd += ["--docs", docs, "--index", str(index), "--json", str(report)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode not in (0, 3) or not report.exists():
        sys.exit(f"{name}: eval answers failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(report.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=("dev", "test"), required=True)
    parser.add_argument("--sets", help="comma-separated set names (default: every set)")
    parser.add_argument("--out", type=Path, default=Path("golden-reports"))
    parser.add_argument("--compare", type=Path, help="a folder of earlier reports to compare with")
    args = parser.parse_args()
    names = args.sets.split(",") if args.sets else golden_sets()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            report = run_set(name, args.split, args.out, Path(scratch))
            rows.append((name, report))
            print(f"{name}: done", file=sys.stderr, flush=True)
    print(f"| set ({args.split}) | questions | " + " | ".join(label for _, label in COLUMNS) + " | p50 ms |")
    print("|---" * (len(COLUMNS) + 3) + "|")
    for name, report in rows:
        metrics = report["metrics"]
        cells = [_fmt(metrics.get(key)) for key, _ in COLUMNS]
        latency = (report.get("latency_ms") or {}).get("p50")
        n = len(report.get("rows") or [])
        print(f"| {name} | {n} | " + " | ".join(cells) + f" | {_fmt(latency, 0)} |")
    if args.compare:
        for name, _ in rows:
            old = args.compare / f"{name}-{args.split}.json"
            if old.exists():
                print(f"\n## {name}")
                compare = [sys.executable, "-m", "citeline", "eval", "compare", str(old)]
                subprocess.run([*compare, str(args.out / f"{name}-{args.split}.json")], check=False)


def _fmt(value: object, digits: int = 3) -> str:
    return "" if value is None else f"{float(value):.{digits}f}"  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
