"""Pure evaluation metrics: ranked retrieval (nDCG, recall, MRR, hit rate, precision) and answers.

Retrieval conventions follow trec_eval / pytrec_eval, which BEIR reports with:

* A *run* maps query id -> {doc id: score} (or -> a ranked list of doc ids, best first).
  Scores are ranked high to low; **ties are broken by doc id, descending** (trec_eval sorts on
  ``(score, docno)`` both descending, comparing doc ids as strings). Ranked lists are used as given.
* *qrels* map query id -> {doc id: graded relevance}. A document is relevant when its grade is
  >= 1; grades <= 0 are "judged non-relevant".
* nDCG uses the linear gain of trec_eval's ``ndcg_cut`` (gain = grade, discount log2(rank + 1),
  rank 1-based); the ideal DCG comes from the query's qrels, cut at the same k.
* Precision@k divides by k even when fewer than k documents were retrieved.
* Averaging: a query in qrels with no relevant document is skipped (it has nothing to find); a
  query in qrels that the run lacks scores 0; run entries for queries without qrels are ignored.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

Ranking = Sequence[str] | Mapping[str, float]
"""One query's results: a ranked list of doc ids (best first) or a {doc id: score} mapping."""

Run = Mapping[str, Sequence[str]] | Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

DEFAULT_METRICS: tuple[str, ...] = ("ndcg@10", "recall@10", "recall@100", "mrr@10", "hit_rate@5")


# --------------------------------------------------------------------------------------------
# Ranking helpers
# --------------------------------------------------------------------------------------------


def rank_documents(results: Ranking) -> list[str]:
    """Doc ids best first.

    A score mapping is sorted by score descending with ties broken by doc id descending, exactly
    as trec_eval/pytrec_eval do. A sequence is taken as already ranked; a repeated doc id keeps
    its first (best) position.
    """
    if isinstance(results, Mapping):
        ordered = sorted(results.items(), key=lambda item: (item[1], item[0]), reverse=True)
        return [doc_id for doc_id, _ in ordered]
    return list(dict.fromkeys(results))


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")


def _relevant(judgments: Mapping[str, int]) -> dict[str, int]:
    return {doc_id: grade for doc_id, grade in judgments.items() if grade >= 1}


def _top_k(results: Ranking, k: int) -> list[str]:
    _check_k(k)
    return rank_documents(results)[:k]


def _discount(rank: int) -> float:
    return math.log2(rank + 1)


# --------------------------------------------------------------------------------------------
# Per-query retrieval metrics
# --------------------------------------------------------------------------------------------


def dcg_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """sum over the top k of grade / log2(rank + 1), counting only grades >= 1."""
    relevant = _relevant(judgments)
    return sum(relevant.get(doc_id, 0) / _discount(rank) for rank, doc_id in enumerate(_top_k(results, k), 1))


def ndcg_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """DCG@k divided by the DCG@k of the ideal ranking of the judged documents; 0 if none relevant."""
    _check_k(k)
    ideal_gains = sorted(_relevant(judgments).values(), reverse=True)[:k]
    ideal = sum(gain / _discount(rank) for rank, gain in enumerate(ideal_gains, 1))
    if ideal == 0.0:
        return 0.0
    return dcg_at_k(results, judgments, k) / ideal


def recall_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top k / all relevant documents; 0 if none relevant."""
    relevant = _relevant(judgments)
    top = _top_k(results, k)
    if not relevant:
        return 0.0
    return sum(1 for doc_id in top if doc_id in relevant) / len(relevant)


def precision_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """Relevant documents in the top k / k (k, not the number retrieved, as trec_eval's P_k)."""
    relevant = _relevant(judgments)
    return sum(1 for doc_id in _top_k(results, k) if doc_id in relevant) / k


def mrr_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """1 / rank of the first relevant document within the top k, else 0 (reciprocal rank@k)."""
    relevant = _relevant(judgments)
    for rank, doc_id in enumerate(_top_k(results, k), 1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def hit_rate_at_k(results: Ranking, judgments: Mapping[str, int], k: int) -> float:
    """1.0 if any relevant document is in the top k, else 0.0 (ranx's ``hit_rate@k``)."""
    relevant = _relevant(judgments)
    return 1.0 if any(doc_id in relevant for doc_id in _top_k(results, k)) else 0.0


MetricFn = Callable[[Ranking, Mapping[str, int], int], float]

METRICS: dict[str, MetricFn] = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "precision": precision_at_k,
    "mrr": mrr_at_k,
    "hit_rate": hit_rate_at_k,
}


def parse_metric(name: str) -> tuple[MetricFn, int]:
    """'ndcg@10' -> (ndcg_at_k, 10). Raises ValueError naming the accepted forms."""
    base, sep, cutoff = name.partition("@")
    fn = METRICS.get(base)
    if fn is None or not sep or not cutoff.isdigit() or int(cutoff) < 1:
        choices = ", ".join(f"{m}@K" for m in METRICS)
        raise ValueError(f"Unknown metric '{name}'. Use one of {choices} with K a positive integer.")
    return fn, int(cutoff)


# --------------------------------------------------------------------------------------------
# Over a run
# --------------------------------------------------------------------------------------------


def per_query(run: Run, qrels: Qrels, metric: str) -> dict[str, float]:
    """Score of `metric` (e.g. 'ndcg@10') for each query of qrels that has a relevant document.

    A query that the run lacks scores 0; queries with no relevant document are left out.
    """
    fn, k = parse_metric(metric)
    empty: list[str] = []
    scores: dict[str, float] = {}
    for query_id, judgments in qrels.items():
        if not _relevant(judgments):
            continue
        results: Ranking = run.get(query_id, empty)
        scores[query_id] = fn(results, judgments, k)
    return scores


def mean(values: Iterable[float]) -> float:
    """Arithmetic mean; raises ValueError when there is nothing to average."""
    items = list(values)
    if not items:
        raise ValueError("cannot average zero values")
    return math.fsum(items) / len(items)


def evaluate_per_query(
    run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, dict[str, float]]:
    """{metric: {query id: score}} for each metric, over the queries that `per_query` keeps."""
    return {metric: per_query(run, qrels, metric) for metric in metrics}


def evaluate(run: Run, qrels: Qrels, metrics: Sequence[str] = DEFAULT_METRICS) -> dict[str, float]:
    """{metric: mean over queries}. Raises ValueError if no query in qrels has a relevant document."""
    out: dict[str, float] = {}
    for metric, scores in evaluate_per_query(run, qrels, metrics).items():
        if not scores:
            raise ValueError("No query in qrels has a relevant document (grade >= 1): nothing to evaluate.")
        out[metric] = mean(scores.values())
    return out


def paired_difference(
    ours: Mapping[str, float], theirs: Mapping[str, float], *, samples: int = 10_000, seed: int = 0
) -> dict[str, float]:
    """Is ``theirs`` (per-query scores) different from ``ours`` on the same queries?

    The mean difference (theirs - ours), its 95% bootstrap interval (queries resampled), and the
    two-sided p-value of a paired sign-flip randomization test (Smucker et al., CIKM 2007: the test
    IR evaluation recommends). Queries missing on either side are left out."""
    import random

    queries = sorted(set(ours) & set(theirs))
    if not queries:
        raise ValueError("no query scored on both sides")
    diffs = [theirs[q] - ours[q] for q in queries]
    n, observed = len(diffs), sum(diffs) / len(diffs)
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(samples))
    extreme = sum(
        1
        for _ in range(samples)
        if abs(sum(d if rng.random() < 0.5 else -d for d in diffs) / n) >= abs(observed) - 1e-12
    )
    return {
        "queries": n,
        "mean_difference": observed,
        "ci95_low": means[int(0.025 * (samples - 1))],
        "ci95_high": means[int(0.975 * (samples - 1))],
        "p_value": (extreme + 1) / (samples + 1),
    }


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0 <= p <= 100), linear interpolation between order statistics.

    Same as numpy.percentile's default ('linear'): p50 of [1, 2, 3, 4] is 2.5.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= p <= 100.0 or math.isnan(p):
        raise ValueError(f"p must be within [0, 100], got {p}")
    position = (len(ordered) - 1) * p / 100.0
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


# --------------------------------------------------------------------------------------------
# Answer-level helpers
# --------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, drop ASCII punctuation, drop a/an/the, squeeze whitespace."""
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def _as_golds(golds: str | Iterable[str]) -> list[str]:
    return [golds] if isinstance(golds, str) else list(golds)


def exact_match(prediction: str, golds: str | Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0."""
    pred = normalize_answer(prediction)
    return 1.0 if any(pred == normalize_answer(g) for g in _as_golds(golds)) else 0.0


def _f1_one(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    if not pred_tokens or not gold_tokens:
        # SQuAD v2: two empty answers agree; one empty answer against a non-empty one scores 0.
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: str | Iterable[str]) -> float:
    """SQuAD token F1 (bag of normalised tokens), the best over the gold answers; 0.0 if none."""
    return max((_f1_one(prediction, g) for g in _as_golds(golds)), default=0.0)


def contains_any(prediction: str, golds: str | Iterable[str]) -> bool:
    """True if some gold answer occurs in the prediction as whole normalised tokens.

    Both sides are normalised first, so 'The Eiffel Tower.' contains 'eiffel tower' but 'cathedral'
    does not contain 'cat'. Gold answers that normalise to nothing are ignored.
    """
    haystack = f" {normalize_answer(prediction)} "
    for gold in _as_golds(golds):
        needle = normalize_answer(gold)
        if needle and f" {needle} " in haystack:
            return True
    return False


def span_overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Whether half-open spans [a_start, a_end) and [b_start, b_end) share at least one position.

    Spans that only touch (a_end == b_start) do not overlap; an empty span overlaps nothing.
    """
    if a_end < a_start or b_end < b_start:
        raise ValueError(f"span end before start: [{a_start}, {a_end}) / [{b_start}, {b_end})")
    return a_start < b_end and b_start < a_end and a_start < a_end and b_start < b_end


def precision_recall_f1(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    """(precision, recall, F1) from counts; a 0/0 ratio is 0.0."""
    if tp < 0 or fp < 0 or fn < 0:
        raise ValueError(f"counts must be non-negative, got tp={tp}, fp={fp}, fn={fn}")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def auroc(scores: Sequence[float], labels: Sequence[int | bool]) -> float | None:
    """Area under the ROC curve: the chance that a positive (label true) scores above a negative,
    ties counted half (Mann-Whitney U); None without both classes."""
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return None
    ranked = sorted(zip(scores, (bool(y) for y in labels), strict=True))
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # the tie group's average 1-based rank
        rank_sum += mid * sum(1 for k in range(i, j) if ranked[k][1])
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
