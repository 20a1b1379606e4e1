from __future__ import annotations

import math
import random

import numpy as np
import pytest
from ranx import Qrels as RanxQrels
from ranx import Run as RanxRun
from ranx import evaluate as ranx_evaluate

from citeline.eval.metrics import (
    DEFAULT_METRICS,
    auroc,
    contains_any,
    dcg_at_k,
    evaluate,
    evaluate_per_query,
    exact_match,
    hit_rate_at_k,
    mrr_at_k,
    ndcg_at_k,
    normalize_answer,
    paired_difference,
    parse_metric,
    per_query,
    percentile,
    precision_at_k,
    precision_recall_f1,
    rank_documents,
    recall_at_k,
    span_overlap,
    token_f1,
)

# One query, worked by hand.
#   ranking:   a  b  c  d  e          (ranks 1..5)
#   grades:    -  2  0  1  -          plus x (grade 3) that was never retrieved
# Relevant (grade >= 1): b, d, x  -> 3 relevant documents.
RANKING = ["a", "b", "c", "d", "e"]
JUDGED = {"b": 2, "d": 1, "x": 3, "c": 0}
LOG2_3 = math.log2(3)  # 1.5849625
LOG2_5 = math.log2(5)  # 2.3219281


def test_dcg_and_ndcg_by_hand() -> None:
    # DCG@5 = 2/log2(3) + 1/log2(5) = 1.2618595 + 0.4306766 = 1.6925361
    assert dcg_at_k(RANKING, JUDGED, 5) == pytest.approx(2 / LOG2_3 + 1 / LOG2_5)
    # Ideal gains 3, 2, 1: IDCG@5 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.2618595 + 0.5 = 4.7618595
    idcg = 3 + 2 / LOG2_3 + 0.5
    # nDCG@5 = 1.6925361 / 4.7618595 = 0.3554360
    assert ndcg_at_k(RANKING, JUDGED, 5) == pytest.approx((2 / LOG2_3 + 1 / LOG2_5) / idcg)
    assert ndcg_at_k(RANKING, JUDGED, 5) == pytest.approx(0.3554360, abs=1e-7)
    # nDCG@3: only b counts, ideal still 3 + 2/log2(3) + 1/2 -> 1.2618595 / 4.7618595 = 0.2649930
    assert ndcg_at_k(RANKING, JUDGED, 3) == pytest.approx(0.2649930, abs=1e-7)
    # nDCG@1: a is not relevant -> 0; ideal@1 = 3.
    assert ndcg_at_k(RANKING, JUDGED, 1) == 0.0
    # Perfect ranking -> 1.
    assert ndcg_at_k(["x", "b", "d"], JUDGED, 10) == pytest.approx(1.0)


def test_ndcg_ideal_is_cut_at_k() -> None:
    # Ranking [b, x]: DCG@2 = 2/1 + 3/log2(3) = 2 + 1.8927893 = 3.8927893
    # IDCG@2 uses the 2 best grades (3, 2): 3/1 + 2/log2(3) = 3 + 1.2618595 = 4.2618595
    assert ndcg_at_k(["b", "x"], JUDGED, 2) == pytest.approx((2 + 3 / LOG2_3) / (3 + 2 / LOG2_3))


def test_recall_precision_mrr_hit_rate_by_hand() -> None:
    # relevant in top 5: b, d (2 of 3); in top 3: b (1 of 3)
    assert recall_at_k(RANKING, JUDGED, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKING, JUDGED, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKING, JUDGED, 1) == 0.0
    # precision: 2/5 at 5, 1/3 at 3, and 2/10 at 10 (k is the divisor, not the 5 retrieved)
    assert precision_at_k(RANKING, JUDGED, 5) == pytest.approx(2 / 5)
    assert precision_at_k(RANKING, JUDGED, 3) == pytest.approx(1 / 3)
    assert precision_at_k(RANKING, JUDGED, 10) == pytest.approx(2 / 10)
    # first relevant (b) is at rank 2 -> 1/2 from k=2 on, 0 at k=1
    assert mrr_at_k(RANKING, JUDGED, 10) == 0.5
    assert mrr_at_k(RANKING, JUDGED, 2) == 0.5
    assert mrr_at_k(RANKING, JUDGED, 1) == 0.0
    assert hit_rate_at_k(RANKING, JUDGED, 1) == 0.0
    assert hit_rate_at_k(RANKING, JUDGED, 2) == 1.0


def test_grade_zero_is_judged_non_relevant() -> None:
    # c (grade 0) at rank 1 earns nothing anywhere.
    for fn in (ndcg_at_k, recall_at_k, precision_at_k, mrr_at_k, hit_rate_at_k):
        assert fn(["c"], JUDGED, 1) == 0.0
    # A query with no relevant document scores 0 per query (it is skipped when averaging).
    assert ndcg_at_k(["c"], {"c": 0}, 10) == 0.0
    assert recall_at_k(["c"], {}, 10) == 0.0


def test_score_mapping_ranks_like_a_list() -> None:
    scores = {"a": 0.9, "b": 0.8, "c": 0.5, "d": 0.4, "e": 0.1}
    assert rank_documents(scores) == RANKING
    for fn in (ndcg_at_k, recall_at_k, precision_at_k, mrr_at_k, hit_rate_at_k):
        assert fn(scores, JUDGED, 5) == fn(RANKING, JUDGED, 5)


def test_ties_break_by_doc_id_descending_like_trec_eval() -> None:
    # trec_eval / pytrec_eval sort by (score, doc id), both descending
    # (see cvangysel/pytrec_eval#56, usnistgov/trec_eval#22).
    # Equal scores d1, d2, d3 -> ranking d3, d2, d1; the relevant d3 is first.
    tied = {"d1": 1.0, "d2": 1.0, "d3": 1.0}
    assert rank_documents(tied) == ["d3", "d2", "d1"]
    assert ndcg_at_k(tied, {"d3": 1}, 10) == 1.0
    # d5, d4, d3 tied -> d3 last: RR = 1/3, nDCG = (1/log2(4)) / 1 = 0.5
    tied2 = {"d5": 1.0, "d4": 1.0, "d3": 1.0}
    assert mrr_at_k(tied2, {"d3": 1}, 10) == pytest.approx(1 / 3)
    assert ndcg_at_k(tied2, {"d3": 1}, 10) == pytest.approx(0.5)
    # Doc ids compare as strings, not numbers: "9" > "10".
    assert rank_documents({"10": 2.0, "9": 2.0, "100": 3.0}) == ["100", "9", "10"]
    # Insertion order does not matter.
    assert rank_documents(dict(reversed(list(tied.items())))) == ["d3", "d2", "d1"]


def test_ranked_lists_are_taken_as_given_and_deduplicated() -> None:
    assert rank_documents(["b", "a", "b", "c"]) == ["b", "a", "c"]
    # duplicate b does not count twice: recall@4 = 1 of 3 relevant
    assert recall_at_k(["b", "a", "b", "c"], JUDGED, 4) == pytest.approx(1 / 3)


@pytest.mark.parametrize("k", [0, -1, 2.5, True])
def test_bad_k_is_rejected(k: object) -> None:
    with pytest.raises(ValueError, match="k must be a positive integer"):
        ndcg_at_k(RANKING, JUDGED, k)  # type: ignore[arg-type]


def test_averaging_rules() -> None:
    qrels = {
        "q1": {"a": 1},
        "q2": {"b": 1},  # not in the run -> counts as 0
        "q3": {"c": 0},  # no relevant document -> skipped
    }
    run = {"q1": {"a": 1.0, "z": 0.5}, "q4": {"a": 1.0}}  # q4 has no qrels -> ignored
    assert per_query(run, qrels, "recall@10") == {"q1": 1.0, "q2": 0.0}
    # mean over q1, q2 = (1 + 0) / 2
    assert evaluate(run, qrels, ["recall@10"]) == {"recall@10": 0.5}
    # ranked-list runs work the same
    assert evaluate({"q1": ["z", "a"]}, qrels, ["mrr@10"]) == {"mrr@10": pytest.approx((0.5 + 0) / 2)}


def test_evaluate_defaults_and_per_query() -> None:
    qrels = {"q1": {"a": 2, "b": 1}, "q2": {"c": 1}}
    run = {"q1": ["b", "a"], "q2": ["x", "y", "z", "w", "v", "c"]}
    result = evaluate(run, qrels)
    assert list(result) == list(DEFAULT_METRICS)
    # q1: hit at rank 1 (b); q2: c at rank 6 -> outside hit_rate@5 and... inside recall@10
    assert result["hit_rate@5"] == 0.5
    assert result["recall@10"] == 1.0
    # mrr@10: q1 = 1, q2 = 1/6 -> mean 7/12
    assert result["mrr@10"] == pytest.approx(7 / 12)
    detail = evaluate_per_query(run, qrels, ["mrr@10"])
    assert detail == {"mrr@10": {"q1": 1.0, "q2": pytest.approx(1 / 6)}}


def test_evaluate_rejects_nothing_to_evaluate_and_bad_names() -> None:
    with pytest.raises(ValueError, match="No query in qrels has a relevant document"):
        evaluate({}, {"q": {"a": 0}})
    for bad in ["ndcg", "ndcg@", "ndcg@0", "ndcg@x", "map@10", "hits@5"]:
        with pytest.raises(ValueError, match="Unknown metric"):
            parse_metric(bad)
    assert parse_metric("precision@5") == (precision_at_k, 5)


# --------------------------------------------------------------------------------------------
# Parity with ranx
# --------------------------------------------------------------------------------------------

RANX_METRICS = ["ndcg@10", "recall@10", "recall@100", "mrr@10", "precision@5", "hit_rate@5"]


def _random_case(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """~50 queries, grades 0..3 (each query has a relevant doc), scores from a small set: many ties."""
    rng = random.Random(seed)
    docs = [f"d{i:03d}" for i in range(400)] + [str(i) for i in range(1, 60)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(50):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 20))
        grades = {doc_id: rng.choice([0, 1, 1, 2, 3]) for doc_id in judged}
        grades[judged[0]] = max(grades[judged[0]], 1)
        qrels[qid] = grades
        if q % 10 == 9:
            continue  # missing from the run
        retrieved = rng.sample(docs, rng.randint(5, 150))
        scores = {doc_id: float(rng.randint(0, 12)) / 4 for doc_id in retrieved}
        for doc_id in judged:
            if rng.random() < 0.6:
                scores[doc_id] = float(rng.randint(0, 12)) / 4
        run[qid] = scores
    return qrels, run


def _untied(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Same rankings as trec_eval's tie-breaking, with distinct scores ranx cannot reorder."""
    return {
        qid: {doc_id: float(len(scores) - i) for i, doc_id in enumerate(rank_documents(scores))}
        for qid, scores in run.items()
    }


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_parity_with_ranx(seed: int) -> None:
    qrels, run = _random_case(seed)
    assert any(len(set(s.values())) < len(s) for s in run.values()), "the case should contain ties"
    ours = evaluate(run, qrels, RANX_METRICS)
    ours_per_query = evaluate_per_query(run, qrels, RANX_METRICS)

    # ranx sorts ties with an unstable quicksort over insertion order, not by doc id, so it is fed
    # the trec_eval ranking with distinct scores; the metric arithmetic is what is compared.
    ranx_run = RanxRun(_untied(run))
    theirs = ranx_evaluate(RanxQrels(qrels), ranx_run, RANX_METRICS, make_comparable=True)
    assert isinstance(theirs, dict)
    for metric in RANX_METRICS:
        assert ours[metric] == pytest.approx(float(theirs[metric]), abs=1e-6), metric
        for qid in qrels:
            assert ours_per_query[metric][qid] == pytest.approx(
                float(ranx_run.scores[metric][qid]), abs=1e-6
            ), (metric, qid)


@pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")
def test_ranx_counts_queries_without_relevant_docs_we_skip_them() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    run = {"q1": {"a": 1.0}, "q2": {"b": 1.0}}
    assert float(ranx_evaluate(RanxQrels(qrels), RanxRun(run), "recall@10")) == pytest.approx(0.5)
    assert evaluate(run, qrels, ["recall@10"]) == {"recall@10": 1.0}


def test_parity_with_pytrec_eval_on_ties() -> None:
    """Runs only where pytrec_eval (pytrec-eval-terrier) is installed; it is not a dev dependency."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(4)
    measures = {"ndcg_cut.10", "recall.10", "recall.100", "P.5", "success.5"}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    names = {
        "ndcg@10": "ndcg_cut_10",
        "recall@10": "recall_10",
        "recall@100": "recall_100",
        "precision@5": "P_5",
        "hit_rate@5": "success_5",
    }
    ours = evaluate_per_query(run, qrels, list(names))
    for metric, their_name in names.items():
        for qid, result in theirs.items():  # pytrec_eval scores only queries the run has
            assert ours[metric][qid] == pytest.approx(result[their_name], abs=1e-9), (metric, qid)


# --------------------------------------------------------------------------------------------
# percentile
# --------------------------------------------------------------------------------------------


def test_percentile_by_hand() -> None:
    # [1, 2, 3, 4]: p50 sits at position 1.5 -> 2 + 0.5 * (3 - 2) = 2.5
    assert percentile([4, 1, 3, 2], 50) == 2.5
    # p95 of 1..100: position 0.95 * 99 = 94.05 -> 95 + 0.05 * 1 = 95.05
    assert percentile(range(1, 101), 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0
    assert percentile([1, 5], 0) == 1
    assert percentile([1, 5], 100) == 5


def test_percentile_matches_numpy() -> None:
    rng = random.Random(5)
    for _ in range(50):
        values = [rng.uniform(0, 100) for _ in range(rng.randint(1, 40))]
        for p in (0, 1, 50, 90, 95, 99, 100):
            assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)))


def test_percentile_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
    with pytest.raises(ValueError, match="within"):
        percentile([1.0], 101)


# --------------------------------------------------------------------------------------------
# Answer-level helpers
# --------------------------------------------------------------------------------------------


def test_normalize_answer() -> None:
    assert normalize_answer("  The  Eiffel-Tower, in PARIS! ") == "eiffeltower in paris"
    assert normalize_answer("An apple a day") == "apple day"
    # articles only as whole words
    assert normalize_answer("Theatre anthem") == "theatre anthem"
    assert normalize_answer("...") == ""


def test_exact_match() -> None:
    assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert exact_match("Eiffel Tower in Paris", "Eiffel Tower") == 0.0
    assert exact_match("paris", ["London", "Paris"]) == 1.0
    assert exact_match("paris", []) == 0.0


def test_token_f1_by_hand() -> None:
    # pred tokens: [eiffel, tower, in, paris]; gold: [eiffel, tower]; common = 2
    # precision = 2/4, recall = 2/2, F1 = 2 * 0.5 * 1 / 1.5 = 2/3
    assert token_f1("The Eiffel Tower in Paris", "Eiffel Tower") == pytest.approx(2 / 3)
    # token counts are a bag: pred [a1, a1, b] vs gold [a1, c]: common = 1 -> P = 1/3, R = 1/2, F1 = 0.4
    assert token_f1("a1 a1 b", "a1 c") == pytest.approx(0.4)
    # best over golds
    assert token_f1("paris", ["london", "paris france"]) == pytest.approx(2 / 3)
    assert token_f1("london", "paris") == 0.0
    # SQuAD v2 convention for empty answers
    assert token_f1("the", "") == 1.0
    assert token_f1("", "paris") == 0.0
    assert token_f1("paris", []) == 0.0


def test_contains_any() -> None:
    assert contains_any("It is the Eiffel Tower, in Paris.", ["eiffel tower"])
    assert contains_any("Answer: 42", "42")
    assert not contains_any("a cathedral", ["cat"])  # whole tokens only
    assert not contains_any("anything", ["", "the"])  # golds that normalise to nothing never match
    assert not contains_any("Paris", [])


def test_span_overlap() -> None:
    # half-open spans [start, end)
    assert span_overlap(0, 10, 5, 15)
    assert span_overlap(5, 15, 0, 10)
    assert span_overlap(0, 10, 2, 3)  # containment
    assert not span_overlap(0, 10, 10, 20)  # touching only
    assert not span_overlap(0, 5, 6, 9)
    assert not span_overlap(3, 3, 0, 10)  # empty span
    with pytest.raises(ValueError):
        span_overlap(5, 4, 0, 10)


def test_precision_recall_f1() -> None:
    # tp=3, fp=1, fn=2: P = 3/4, R = 3/5, F1 = 2 * 0.75 * 0.6 / 1.35 = 2/3
    p, r, f = precision_recall_f1(3, 1, 2)
    assert (p, r) == (0.75, 0.6)
    assert f == pytest.approx(2 / 3)
    assert precision_recall_f1(0, 0, 0) == (0.0, 0.0, 0.0)
    assert precision_recall_f1(0, 2, 3) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        precision_recall_f1(-1, 0, 0)


def test_paired_difference_agrees_with_scipy_and_tells_a_real_gap_from_noise() -> None:
    """The sign-flip p-value matches scipy's paired permutation test; a constant gain is certain,
    noise around zero is not, and the bootstrap interval holds the mean."""
    import random

    from scipy import stats

    rng = random.Random(3)
    ours = {f"q{i}": rng.random() for i in range(60)}
    noisy = {q: v + rng.gauss(0.0, 0.2) for q, v in ours.items()}
    better = {q: v + 0.1 for q, v in ours.items()}
    got = paired_difference(ours, noisy, samples=20_000)
    diffs = [noisy[q] - ours[q] for q in sorted(ours)]
    ref = stats.permutation_test(
        (diffs,), lambda d: sum(d) / len(d), permutation_type="samples", n_resamples=20_000, random_state=1
    )
    assert got["p_value"] == pytest.approx(ref.pvalue, abs=0.02)
    assert got["ci95_low"] <= got["mean_difference"] <= got["ci95_high"]
    sure = paired_difference(ours, better, samples=2_000)
    assert sure["mean_difference"] == pytest.approx(0.1)
    assert sure["p_value"] < 0.001 and sure["ci95_low"] == pytest.approx(0.1)
    assert paired_difference(ours, {"q0": 1.0, "other": 0.0})["queries"] == 1
    with pytest.raises(ValueError):
        paired_difference(ours, {"other": 0.0})


# --------------------------------------------------------------------------------------------
# AUROC (eval answers' reader separation; training reports)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scores", "labels", "expected"),
    [
        ([0.9, 0.8, 0.2, 0.1], [1, 1, 0, 0], 1.0),  # every positive above every negative
        ([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0], 0.0),
        ([0.5, 0.5, 0.5, 0.5], [1, 0, 1, 0], 0.5),  # ties count half
        ([0.9, 0.3, 0.6, 0.1], [1, 1, 0, 0], 0.75),  # 3 of the 4 (positive, negative) pairs in order
        ([0.7, 0.7, 0.2], [True, False, False], 0.75),  # one tie, one win
        ([0.2, 0.4], [1, 1], None),  # one class only
        ([], [], None),
    ],
)
def test_auroc_by_hand(scores: list[float], labels: list[int], expected: float | None) -> None:
    assert auroc(scores, labels) == (expected if expected is None else pytest.approx(expected))


def test_auroc_matches_scipys_mann_whitney_u() -> None:
    from scipy.stats import mannwhitneyu

    rng = random.Random(7)
    for _ in range(30):
        n = rng.randint(2, 40)
        labels = [rng.random() < 0.4 for _ in range(n)]
        labels[0], labels[1] = True, False
        scores = [round(rng.random(), 1) for _ in range(n)]  # rounded: many ties
        pos = [s for s, y in zip(scores, labels, strict=True) if y]
        neg = [s for s, y in zip(scores, labels, strict=True) if not y]
        u = mannwhitneyu(pos, neg).statistic
        assert auroc(scores, labels) == pytest.approx(u / (len(pos) * len(neg)))


def test_auroc_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="3 scores for 2 labels"):
        auroc([0.1, 0.2, 0.3], [1, 0])
