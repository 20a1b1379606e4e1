"""Diversity before the final top-n: maximal marginal relevance over chunk vectors.

Overlapping windows of one paragraph should not fill the whole context. By default
(``mmr_lambda`` 1.0) only that is done: the fused order is kept and near-duplicates are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

T = TypeVar("T")

NEAR_DUPLICATE = 0.95


def mmr(
    items: Sequence[T],
    relevance: Sequence[float],
    vectors: npt.NDArray[np.float32],
    n: int,
    lambda_: float = 1.0,
) -> list[int]:
    """Indices of ``n`` items chosen by MMR (Carbonell & Goldstein, 1998).

    ``relevance`` is min-max scaled first so it is comparable with cosine similarity;
    items whose vector is a near-duplicate (cos >= 0.95) of a chosen one are skipped.
    """
    if not items or n <= 0:
        return []
    rel = np.asarray(relevance, dtype=np.float64)
    span = rel.max() - rel.min()
    rel = (rel - rel.min()) / span if span > 0 else np.ones_like(rel)
    sims = vectors @ vectors.T
    chosen: list[int] = [int(np.argmax(rel))]
    candidates = [i for i in range(len(items)) if i != chosen[0]]
    while candidates and len(chosen) < n:
        redundancy = sims[np.ix_(candidates, chosen)].max(axis=1)
        keep = [c for c, r in zip(candidates, redundancy, strict=True) if r < NEAR_DUPLICATE]
        if not keep:
            break
        red = sims[np.ix_(keep, chosen)].max(axis=1)
        scores = lambda_ * rel[keep] - (1 - lambda_) * red
        best = keep[int(np.argmax(scores))]
        chosen.append(best)
        candidates = [c for c in keep if c != best]
    return chosen
