"""What the refusal signals can do on a set of questions: each signal's AUROC (answerable against
unanswerable; 0.5 is chance), and the best any combination of them could do, fitted and scored on
the same questions (an optimistic bound: a logistic regression in-sample).

    python -m training.refusal_signals --index IDX QUESTIONS.jsonl [--save signals.json]
    python -m training.refusal_signals --load signals.json

Each question is retrieved and read as `ask` does, up to the refusal decision, whatever the
thresholds: the relevance guard's score and its parts (best dense cosine, weighted coverage of the
question's terms, missing names and codes), the reader's best score over the context, and the
extractive floor (the best unit's similarity and overlap). The README's figure for the
ConditionalQA train slice (in-sample AUROC 0.774, 56% of unanswerable questions refused at 15%
false refusals) is this script's output on that slice.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from citeline.filters import Filter, Principal
from training.common import auroc

if TYPE_CHECKING:
    from citeline.answer.answerer import Prepared
    from citeline.kb import KnowledgeBase

SIGNALS = ("relevance", "dense", "coverage", "reader", "floor", "missing_names", "missing_codes")
#: higher means "more likely answerable" for all but the missing counts
LOWER_IS_ANSWERABLE = ("missing_names", "missing_codes")


def asked(
    kb: KnowledgeBase, questions: Path, limit: int | None = None
) -> Iterator[tuple[dict[str, Any], Prepared]]:
    """Each question (a JSONL row) taken as `ask` takes it, up to the refusal decision."""
    answerer = kb.components.answerer()
    flt = Filter(principal=Principal.local_admin())
    rows = [json.loads(x) for x in questions.read_text(encoding="utf-8").splitlines() if x.strip()]
    for row in rows[:limit]:
        yield row, answerer.prepare(answerer.check_question(row["question"]), flt)


def signals(index: str, questions: Path, limit: int | None = None) -> list[dict[str, Any]]:
    import citeline
    from citeline.answer.extractive import ExtractiveGenerator, confidence

    kb = citeline.open(index)
    reader = kb.components.reader
    floor = ExtractiveGenerator(kb.components.embedder, min_score=kb.settings.min_answer_score)
    out = []
    for row, a in asked(kb, questions, limit):
        query, relevance, passages = a.query, a.relevance, a.passages
        best = reader.read(query, passages).best if passages and reader else 0.0
        out.append(
            {
                "id": row["id"],
                "answerable": bool(row.get("answerable", True)),
                "relevance": relevance.score,
                "dense": relevance.dense_best,
                "coverage": relevance.coverage,
                "reader": float(best),
                "floor": float(confidence(floor.score_units(query, passages))) if passages else 0.0,
                "missing_names": len(relevance.missing_terms),
                "missing_codes": len(relevance.missing_identifiers),
            }
        )
    kb.close()
    return out


def fit_logistic(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], l2: float = 0.01, steps: int = 5000
) -> npt.NDArray[np.float64]:
    """Scores of the rows of ``x`` under a logistic regression fitted on them (standardised
    features, L2, gradient descent): how well the signals together could separate, at best."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = np.c_[(x - mean) / std, np.ones(len(x))]
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        w -= 0.5 * (z.T @ (p - y) / len(y) + l2 * w)
    scores: npt.NDArray[np.float64] = z @ w
    return scores


def recall_at(scores: Sequence[float], answerable: Sequence[bool], max_false_refusals: float) -> float:
    """The largest share of unanswerable questions refused by any threshold (refuse below it)
    whose share of answerable questions refused stays at or under ``max_false_refusals``."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(answerable, dtype=bool)
    best = 0.0
    for t in np.unique(np.r_[s, np.inf]):
        refused = s < t
        if (refused & y).sum() <= max_false_refusals * y.sum():
            best = max(best, float((refused & ~y).sum() / max(1, (~y).sum())))
    return best


def summarize(rows: Sequence[dict[str, Any]], max_false_refusals: float = 0.15) -> dict[str, Any]:
    labels = [r["answerable"] for r in rows]
    per_signal = {}
    for name in SIGNALS:
        sign = -1.0 if name in LOWER_IS_ANSWERABLE else 1.0
        per_signal[name] = auroc([sign * float(r[name]) for r in rows], [int(y) for y in labels])
    x = np.array([[float(r[name]) for name in SIGNALS] for r in rows])
    combined = (
        fit_logistic(x, np.array(labels, dtype=float)) if len(set(labels)) == 2 else np.zeros(len(rows))
    )
    return {
        "questions": len(rows),
        "unanswerable": labels.count(False),
        "auroc": {k: round(v, 3) for k, v in per_signal.items()},
        "combined_in_sample_auroc": auroc(combined.tolist(), [int(y) for y in labels]),
        f"refusal_recall_at_false_refusals_{max_false_refusals}": {
            "relevance": round(recall_at([r["relevance"] for r in rows], labels, max_false_refusals), 3),
            "combined_in_sample": round(recall_at(combined.tolist(), labels, max_false_refusals), 3),
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("questions", nargs="?", type=Path, help="golden questions (JSONL)")
    p.add_argument("--index", help="the index the questions are asked of")
    p.add_argument("--limit", type=int)
    p.add_argument("--save", type=Path, help="write each question's signals here")
    p.add_argument("--load", type=Path, help="read signals saved before instead of asking")
    p.add_argument("--max-false-refusals", type=float, default=0.15)
    args = p.parse_args(argv)
    for path in (args.load, args.questions):
        if path is not None and not path.is_file():
            p.error(f"{path}: no such file")
    if args.load:
        rows = json.loads(args.load.read_text(encoding="utf-8"))
    elif args.questions and args.index:
        rows = signals(args.index, args.questions, args.limit)
    else:
        p.error("give QUESTIONS.jsonl with --index, or --load")
    if args.save:
        args.save.write_text(json.dumps(rows), encoding="utf-8")
    print(json.dumps(summarize(rows, args.max_false_refusals), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
