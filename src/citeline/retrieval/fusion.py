"""Pure functions that merge ranked lists from several retrieval stages."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[K]], k: int = RRF_K) -> list[tuple[K, float]]:
    """Cormack et al. (2009): score(d) = sum over lists of 1 / (k + rank(d)), rank 1-based.

    Ties are broken by first appearance, so the result is deterministic.
    """
    scores: dict[K, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    order = {key: i for i, key in enumerate(dict.fromkeys(key for r in rankings for key in r))}
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def min_max(scores: Mapping[K, float]) -> dict[K, float]:
    """Scale scores to [0, 1]; a list of equal scores maps to 1.0."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return {key: 1.0 for key in scores}
    return {key: (s - lo) / (hi - lo) for key, s in scores.items()}


def convex_combination(
    lexical: Mapping[K, float], dense: Mapping[K, float], alpha: float = 0.5
) -> list[tuple[K, float]]:
    """alpha * minmax(dense) + (1 - alpha) * minmax(lexical); missing scores count as 0."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within [0, 1], got {alpha}")
    lex, den = min_max(lexical), min_max(dense)
    keys = list(dict.fromkeys([*dense.keys(), *lexical.keys()]))
    fused = {key: alpha * den.get(key, 0.0) + (1.0 - alpha) * lex.get(key, 0.0) for key in keys}
    return sorted(fused.items(), key=lambda kv: -kv[1])


def lift_exact(ranked: Sequence[K], mentions: Mapping[K, bool]) -> list[K]:
    """``ranked`` with the items that mention the question's exact identifier first, each group
    in its own order: an error code ("40P01") or a constant names one row of one table, and a
    chunk that holds it is the candidate whatever the dense side thought of the rest."""
    return [key for key in ranked if mentions.get(key)] + [key for key in ranked if not mentions.get(key)]
