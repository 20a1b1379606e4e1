"""AUROC of the shipped (int8 ONNX) reader and checker on held-out pairs, per task and per kind.

    .venv/bin/python -m training.evaluate --data ~/.cache/citeline/train/data --split test

Scores go through citeline's own runtime (citeline.answer.reader.CrossEncoderModel), so what is
measured is what ships. The test split holds documents and whole manuals never seen in training.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from citeline.answer.reader import PACKAGED, CrossEncoderModel
from training.common import auroc


def evaluate(folder: Path, data: Path, split: str, limit: int | None) -> dict[str, Any]:
    model = CrossEncoderModel(folder)
    report: dict[str, Any] = {"model": str(folder), "version": model.version, "split": split}
    for task in ("reader", "checker"):
        path = data / f"{task}_{split}.jsonl"
        if not path.is_file():
            continue
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()][:limit]
        score = model.reader_scores if task == "reader" else model.checker_scores
        started = time.perf_counter()
        by_a: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            by_a[r["a"]].append(i)
        scores = [0.0] * len(rows)
        for a, idx in by_a.items():
            for i, s in zip(idx, score(a, [rows[i]["b"] for i in idx]), strict=True):
                scores[i] = float(s)
        seconds = time.perf_counter() - started
        labels = [int(r["label"]) for r in rows]
        kinds: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            if not r["label"]:
                kinds[str(r.get("kind", "?"))].append(i)
        positives = [i for i, y in enumerate(labels) if y]
        sources: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(rows):
            sources[str(r.get("qsource") or "?")].append(i)
        report[task] = {
            "pairs": len(rows),
            "positives": len(positives),
            "auroc": round(auroc(scores, labels), 4),
            # each kind of negative against all positives: which mistakes the model still makes
            "auroc_by_negative_kind": {
                k: round(
                    auroc([scores[i] for i in positives + idx], [1] * len(positives) + [0] * len(idx)), 4
                )
                for k, idx in sorted(kinds.items())
            },
            # the pairs of each kind of question (LLM, template, reworded, ...) on their own
            "auroc_by_question_source": {
                k: round(auroc([scores[i] for i in idx], [labels[i] for i in idx]), 4)
                for k, idx in sorted(sources.items())
                if 0 < sum(labels[i] for i in idx) < len(idx)
            },
            "accuracy_at_0.5": round(
                sum((s >= 0.5) == bool(y) for s, y in zip(scores, labels, strict=True)) / max(1, len(rows)), 4
            ),
            "pairs_per_s": round(len(rows) / seconds, 1),
        }
    return report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=PACKAGED)
    p.add_argument("--data", type=Path, required=True)
    p.add_argument("--split", default="test")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    report = evaluate(args.model, args.data, args.split, args.limit)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
