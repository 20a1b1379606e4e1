"""How well the reader's best score over a question's context tells answerable questions from
unanswerable ones, read from the traces of `citeline eval answers` runs (AUROC; 0.5 is chance).

    python -m training.reader_separation --report REPORT.json [--report REPORT2.json ...]
    python -m training.reader_separation --run INDEX REPORT.json [--run INDEX2 REPORT2.json ...]

A report of this version of `citeline eval answers` holds each row's reader score; an older one is
read with the index it was run on (its rows name their traces). RGB's negative
rejection and its positive-snippet variant are two reports on two indexes: pass both, and the
same questions count once as unanswerable (negative snippets) and once as answerable. Questions
refused before the reader ran (the relevance guard) have no reader score and are left out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from training.common import auroc


def reader_bests(index: str | None, report: Path) -> list[tuple[float, int]]:
    """(the reader's best score, answerable) of each question of ``report`` that has one: the row's
    ``reader_score``, else (reports written before rows kept it) its trace in ``index``."""
    rows: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["rows"]
    kb = None
    out = []
    for row in rows:
        label = int(bool(row["answerable"]))
        if "reader_score" in row:
            if row["reader_score"] is not None:
                out.append((float(row["reader_score"]), label))
            continue
        if index is None or not row.get("trace_id"):
            continue
        if kb is None:
            import citeline

            kb = citeline.open(index)
        trace = kb.trace(row["trace_id"])
        if trace is not None and trace.reader:
            out.append((float(trace.reader["best"]), label))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--report", action="append", default=[], metavar="REPORT", help="a report with reader scores"
    )
    p.add_argument("--run", nargs=2, action="append", default=[], metavar=("INDEX", "REPORT"))
    args = p.parse_args(argv)
    if not args.report and not args.run:
        p.error("give at least one --report or --run")
    runs = [(None, r) for r in args.report] + [(i, r) for i, r in args.run]
    pairs = [pair for index, report in runs for pair in reader_bests(index, Path(report))]
    scores, labels = [s for s, _ in pairs], [y for _, y in pairs]
    result = {
        "answerable": sum(labels),
        "unanswerable": len(labels) - sum(labels),
        "reader_best_auroc": round(auroc(scores, labels), 4),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
