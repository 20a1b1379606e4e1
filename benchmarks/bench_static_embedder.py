"""minilm-static beside minilm-int8: embedding speed and SciFact retrieval quality.

    python benchmarks/bench_static_embedder.py                    # 300 test queries, judged + 500 others
    python benchmarks/bench_static_embedder.py --distractors 4900 # (nearly) the whole corpus: hours of MiniLM
    python benchmarks/bench_static_embedder.py --speed-only

Quality: the seeded SciFact slice of eval/beir.fixed_slice (every test query, every abstract they
judge, ``--distractors`` other abstracts), indexed once per embedder in the evaluation cache (the
same chunks: both count tokens with MiniLM's tokenizer), scored per stage as `citeline eval
retrieval` scores them: nDCG@10 of bm25, dense, fused (RRF) and fused (convex); with the paired
difference of the dense and fused per-query nDCG@10 and a 95% bootstrap interval.

Speed: chunks of that index embedded by a fresh embedder in this process (wall and CPU time, all
threads; the model's loading apart), all of them by minilm-static, the first ``--minilm-chunks``
by minilm-int8. The machine's load average is printed beside them: on a shared machine read CPU
seconds. Writes benchmarks/results/static_embedder.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path
from typing import Any

from citeline.embedding.base import Embedder
from citeline.eval.beir import fixed_slice, load_beir
from citeline.eval.metrics import ndcg_at_k
from citeline.eval.retrieval_run import evaluate_retrieval
from citeline.filters import Filter

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
EMBEDDERS = ("minilm-int8", "minilm-static")
STAGES = ("bm25", "dense", "fused", "fused_convex")


def fresh(spec: str) -> Embedder:
    """A new instance (make_embedder shares one per process, already warm)."""
    from citeline.registry import registry

    embedder: Embedder = registry.create("embedder", spec, None)
    return embedder


def speed(spec: str, texts: list[str]) -> dict[str, float]:
    embedder = fresh(spec)
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts[:1])  # loads the tokenizer and the model
    load_wall, load_cpu = time.perf_counter() - wall, time.process_time() - cpu
    wall, cpu = time.perf_counter(), time.process_time()
    embedder.embed(texts)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "chunks": len(texts),
        "load_s": round(load_wall, 3),
        "load_cpu_s": round(load_cpu, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "chunks_per_s": round(len(texts) / wall, 1),
        "chunks_per_cpu_s": round(len(texts) / cpu, 1),
    }


def per_query(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    return {q: ndcg_at_k(runs.get(q, []), qrels[q], 10) for q in qrels}


def paired(a: dict[str, float], b: dict[str, float], seed: int = 7, rounds: int = 2000) -> dict[str, float]:
    """Mean of b - a over queries and its 95% bootstrap interval."""
    diffs = [b[q] - a[q] for q in a]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(rounds))
    return {
        "mean": round(sum(diffs) / len(diffs), 4),
        "ci95_low": round(means[int(0.025 * rounds)], 4),
        "ci95_high": round(means[int(0.975 * rounds) - 1], 4),
    }


def quality(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    data = fixed_slice(load_beir(args.beir, args.split), args.queries, args.distractors, args.seed)
    reports: dict[str, Any] = {}
    per_stage: dict[str, dict[str, dict[str, float]]] = {}
    texts: list[str] = []
    for spec in EMBEDDERS:
        report = evaluate_retrieval(data, args.beir, split=args.split, embedder=spec, keep_runs=True)
        reports[spec] = report.to_json()
        per_stage[spec] = {s: per_query(report.runs[s], data.qrels) for s in ("dense", "fused")}
        print(
            f"{spec:<14} {report.documents} abstracts, {report.chunks} chunks, built in "
            f"{report.index.get('ingest_seconds')} s: "
            + "  ".join(
                f"{s} {report.stages[s].metrics['ndcg@10']:.4f}" for s in STAGES if s in report.stages
            ),
            flush=True,
        )
        if not texts:
            from citeline.eval.retrieval_run import open_eval_index

            kb = open_eval_index(data, args.beir, embedder=spec).kb
            ids = [c for d in kb.store.documents(Filter.admin()) for c in kb.store.document_chunks(d.id)]
            resolved = kb.store.chunks(ids)
            texts = [resolved[c][0].text for c in ids if c in resolved]
            kb.close()
    differences = {
        stage: paired(per_stage["minilm-int8"][stage], per_stage["minilm-static"][stage])
        for stage in ("dense", "fused")
    }
    return {
        "slice": {"queries": len(data.queries), "documents": len(data.corpus)},
        "reports": reports,
        "static_minus_minilm_ndcg10": differences,
    }, texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", default=str(ROOT.parent / "shared" / "datasets" / "scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--distractors", type=int, default=500)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--minilm-chunks", type=int, default=256, help="chunks timed with minilm-int8")
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--out", default=str(RESULTS / "static_embedder"))
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    result: dict[str, Any] = {"args": vars(args)}
    if args.speed_only:
        data = fixed_slice(load_beir(args.beir, args.split), 50, 300, args.seed)
        # pieces of 120 words, about a chunk each (chunks stay under the 256 tokens both embed whole)
        words = [w for d in data.corpus.values() for w in f"{d.title} {d.text}".split()]
        texts = [" ".join(words[i : i + 120]) for i in range(0, len(words), 120)]
    else:
        result["quality"], texts = quality(args)
    result["speed"] = {
        "minilm-static": speed("minilm-static", texts),
        "minilm-int8": speed("minilm-int8", texts[: args.minilm_chunks]),
    }
    s, m = result["speed"]["minilm-static"], result["speed"]["minilm-int8"]
    result["speed"]["ratio_chunks_per_s"] = round(s["chunks_per_s"] / m["chunks_per_s"], 1)
    result["speed"]["ratio_chunks_per_cpu_s"] = round(s["chunks_per_cpu_s"] / m["chunks_per_cpu_s"], 1)
    result["load_average"] = {"before": round(load_before, 1), "after": round(os.getloadavg()[0], 1)}
    result["cpus"] = len(os.sched_getaffinity(0))
    for spec in ("minilm-static", "minilm-int8"):
        print(f"{spec:<14} {result['speed'][spec]}")
    print(f"load average {result['load_average']}")
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result) + "\n")


def markdown(result: dict[str, Any]) -> str:
    lines = ["# minilm-static beside minilm-int8 (benchmarks/bench_static_embedder.py)", ""]
    q = result.get("quality")
    if q:
        lines += [
            f"SciFact {result['args']['split']}: {q['slice']['queries']} queries over {q['slice']['documents']} "
            f"abstracts (every judged one plus {result['args']['distractors']} others, seed {result['args']['seed']}).",
            "",
            "| embedder | chunks | index built s | " + " | ".join(f"{s} nDCG@10" for s in STAGES) + " |",
            "|---|---|---|" + "---|" * len(STAGES),
        ]
        for spec, r in q["reports"].items():
            cells = [
                f"{r['stages'][s]['metrics']['ndcg@10']:.4f}" if s in r["stages"] else "-" for s in STAGES
            ]
            built = r["index"]["ingest_seconds"] if r["index"].get("built") else "(reused)"
            lines.append(f"| {spec} | {r['chunks']} | {built} | " + " | ".join(cells) + " |")
        lines += ["", "Paired difference, static - MiniLM, per-query nDCG@10 (95% bootstrap interval):", ""]
        for stage, d in q["static_minus_minilm_ndcg10"].items():
            lines.append(f"- {stage}: {d['mean']:+.4f} [{d['ci95_low']:+.4f}, {d['ci95_high']:+.4f}]")
        lines.append("")
    sp = result["speed"]
    lines += [
        f"Embedding speed, {result['cpus']} CPUs, load average {result['load_average']['before']} before and "
        f"{result['load_average']['after']} after (a shared machine: read the CPU columns):",
        "",
        "| embedder | chunks | load s | chunks/s (wall) | chunks per CPU s |",
        "|---|---|---|---|---|",
    ]
    for spec in ("minilm-static", "minilm-int8"):
        r = sp[spec]
        lines.append(
            f"| {spec} | {r['chunks']} | {r['load_s']} | {r['chunks_per_s']} | {r['chunks_per_cpu_s']} |"
        )
    lines += [
        "",
        f"Ratio static / MiniLM: {sp['ratio_chunks_per_s']}x wall, {sp['ratio_chunks_per_cpu_s']}x CPU.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
