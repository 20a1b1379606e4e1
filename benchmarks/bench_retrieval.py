"""Retrieval quality on the full SciFact (or any BEIR folder): every stage, both fusions, latency.

    python benchmarks/bench_retrieval.py                       # SciFact test, the default stack
    python benchmarks/bench_retrieval.py --split train         # the tuning split
    python benchmarks/bench_retrieval.py --beir ../shared/datasets/pubmedqa   # the second set
    python benchmarks/bench_retrieval.py --tune                # refit the learned reranker on train

The first run embeds the corpus (SciFact: 5,183 abstracts, ~13k chunks, 10-30 min on 2 cores) into
a cached index ($CITELINE_EVAL_CACHE or ~/.cache/citeline/eval); later runs reuse it.

``--tune`` collects, for every train query, the fused candidates and their features once, then
fits the learned reranker's weights by coordinate ascent on nDCG@10 and prints them with the
train score of each alternative tried (convex alpha grid, RRF k, single features). Test is
then measured once with ``--weights`` (or after pasting the weights into rerank/learned.py).
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from citeline.eval.datasets import limit_queries, load_dataset
from citeline.eval.metrics import evaluate, ndcg_at_k
from citeline.eval.retrieval_run import (
    DEFAULT_DEPTH,
    documents_by_best_chunk,
    evaluate_retrieval,
    open_eval_index,
)
from citeline.filters import Filter
from citeline.retrieval.fusion import convex_combination, reciprocal_rank_fusion

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def report(args: argparse.Namespace) -> dict[str, Any]:
    dataset = limit_queries(load_dataset(args.beir, args.split), args.limit_queries)
    started = time.perf_counter()
    result = evaluate_retrieval(
        dataset,
        args.beir,
        split=args.split,
        fusion=args.fusion,
        alpha=args.alpha,
        reranker=args.reranker,
        rerank_depth=args.rerank_depth,
        depth=args.depth,
    )
    data = result.to_json()
    data["wall_seconds"] = round(time.perf_counter() - started, 1)
    return data


# --------------------------------------------------------------------------------------------
# Tuning
# --------------------------------------------------------------------------------------------


def sample_queries(dataset: Any, n: int | None) -> Any:
    """A seeded random sample of n queries (the corpus untouched)."""
    import random

    from citeline.eval.beir import BeirDataset

    if not n or n >= len(dataset.queries):
        return dataset
    keep = sorted(random.Random(13).sample(sorted(dataset.queries), n))
    return BeirDataset(
        dataset.corpus, {q: dataset.queries[q] for q in keep}, {q: dataset.qrels[q] for q in keep}
    )


def collect(args: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, dict[str, int]]]:
    """Per query: the chunk lists of both stages and the fused candidates' features."""
    from citeline.rerank.learned import TokenCache, feature_matrix

    dataset = sample_queries(
        limit_queries(load_dataset(args.beir, args.split), args.limit_queries), args.sample
    )
    built = open_eval_index(dataset, args.beir)
    kb, c2d = built.kb, built.chunk_to_doc
    retriever = kb.components.retriever()
    tokens = TokenCache(kb.embedder, max_items=20000) if args.maxsim else None  # type: ignore[arg-type]
    rows = []
    for qid, query in dataset.queries.items():
        r = retriever.retrieve(query, Filter.admin(), k=args.depth, fusion="rrf", rrf_k=60)
        live = retriever.retrieve(
            query, Filter.admin(), k=max(kb.settings.top_k, args.rerank_depth), fusion="rrf", rrf_k=60
        )
        head = live.hits[: args.rerank_depth]
        rows.append(
            {
                "qid": qid,
                "lexical": r.lexical,
                "dense": r.dense,
                "X": feature_matrix(query, head, tokens=tokens),
                "head_docs": [c2d.get(h.chunk.id, "") for h in head],
                "tail_docs": documents_by_best_chunk([h.chunk.id for h in r.hits], c2d),
                "c2d": c2d,
            }
        )
    kb.close()
    return rows, dataset.qrels


def mean_ndcg(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return evaluate(runs, qrels, ["ndcg@10"])["ndcg@10"]


def reranked_ndcg(
    rows: list[dict[str, Any]], qrels: dict[str, dict[str, int]], w: np.ndarray, depth: int | None = None
) -> float:
    """Mean nDCG@10 with the first ``depth`` candidates (all by default) reordered by X @ w."""
    total = 0.0
    for row in rows:
        d = len(row["head_docs"]) if depth is None else depth
        scores = row["X"][:d] @ w
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        head = [row["head_docs"][i] for i in order] + row["head_docs"][d:]
        docs = list(dict.fromkeys(head + row["tail_docs"]))
        total += ndcg_at_k(docs, qrels[row["qid"]], 10)
    return total / len(rows)


GRID = [-1.0, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0]


def fit_weights(
    rows: list[dict[str, Any]], qrels: dict[str, dict[str, int]], n: int, anchor: int, rounds: int
) -> tuple[float, np.ndarray]:
    """Coordinate ascent on mean nDCG@10, the anchor feature's weight fixed at 1 (scale)."""
    w = np.zeros(n)
    w[anchor] = 1.0
    best = reranked_ndcg(rows, qrels, w)
    for _round in range(rounds):
        improved = False
        for i in range(n):
            if i == anchor:
                continue
            for value in GRID:
                trial = w.copy()
                trial[i] = value
                score = reranked_ndcg(rows, qrels, trial)
                if score > best + 1e-4:
                    best, w, improved = score, trial, True
        if not improved:
            break
    return best, w


def tune(args: argparse.Namespace) -> dict[str, Any]:
    from citeline.rerank.learned import FEATURES

    if args.rows and args.rows.is_file():
        with args.rows.open("rb") as f:
            rows, qrels = pickle.load(f)
    else:
        rows, qrels = collect(args)
        if args.rows:
            with args.rows.open("wb") as f:
                pickle.dump((rows, qrels), f)
    if args.features:
        keep = [FEATURES.index(f) for f in args.features.split(",")]
        mask = np.zeros(len(FEATURES))
        mask[keep] = 1.0
        for row in rows:
            row["X"] = row["X"] * mask
    c2d = rows[0]["c2d"]
    out: dict[str, Any] = {"queries": len(rows), "split": args.split}

    def doc_run(lists: dict[str, list[str]]) -> float:
        return mean_ndcg(lists, qrels)

    out["bm25"] = doc_run(
        {r["qid"]: documents_by_best_chunk([c for c, _ in r["lexical"]], c2d) for r in rows}
    )
    out["dense"] = doc_run({r["qid"]: documents_by_best_chunk([c for c, _ in r["dense"]], c2d) for r in rows})
    for k in (10, 30, 60, 100):
        out[f"rrf_k{k}"] = doc_run(
            {
                r["qid"]: documents_by_best_chunk(
                    [
                        c
                        for c, _ in reciprocal_rank_fusion(
                            [[c for c, _ in r["lexical"]], [c for c, _ in r["dense"]]], k
                        )
                    ],
                    c2d,
                )
                for r in rows
            }
        )
    for alpha in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"convex_{alpha}"] = doc_run(
            {
                r["qid"]: documents_by_best_chunk(
                    [c for c, _ in convex_combination(dict(r["lexical"]), dict(r["dense"]), alpha)], c2d
                )
                for r in rows
            }
        )
    for i, name in enumerate(FEATURES):
        if name == "maxsim" and not args.maxsim:
            continue
        w = np.zeros(len(FEATURES))
        w[i] = 1.0
        out[f"feature_{name}_alone"] = reranked_ndcg(rows, qrels, w)

    fit = fit_weights(rows, qrels, len(FEATURES), FEATURES.index("rrf"), args.rounds)
    best, w = fit
    out["start"] = reranked_ndcg(rows, qrels, np.eye(len(FEATURES))[FEATURES.index("rrf")])
    # Two-fold check of the fit itself: fit on one half of the queries, score the other half.
    halves = [rows[0::2], rows[1::2]]
    held_out = []
    for i in (0, 1):
        _, wi = fit_weights(halves[i], qrels, len(FEATURES), FEATURES.index("rrf"), args.rounds)
        held_out.append(reranked_ndcg(halves[1 - i], qrels, wi))
        held_out.append(reranked_ndcg(halves[1 - i], qrels, np.eye(len(FEATURES))[FEATURES.index("rrf")]))
    out["two_fold_fitted_vs_rrf"] = [round(x, 4) for x in held_out]
    out["fitted"] = best
    out["fitted_at_depth"] = {d: reranked_ndcg(rows, qrels, w, d) for d in (10, 20, 30)}
    out["weights"] = {name: float(v) for name, v in zip(FEATURES, w, strict=True) if v != 0.0}
    return out


def model_features(args: argparse.Namespace) -> dict[str, Any]:
    """Candidates that need the encoder at query time, on the first --limit-queries queries only:
    late-interaction MaxSim over the embedder's token vectors, and the best sentence's cosine."""
    from citeline.eval.metrics import ndcg_at_k
    from citeline.rerank.learned import FEATURES
    from citeline.text.sentences import sentence_spans

    dataset = limit_queries(load_dataset(args.beir, args.split), args.limit_queries)
    built = open_eval_index(dataset, args.beir)
    kb, c2d = built.kb, built.chunk_to_doc
    embedder: Any = kb.embedder
    retriever = kb.components.retriever()
    from citeline.rerank.learned import feature_matrix

    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for qid, query in dataset.queries.items():
        r = retriever.retrieve(query, Filter.admin(), k=args.depth, fusion="rrf", rrf_k=60)
        live = retriever.retrieve(
            query, Filter.admin(), k=max(kb.settings.top_k, args.rerank_depth), fusion="rrf", rrf_k=60
        )
        head = live.hits[: args.rerank_depth]
        texts = [h.chunk.index_text for h in head]
        q_tokens = embedder.token_vectors([query])[0]
        maxsim = [float((q_tokens @ d.T).max(axis=1).mean()) for d in embedder.token_vectors(texts)]
        q_vec = r.query_vector
        sent_best = []
        for h in head:
            spans = sentence_spans(h.chunk.text, 0, len(h.chunk.text))
            vecs = embedder.embed([h.chunk.text[a:b] for a, b in spans] or [h.chunk.text])
            sent_best.append(float((vecs @ q_vec).max()))
        rows.append(
            {
                "qid": qid,
                "X": feature_matrix(query, head),
                "maxsim": np.array(maxsim),
                "sentence": np.array(sent_best),
                "head_docs": [c2d.get(h.chunk.id, "") for h in head],
                "tail_docs": documents_by_best_chunk([h.chunk.id for h in r.hits], c2d),
            }
        )
    seconds = time.perf_counter() - started
    kb.close()
    qrels = dataset.qrels
    rrf_col = FEATURES.index("rrf")

    def ndcg(score_fn: Any) -> float:
        total = 0.0
        for row in rows:
            scores = score_fn(row)
            order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            docs = list(dict.fromkeys([row["head_docs"][i] for i in order] + row["tail_docs"]))
            total += ndcg_at_k(docs, qrels[row["qid"]], 10)
        return total / len(rows)

    def z(v: np.ndarray) -> np.ndarray:
        return (v - v.max()) if len(v) else v

    out: dict[str, Any] = {"queries": len(rows), "seconds_per_query": round(seconds / len(rows), 3)}
    out["rrf"] = ndcg(lambda row: row["X"][:, rrf_col])
    for name in ("maxsim", "sentence"):
        out[f"{name}_alone"] = ndcg(lambda row, n=name: row[n])
        for wgt in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0):
            out[f"rrf+{wgt}*{name}"] = ndcg(lambda row, n=name, w=wgt: row["X"][:, rrf_col] + w * z(row[n]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--beir", type=Path, default=SHARED / "scifact")
    parser.add_argument("--split", default=None, help="default: test (train with --tune)")
    parser.add_argument("--limit-queries", type=int)
    parser.add_argument("--fusion", default="rrf")
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--reranker", default=None, help="default: rerank.DEFAULT_RERANKER")
    parser.add_argument("--rerank-depth", type=int, default=30)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH)
    parser.add_argument("--tune", action="store_true")
    parser.add_argument("--model-features", action="store_true", help="measure MaxSim and sentence features")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--maxsim", action="store_true", help="--tune: include the MaxSim feature (slow)")
    parser.add_argument("--rows", type=Path, help="--tune: keep the collected features in this file")
    parser.add_argument("--features", help="--tune: fit only these features (comma-separated)")
    parser.add_argument("--sample", type=int, help="--tune: a seeded random sample of N queries")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    if not args.beir.is_dir():
        print(f"No dataset at {args.beir}; pass --beir DIR.", file=sys.stderr)
        sys.exit(2)
    args.split = args.split or ("train" if args.tune or args.model_features else "test")
    if args.reranker is None:
        from citeline.rerank import DEFAULT_RERANKER

        args.reranker = DEFAULT_RERANKER
    mode = model_features if args.model_features else tune if args.tune else report
    data = mode(args)
    text = json.dumps(data, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
