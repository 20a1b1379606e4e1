"""Paired comparison of two answers reports: which questions got better or worse, and whether that
many flips could be chance.

Two runs over the same questions differ question by question; a change of 0.04 in a rate over 49
questions is two answers, which noise alone often gives. For each per-question outcome, the
questions where it flipped are counted both ways and an exact two-sided sign test (McNemar's exact
test) says how likely at least that imbalance is when neither run is better.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import comb
from typing import Any

Row = Mapping[str, Any]


def _contains(r: Row) -> bool | None:
    return bool((r.get("correctness") or {}).get("contains")) if r.get("answerable") else None


def _first_contains(r: Row) -> bool | None:
    value = (r.get("correctness") or {}).get("first_contains")
    return None if not r.get("answerable") or value is None else bool(value)


def _refused_unanswerable(r: Row) -> bool | None:
    return bool(r.get("refused")) if r.get("answerable") is False else None


def _answered_answerable(r: Row) -> bool | None:
    return not r.get("refused") if r.get("answerable") else None


def _evidence_in_context(r: Row) -> bool | None:
    value = (r.get("retrieval") or {}).get("evidence_in_context")
    return None if value is None else bool(value)


#: per-question outcomes, each True when good; None where it does not apply (an unanswerable
#: question has no gold answer to contain)
OUTCOMES: dict[str, Callable[[Row], bool | None]] = {
    "answer_contains": _contains,
    "first_sentence_contains": _first_contains,
    "refused_unanswerable": _refused_unanswerable,
    "answered_answerable": _answered_answerable,
    "evidence_in_context": _evidence_in_context,
}


@dataclass(frozen=True)
class PairedOutcome:
    outcome: str
    #: questions in both reports where the outcome applies
    paired: int
    b_better: int
    b_worse: int

    @property
    def p_value(self) -> float:
        return sign_test(self.b_better, self.b_worse)


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test: the chance of a split at least this uneven among ``wins +
    losses`` flips when each way is equally likely (1.0 with no flips)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(comb(n, i) for i in range(k + 1)) / float(1 << n)
    return min(1.0, 2 * tail)


def paired_outcomes(rows_a: Sequence[Row], rows_b: Sequence[Row]) -> list[PairedOutcome]:
    """Each outcome over the questions both reports hold (matched by id)."""
    by_id = {r["id"]: r for r in rows_a if r.get("id") is not None}
    pairs = [(by_id[r["id"]], r) for r in rows_b if r.get("id") in by_id]
    out = []
    for name, outcome in OUTCOMES.items():
        better = worse = paired = 0
        for a, b in pairs:
            x, y = outcome(a), outcome(b)
            if x is None or y is None:
                continue
            paired += 1
            better += y and not x
            worse += x and not y
        out.append(PairedOutcome(name, paired, better, worse))
    return out
