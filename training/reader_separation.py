"""How well the reader's best score over a question's context tells answerable questions from
unanswerable ones, read from the traces of `citeline eval answers` runs (AUROC; 0.5 is chance).

    python -m training.reader_separation --run INDEX REPORT.json [--run INDEX2 REPORT2.json ...]

Each report is read with the index it was run on (its rows name their traces). RGB's negative
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


def reader_bests(index: str, report: Path) -> list[tuple[float, int]]:
    """(the reader's best score, answerable) of each question of ``report`` whose trace has one."""
    import citeline

    kb = citeline.open(index)
    rows: list[dict[str, Any]] = json.loads(report.read_text(encoding="utf-8"))["rows"]
    out = []
    for row in rows:
        trace = kb.trace(row["trace_id"]) if row.get("trace_id") else None
        if trace is not None and trace.reader:
            out.append((float(trace.reader["best"]), int(bool(row["answerable"]))))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", nargs=2, action="append", required=True, metavar=("INDEX", "REPORT"))
    args = p.parse_args(argv)
    pairs = [pair for index, report in args.run for pair in reader_bests(index, Path(report))]
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
