"""Choosing the refusal thresholds from data.

Each question is asked once with the thresholds disabled: the relevance guard (before
generation), the extractive answer floor (the best sentence's score) and, with a reader, the
reader guard (its best unit's score). Its relevance, answer confidence, reader score, and whether
anything else refused it (a missing identifier, no supported sentence) are recorded. Refusal at
thresholds (t, f) is then "refused otherwise, or relevance < t, or confidence < f"; with a reader,
"refused otherwise, or relevance below its setting, or reader score < r". Every value is evaluated
without asking again.

With a reader, the suggested reader threshold maximises refusal recall plus the share of
answerable questions not refused (balanced accuracy); ties go to the lower threshold.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.wiring import Components

THRESHOLDS = [round(0.30 + 0.02 * i, 3) for i in range(21)]
# finer at the low end: a reader that pushes non-answers to near zero is best cut there
READER_THRESHOLDS = [0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015] + [round(0.02 * i, 2) for i in range(1, 50)]
FLOORS = [round(0.20 + 0.05 * i, 3) for i in range(7)]


def load_questions(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc})") from exc
            # golden-set rows (citeline eval answers) carry their gold source in evidence
            if "source" not in row and row.get("evidence"):
                row["source"] = row["evidence"][0]["source"]
            if "answer" not in row and row.get("answers"):
                row["answer"] = row["answers"][0]
            rows.append(row)
    return rows


def _cites_gold(answer_sources: list[str], gold: str | None) -> bool:
    if not gold:
        return False
    return any(s == gold or s.endswith("/" + gold) or gold.endswith("/" + s) for s in answer_sources)


def observe(kb: KnowledgeBase, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ask each question with the threshold off; record what every threshold needs."""
    # A second wiring of the same index with both thresholds off (the generator is rebuilt with it).
    settings = dataclasses.replace(
        kb.settings, refusal_threshold=0.0, min_answer_score=0.0, reader_threshold=0.0, trace=False
    )
    answerer = Components(settings, kb.store, embedder=kb.embedder).answerer()
    rows = []
    for q in questions:
        answer = answerer.ask(q["question"], Filter.admin())
        sources = [c.source for c in answer.citations]
        expected = (q.get("answer") or "").lower()
        rows.append(
            {
                "id": q.get("id"),
                "answerable": bool(q.get("answerable")),
                "relevance": answer.relevance,
                "confidence": 1.0 if answer.confidence is None else answer.confidence,
                "reader": answer.reader_score,
                "refused_otherwise": answer.refused,
                "cites_gold": _cites_gold(sources, q.get("source")),
                "answer_correct": bool(expected)
                and expected in (answer.answer + " " + " ".join(c.quote for c in answer.citations)).lower(),
            }
        )
    return rows


def _refused(r: dict[str, Any], t: float, f: float) -> bool:
    return bool(r["refused_otherwise"] or r["relevance"] < t or r["confidence"] < f)


def sweep(
    rows: list[dict[str, Any]], thresholds: list[float] = THRESHOLDS, floors: list[float] = FLOORS
) -> list[dict[str, Any]]:
    table = []
    unanswerable = [r for r in rows if not r["answerable"]]
    answerable = [r for r in rows if r["answerable"]]
    for t, f in ((t, f) for f in floors for t in thresholds):
        refused = [r for r in rows if _refused(r, t, f)]
        true_refusals = sum(1 for r in refused if not r["answerable"])
        answered_ok = sum(1 for r in answerable if not _refused(r, t, f) and r["cites_gold"])
        table.append(
            {
                "threshold": t,
                "floor": f,
                "refusal_precision": true_refusals / len(refused) if refused else 1.0,
                "refusal_recall": true_refusals / len(unanswerable) if unanswerable else 1.0,
                "false_refusal_rate": (len(refused) - true_refusals) / len(answerable) if answerable else 0.0,
                "answered_with_gold": answered_ok / len(answerable) if answerable else 0.0,
            }
        )
    return table


def choose(table: list[dict[str, Any]]) -> tuple[float, float]:
    """The lowest (threshold, floor) that refuse every unanswerable question and answer the most
    answerable ones with the gold source; failing that, the pair with the best refusal F1."""
    perfect = [r for r in table if r["refusal_recall"] >= 1.0]
    if perfect:
        best = max(perfect, key=lambda r: (r["answered_with_gold"], -r["threshold"], -r["floor"]))
        return float(best["threshold"]), float(best["floor"])

    def f1(r: dict[str, Any]) -> float:
        p, rec = r["refusal_precision"], r["refusal_recall"]
        return 2 * p * rec / (p + rec) if p + rec else 0.0

    best = max(table, key=f1)
    return float(best["threshold"]), float(best["floor"])


def sweep_reader(
    rows: list[dict[str, Any]], relevance_threshold: float, thresholds: list[float] = READER_THRESHOLDS
) -> list[dict[str, Any]]:
    """Refusal at each reader threshold, with the relevance guard kept at its setting (it runs first)."""
    table = []
    unanswerable = [r for r in rows if not r["answerable"]]
    answerable = [r for r in rows if r["answerable"]]
    for t in thresholds:
        refused = [
            r
            for r in rows
            if r["refused_otherwise"] or r["relevance"] < relevance_threshold or (r["reader"] or 0.0) < t
        ]
        ids = {id(r) for r in refused}
        true_refusals = sum(1 for r in refused if not r["answerable"])
        table.append(
            {
                "reader_threshold": t,
                "refusal_precision": true_refusals / len(refused) if refused else 1.0,
                "refusal_recall": true_refusals / len(unanswerable) if unanswerable else 1.0,
                "false_refusal_rate": (len(refused) - true_refusals) / len(answerable) if answerable else 0.0,
                "answered_with_gold": sum(1 for r in answerable if id(r) not in ids and r["cites_gold"])
                / max(1, len(answerable)),
            }
        )
    return table


def choose_reader(table: list[dict[str, Any]]) -> float:
    best = max(
        table, key=lambda r: (r["refusal_recall"] + 1.0 - r["false_refusal_rate"], -r["reader_threshold"])
    )
    return float(best["reader_threshold"])


def calibrate_refusal(kb: KnowledgeBase, questions_path: Path) -> dict[str, Any]:
    rows = observe(kb, load_questions(questions_path))
    table = sweep(rows)
    threshold, floor = choose(table)
    if any(r["reader"] is not None for r in rows):
        reader_table = sweep_reader(rows, kb.settings.refusal_threshold)
        extra: dict[str, Any] = {
            "current_reader_threshold": kb.settings.reader_threshold,
            "suggested_reader_threshold": choose_reader(reader_table),
            "reader_table": reader_table,
        }
    else:
        extra = {}
    return {
        **extra,
        "questions": len(rows),
        "answerable": sum(r["answerable"] for r in rows),
        "current_threshold": kb.settings.refusal_threshold,
        "current_floor": kb.settings.min_answer_score,
        "suggested_threshold": threshold,
        "suggested_floor": floor,
        "table": table,
        "rows": rows,
    }


def format_table(result: dict[str, Any]) -> str:
    if "reader_table" in result:
        lines = [
            f"{result['questions']} questions ({result['answerable']} answerable), with the reader",
            f"current: reader_threshold {result['current_reader_threshold']}",
            f"suggested: reader_threshold {result['suggested_reader_threshold']}",
            "reader_threshold  refusal_P  refusal_R  false_refusals  answered_with_gold",
        ]
        lines += [
            f"{r['reader_threshold']:>16g}  {r['refusal_precision']:>9.3f}  {r['refusal_recall']:>9.3f}  "
            f"{r['false_refusal_rate']:>14.3f}  {r['answered_with_gold']:>18.3f}"
            for r in result["reader_table"]
        ]
        return "\n".join(lines)
    lines = [
        f"{result['questions']} questions ({result['answerable']} answerable)",
        f"current: refusal_threshold {result['current_threshold']}, min_answer_score {result['current_floor']}",
        f"suggested: refusal_threshold {result['suggested_threshold']}, min_answer_score {result['suggested_floor']}",
        "threshold  floor  refusal_P  refusal_R  false_refusals  answered_with_gold",
    ]
    for r in result["table"]:
        lines.append(
            f"{r['threshold']:>9.3f}  {r['floor']:>5.2f}  {r['refusal_precision']:>9.3f}  {r['refusal_recall']:>9.3f}  "
            f"{r['false_refusal_rate']:>14.3f}  {r['answered_with_gold']:>18.3f}"
        )
    return "\n".join(lines)
