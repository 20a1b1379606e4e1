"""Shared parts of the dataset adapters: the adapted set, stratified slices, staging documents."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from citeline.eval.beir import _seeded_prefix

T = TypeVar("T")


@dataclass
class AdaptedDataset:
    """Documents written to ``docs_dir`` and golden rows whose sources are relative to it."""

    name: str
    docs_dir: Path
    rows: list[dict[str, Any]]
    notes: dict[str, Any] = field(default_factory=dict)


# Helpers


def stratified(
    strata: Mapping[str, Sequence[T]],
    limit: int | None,
    seed: int,
    key: Callable[[T], str],
    shares: Mapping[str, float] | None = None,
) -> dict[str, list[T]]:
    """A seeded slice of each stratum: ``limit`` items split by ``shares`` (default: stratum sizes).

    Quotas use largest remainders, every non-empty stratum gets at least one item when the limit
    allows, and a stratum that runs short hands its spare quota to the others. ``limit=None``
    takes everything (in seeded order).
    """
    rng = random.Random(seed)
    shuffled = {
        name: _seeded_prefix(sorted(items, key=key), len(items), rng) for name, items in strata.items()
    }
    if limit is None:
        return shuffled
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    names = [n for n in strata if strata[n]]
    weights = {n: (shares or {}).get(n, 0.0) if shares else float(len(strata[n])) for n in names}
    total = sum(weights.values()) or 1.0
    raw = {n: limit * weights[n] / total for n in names}
    quota = {n: int(raw[n]) for n in names}
    for n in sorted(names, key=lambda n: raw[n] - quota[n], reverse=True)[: limit - sum(quota.values())]:
        quota[n] += 1
    if limit >= len(names):
        for n in names:
            if quota[n] == 0:
                donor = max(names, key=lambda m: quota[m])
                quota[donor] -= 1
                quota[n] = 1
    spare = sum(max(0, quota[n] - len(strata[n])) for n in names)
    quota = {n: min(quota[n], len(strata[n])) for n in names}
    while spare:
        room = [n for n in names if quota[n] < len(strata[n])]
        if not room:
            break
        for n in room:
            if spare:
                quota[n] += 1
                spare -= 1
    return {n: shuffled[n][: quota.get(n, 0)] for n in strata}


def _fresh_docs(work_dir: str | Path) -> Path:
    docs = Path(work_dir) / "docs"
    if docs.exists():
        shutil.rmtree(docs)
    docs.mkdir(parents=True)
    return docs


def _markdown(title: str, body: str, **front: str) -> str:
    # JSON strings are valid YAML scalars, so any title survives the front matter.
    lines = [f"title: {json.dumps(title, ensure_ascii=False)}"]
    lines += [f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items()]
    return "---\n" + "\n".join(lines) + "\n---\n\n" + body.strip() + "\n"


def _flatten(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _flatten(v)]
    return []
