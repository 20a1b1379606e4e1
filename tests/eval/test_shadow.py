"""The swap decision of `reindex --compare` (citeline.eval.shadow.decide), table-driven; the whole
command end to end is in tests/test_reindex.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import citeline
from citeline.errors import CitelineError
from citeline.eval.shadow import compared_reindex, decide


def report(**metrics: float | None) -> dict[str, Any]:
    return {"metrics": {name.replace("_at_", "@"): value for name, value in metrics.items()}}


# (case, old metrics, new metrics, max_drop, the metrics refused worst first, metrics compared)
DECISIONS: list[tuple[str, dict[str, Any], dict[str, Any], float, list[str], int]] = [
    ("identical", report(recall_at_5=0.9, token_f1=0.5), report(recall_at_5=0.9, token_f1=0.5), 0.02, [], 2),
    ("better everywhere", report(recall_at_5=0.8), report(recall_at_5=0.95), 0.0, [], 1),
    ("drop within the allowance", report(recall_at_5=0.90), report(recall_at_5=0.89), 0.02, [], 1),
    ("drop exactly the allowance", report(recall_at_5=0.90), report(recall_at_5=0.88), 0.02, [], 1),
    ("drop past the allowance", report(recall_at_5=0.90), report(recall_at_5=0.87), 0.02, ["recall@5"], 1),
    ("any drop at max_drop 0", report(token_f1=0.500), report(token_f1=0.499), 0.0, ["token_f1"], 1),
    ("loose allowance", report(refusal_recall=1.0), report(refusal_recall=0.4), 1.0, [], 1),
    # lower is better: a rise is the drop
    ("false refusals rise", report(false_refusal_rate=0.10), report(false_refusal_rate=0.15), 0.02,
     ["false_refusal_rate"], 1),
    ("false refusals fall", report(false_refusal_rate=0.15), report(false_refusal_rate=0.05), 0.02, [], 1),
    # not compared: untracked, or no value on one side
    ("untracked metric", report(something_else=0.9), report(something_else=0.1), 0.02, [], 0),
    ("no value before", report(judge_support=None), report(judge_support=0.2), 0.02, [], 0),
    ("no value after", report(hit_rate_at_5=0.9), report(hit_rate_at_5=None), 0.02, [], 0),
    ("worst first", report(recall_at_5=0.9, refusal_f1=0.9, citation_f1=0.9),
     report(recall_at_5=0.85, refusal_f1=0.5, citation_f1=0.8), 0.02,
     ["refusal_f1", "citation_f1", "recall@5"], 3),
]  # fmt: skip


@pytest.mark.parametrize(
    ("old", "new", "max_drop", "refused", "compared"),
    [case[1:] for case in DECISIONS],
    ids=[case[0] for case in DECISIONS],
)
def test_decide(
    old: dict[str, Any], new: dict[str, Any], max_drop: float, refused: list[str], compared: int
) -> None:
    decision = decide(old, new, max_drop)
    assert [d.metric for d in decision.drops] == refused
    assert decision.accepted is (not refused)
    assert decision.compared == compared
    for d in decision.drops:
        assert d.drop > max_drop
        assert (d.old, d.new) == (old["metrics"][d.metric], new["metrics"][d.metric])


def test_a_negative_max_drop_is_refused() -> None:
    with pytest.raises(CitelineError, match="max-drop"):
        decide(report(token_f1=0.5), report(token_f1=0.5), -0.1)


# (case, new metrics, what the message must say)
MESSAGES = [
    (
        "one metric, with both figures and the allowance",
        report(recall_at_5=0.70, token_f1=0.9),
        [
            "'fast' refused (--max-drop): 1 metric got worse by more than 0.05: "
            "recall@5 0.900 -> 0.700 (worse by 0.200). The index keeps 'slow'"
        ],
    ),
    (
        "the worst three, then a count",
        report(recall_at_5=0.1, token_f1=0.2, refusal_f1=0.3, citation_f1=0.4, exact_match=0.5),
        [
            "recall@5 0.900 -> 0.100",
            "token_f1 0.900 -> 0.200",
            "refusal_f1 0.900 -> 0.300",
            "5 metrics got worse",
            "and 2 more.",
        ],
    ),
]


@pytest.mark.parametrize(("new", "said"), [m[1:] for m in MESSAGES], ids=[m[0] for m in MESSAGES])
def test_refusal_message_names_the_metrics_and_figures(new: dict[str, Any], said: list[str]) -> None:
    old = {"metrics": dict.fromkeys(new["metrics"], 0.9)}
    decision = decide(old, new, 0.05)
    message = decision.message("slow", "fast")
    for part in said:
        assert part in message
    assert "--force: swapped to 'fast' although " in decision.message("slow", "fast", forced=True)


def test_accepted_message_counts_the_metrics_compared() -> None:
    decision = decide(report(token_f1=0.5, recall_at_5=0.8), report(token_f1=0.5, recall_at_5=0.81), 0.02)
    assert decision.message("slow", "fast") == (
        "No metric of 2 got worse by more than 0.02 with 'fast' (against 'slow')."
    )


def test_an_empty_question_set_is_refused_before_anything_is_embedded(tmp_path: Path, docs_dir: Path) -> None:
    kb = citeline.open(tmp_path / "idx")
    kb.add([docs_dir])
    with pytest.raises(CitelineError, match="holds no question"):
        compared_reindex(kb, "hashing", [])
    info = kb.store.embedder_info()
    assert info is not None and info.name == "minilm-int8"
    assert kb.store.cached_vectors([h for h, _ in kb.store.all_text_hashes()], embedder="hashing") == {}
    kb.close()
