"""The words of an answers report: each metric's label, unit and definition, and the groups the
report shows them in (the HTML report and ``eval answers``' tables say a metric the same way)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Retrieval", ("hit_rate@", "recall@", "context_hit_rate")),
    (
        "Answer correctness",
        ("exact_match", "token_f1", "answer_contains", "first_sentence_contains", "fragment_openings"),
    ),
    ("Citations", ("citation_precision", "citation_recall", "citation_f1")),
    (
        "Refusals",
        (
            "refusal_precision",
            "refusal_recall",
            "refusal_f1",
            "false_refusal_rate",
            "reader_separation",
            "relevance_separation",
        ),
    ),
    ("Faithfulness", ("faithfulness", "judge_support")),
)

LABELS = {
    "hit_rate": "Hit rate",
    "recall": "Recall",
    "context_hit_rate": "Gold evidence in context",
    "exact_match": "Exact match",
    "token_f1": "Token F1",
    "answer_contains": "Contains a gold answer",
    "first_sentence_contains": "First sentence contains a gold answer",
    "fragment_openings": "Answers opening with a fragment",
    "citation_precision": "Citation precision",
    "citation_recall": "Citation recall",
    "citation_f1": "Citation F1",
    "refusal_precision": "Refusal precision",
    "refusal_recall": "Refusal recall",
    "refusal_f1": "Refusal F1",
    "false_refusal_rate": "False-refusal rate",
    "reader_separation": "Reader separation (AUROC)",
    "relevance_separation": "Relevance separation (AUROC)",
    "faithfulness": "Faithfulness (pipeline verifier)",
    "judge_support": "Judge-rated support",
}

# What each metric's n counts.
UNITS = {
    "citation_precision": "citations",
    "citation_recall": "evidence",
    "citation_f1": "questions",
    "refusal_precision": "refusals",
    "refusal_recall": "unanswerable",
    "refusal_f1": "questions",
    "false_refusal_rate": "answerable",
    "fragment_openings": "answers",
    "reader_separation": "questions",
    "relevance_separation": "questions",
    "faithfulness": "sentences",
    "judge_support": "sentences",
}

DEFINITIONS = {
    "hit_rate": "answerable questions with a gold document among the top k retrieved documents",
    "recall": "mean share of each question's gold documents among the top k retrieved documents",
    "context_hit_rate": "answerable questions where a gold evidence span reached the generator's passages",
    "exact_match": "normalised answer text equals a gold answer (refusal = empty answer)",
    "token_f1": "SQuAD token F1 of the answer text against the best gold answer or the reference",
    "answer_contains": "the answer contains a gold answer as whole normalised tokens",
    "first_sentence_contains": "the answer's first sentence alone contains a gold answer (what a reader sees first)",
    "fragment_openings": 'answers whose first words continue a sentence they do not show ("and is mirrored '
    'daily ..."; lower is better)',
    "citation_precision": "citations whose quoted span overlaps a gold evidence span in the same document",
    "citation_recall": "gold evidence items overlapped by at least one citation (refusals miss them all)",
    "citation_f1": "harmonic mean of citation precision and recall",
    "refusal_precision": "refusals that were on unanswerable questions",
    "refusal_recall": "unanswerable questions that were refused",
    "refusal_f1": "harmonic mean of refusal precision and recall",
    "false_refusal_rate": "answerable questions that were refused (lower is better)",
    "reader_separation": "chance that the reader's best score over the context is higher for an answerable "
    "question than for an unanswerable one (0.5: no better than chance; questions the reader scored)",
    "relevance_separation": "the same for the relevance guard's score (refusal_threshold): whether any "
    "threshold on it can tell your answerable questions from the unanswerable ones",
    "faithfulness": "generated sentences the pipeline's own verifier marked supported",
    "judge_support": "shown sentences an independent judge found supported by their citations",
}


def metric_label(name: str) -> str:
    base, _, cut = name.partition("@")
    label = LABELS.get(base, name)
    return f"{label} @{cut}" if cut else label


def group_metrics(metrics: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    groups: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    for title, prefixes in GROUPS:
        names = [m for p in prefixes for m in metrics if (m.startswith(p) if p.endswith("@") else m == p)]
        seen.update(names)
        if names:
            groups.append((title, names))
    rest = [m for m in metrics if m not in seen]
    if rest:
        groups.append(("Other", rest))
    return groups
