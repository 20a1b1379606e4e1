"""Baselines: which metrics are tracked, regressions against a baseline, and report comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Tracked metrics and whether higher is better (used by the baseline check and `compare`).
# Names with a cutoff are tracked by their base: "hit_rate@5" -> "hit_rate".
TRACKED: dict[str, bool] = {
    "hit_rate": True,
    "recall": True,
    "context_hit_rate": True,
    "exact_match": True,
    "token_f1": True,
    "answer_contains": True,
    "first_sentence_contains": True,
    "fragment_openings": False,
    "citation_precision": True,
    "citation_recall": True,
    "citation_f1": True,
    "refusal_precision": True,
    "refusal_recall": True,
    "refusal_f1": True,
    "false_refusal_rate": False,
    "reader_separation": True,
    "relevance_separation": True,
    "faithfulness": True,
    "judge_support": True,
}


def higher_is_better(name: str) -> bool | None:
    """True/False for a tracked metric (by its base name before '@'), None if untracked."""
    return TRACKED.get(name.split("@", 1)[0])


def regressions(
    current: Mapping[str, Any], baseline: Mapping[str, Any], max_drop: float = 0.02
) -> list[dict[str, Any]]:
    """Tracked metrics that got worse by more than max_drop (absolute) against the baseline.

    A metric missing or None on either side is not compared (see `deltas` for the full picture).
    """
    out = []
    for name, new in current["metrics"].items():
        higher = higher_is_better(name)
        old = baseline.get("metrics", {}).get(name)
        if higher is None or new is None or old is None:
            continue
        drop = (old - new) if higher else (new - old)
        if drop > max_drop + 1e-12:
            out.append({"metric": name, "baseline": old, "current": new, "drop": drop})
    return out


def deltas(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Metric-by-metric comparison of two reports (b - a), with whether the change is better."""
    out = []
    ma, mb = a.get("metrics", {}), b.get("metrics", {})
    for name in list(dict.fromkeys([*ma, *mb])):
        x, y = ma.get(name), mb.get(name)
        delta = None if x is None or y is None else y - x
        higher = higher_is_better(name) is not False
        better = None if delta is None or abs(delta) < 1e-12 else (delta > 0) == higher
        out.append({"metric": name, "a": x, "b": y, "delta": delta, "better": better})
    for name in ("p50", "p95"):
        x, y = a.get("latency_ms", {}).get(name), b.get("latency_ms", {}).get(name)
        delta = None if x is None or y is None else y - x
        better = None if delta is None or abs(delta) < 1e-9 else delta < 0
        out.append({"metric": f"latency_{name}_ms", "a": x, "b": y, "delta": delta, "better": better})
    return out
