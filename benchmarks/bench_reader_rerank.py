"""The trained reader as a passage reranker, next to the default late-interaction reranker.

    .venv/bin/python benchmarks/bench_reader_rerank.py [--depth 30]

On the CI's fixed SciFact slice (50 test queries + 300 distractors, seed 13; the reader never saw
SciFact): nDCG@10 of the reranked stage and its p50 latency per query, for each reranker.
Writes benchmarks/results/reader_rerank.json.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from citeline.eval.beir import fixed_slice, load_beir
from citeline.eval.retrieval_run import evaluate_retrieval
from citeline.settings import cache_root

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--dataset", type=Path, default=ROOT.parent / "shared" / "datasets" / "scifact")
    args = parser.parse_args()
    dataset = fixed_slice(load_beir(args.dataset, "test"), 50, 300, 13)
    cache = cache_root() / "eval-slice"
    out: dict[str, object] = {"slice": {"queries": 50, "distractors": 300, "seed": 13}, "depth": args.depth}
    for reranker in ("late-interaction", "reader"):
        report = evaluate_retrieval(
            dataset, args.dataset, cache_root=cache, reranker=reranker, rerank_depth=args.depth
        ).to_json()
        stages = report["stages"]
        out[reranker] = {
            stage: {
                "ndcg@10": round(s["metrics"]["ndcg@10"], 4),
                "p50_ms": s.get("latency_ms", {}).get("p50"),
            }
            for stage, s in stages.items()
        }
        print(reranker, json.dumps(out[reranker]))
    path = ROOT / "benchmarks" / "results" / "reader_rerank.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
