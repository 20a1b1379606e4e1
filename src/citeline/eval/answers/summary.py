"""Aggregating scored rows into the report's metrics, counts, latency and cost."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from citeline.answer.units import is_fragment
from citeline.eval.answers.row import QuestionRow
from citeline.eval.answers.scoring import STAGES
from citeline.eval.metrics import auroc, percentile, precision_recall_f1

NO_JUDGE = "no independent judge configured"
SAME_JUDGE = "the judge is the pipeline's own verifier"


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize(
    rows: Sequence[QuestionRow],
    k: int = 5,
    *,
    judge_name: str | None = None,
    pipeline_verifier: str | None = None,
) -> dict[str, Any]:
    """Aggregate metrics over scored rows: {"metrics", "n", "counts", "latency_ms", "cost", ...}."""
    ok = [r for r in rows if r.error is None]
    answerable = [r for r in ok if r.answerable]
    unanswerable = [r for r in ok if not r.answerable]
    refused = [r for r in ok if r.refused]
    answered = [r for r in ok if not r.refused]
    metrics: dict[str, float | None] = {}
    n: dict[str, int] = {}

    with_docs = [r.retrieval for r in answerable if r.retrieval is not None]
    metrics[f"hit_rate@{k}"] = _mean([r.hit_at_k for r in with_docs])
    metrics[f"recall@{k}"] = _mean([r.recall_at_k for r in with_docs])
    n[f"hit_rate@{k}"] = n[f"recall@{k}"] = len(with_docs)
    in_ctx = [r.evidence_in_context for r in with_docs if r.evidence_in_context is not None]
    metrics["context_hit_rate"] = _mean([float(x) for x in in_ctx])
    n["context_hit_rate"] = len(in_ctx)

    graded = [r.correctness for r in answerable if r.correctness is not None]
    for name, values in (
        ("exact_match", [c.exact_match for c in graded if c.exact_match is not None]),
        ("token_f1", [c.token_f1 for c in graded]),
        ("answer_contains", [c.contains for c in graded if c.contains is not None]),
        ("first_sentence_contains", [c.first_contains for c in graded if c.first_contains is not None]),
    ):
        metrics[name] = _mean([float(v) for v in values])
        n[name] = len(values)

    counted = [r.citation_counts for r in answerable if r.citation_counts is not None]
    cits = sum(c.citations for c in counted)
    ev = sum(c.evidence for c in counted)
    cp = _ratio(sum(c.correct_citations for c in counted), cits)
    cr = _ratio(sum(c.covered_evidence for c in counted), ev)
    metrics["citation_precision"], metrics["citation_recall"] = cp, cr
    metrics["citation_f1"] = (
        (2 * cp * cr / (cp + cr) if cp + cr else 0.0) if cp is not None and cr is not None else None
    )
    n["citation_precision"], n["citation_recall"], n["citation_f1"] = cits, ev, len(counted)

    tp = sum(1 for r in refused if not r.answerable)
    fp = len(refused) - tp
    fn = sum(1 for r in unanswerable if not r.refused)
    p, rec, f1 = precision_recall_f1(tp, fp, fn)
    metrics["refusal_precision"] = p if refused else None
    metrics["refusal_recall"] = rec if unanswerable else None
    metrics["refusal_f1"] = f1 if refused and unanswerable else None
    metrics["false_refusal_rate"] = _ratio(fp, len(answerable))
    # answers whose first words are the rest of a sentence ("and is mirrored daily ...")
    shown = [r.answer for r in answered if r.answer]
    metrics["fragment_openings"] = _ratio(sum(is_fragment(a) for a in shown), len(shown))
    n["fragment_openings"] = len(shown)
    n["refusal_precision"], n["refusal_recall"] = len(refused), len(unanswerable)
    n["refusal_f1"], n["false_refusal_rate"] = len(ok), len(answerable)
    # How well the refusal guard's reader tells the two kinds of question apart, whatever the
    # threshold: a question refused before the reader ran has no score and is left out.
    read = [
        (float(r.extra["reader_score"]), r.answerable) for r in ok if r.extra.get("reader_score") is not None
    ]
    metrics["reader_separation"] = auroc([s for s, _ in read], [y for _, y in read])
    n["reader_separation"] = len(read)
    # the same for the relevance guard's score, which every question gets (reports written before
    # it was recorded have none: None)
    rel = [(float(r.extra["relevance"]), r.answerable) for r in ok if r.extra.get("relevance") is not None]
    metrics["relevance_separation"] = auroc([s for s, _ in rel], [y for _, y in rel])
    n["relevance_separation"] = len(rel)

    sentences = [r.sentences for r in answered if r.sentences is not None]
    total = sum(s.total for s in sentences)
    metrics["faithfulness"] = _ratio(sum(s.supported for s in sentences), total)
    n["faithfulness"] = total

    judge: dict[str, Any] = {"judge": judge_name, "pipeline_verifier": pipeline_verifier, "reason": None}
    judged = [r.judge for r in answered if r.judge is not None]
    if judge_name is None:
        metrics["judge_support"], judge["reason"] = None, NO_JUDGE
    elif judge_name == pipeline_verifier:
        metrics["judge_support"], judge["reason"] = None, SAME_JUDGE
    else:
        metrics["judge_support"] = _ratio(sum(j.supported for j in judged), sum(j.judged for j in judged))
    n["judge_support"] = sum(j.judged for j in judged)
    judge["value"] = metrics["judge_support"]

    latencies = [float(r.latency_ms) for r in ok]
    latency = (
        {
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "mean": math.fsum(latencies) / len(latencies),
            "max": max(latencies),
        }
        if latencies
        else {"p50": None, "p95": None, "mean": None, "max": None}
    )
    tokens = [r.tokens for r in ok if r.tokens is not None]
    prompt = sum(int(t.get("prompt", 0)) for t in tokens)
    completion = sum(int(t.get("completion", 0)) for t in tokens)
    cost = {
        "prompt_tokens": prompt if tokens else None,
        "completion_tokens": completion if tokens else None,
        "prompt_tokens_per_question": prompt / len(ok) if tokens and ok else None,
        "completion_tokens_per_question": completion / len(ok) if tokens and ok else None,
        "questions_with_token_counts": len(tokens),
    }
    stages: dict[str, int] = dict.fromkeys(STAGES, 0)
    for r in rows:
        if r.stage:
            stages[r.stage] = stages.get(r.stage, 0) + 1
    return {
        "metrics": metrics,
        "n": n,
        "counts": {
            "questions": len(rows),
            "answerable": sum(1 for r in rows if r.answerable),
            "unanswerable": sum(1 for r in rows if not r.answerable),
            "answered": len(answered),
            "refused": len(refused),
            "errors": len(rows) - len(ok),
            "failures": sum(stages.values()),
            "refusal_text_errors": sum(1 for r in ok if r.refusal_text_ok is False),
            "unresolved_evidence": sum(1 for r in rows for e in r.gold_evidence if not e.resolved),
        },
        "failures": stages,
        "judge": judge,
        "latency_ms": latency,
        "cost": cost,
    }
