"""The embedded store's derived engines (tantivy + faiss IVF) beside FTS5 + the exact matrix
(`make bench-engines`).

Run: .venv/bin/python benchmarks/bench_engines.py [--chunks 100000] [--real 10000] [--queries 200]
Writes benchmarks/results/bench_engines.json and .md. Needs ../shared/datasets/scifact and pubmedqa.
1M chunks: --chunks 1000000 (about 50 minutes on 2 cores: writes ~25 min, engine build, queries).

* Corpus and vectors: benchmarks/bench_pg.py's (imported): real SciFact/PubMedQA text in 3-sentence
  windows, 10 chunks per document; the first ``--real`` chunks carry their real MiniLM vectors, the
  rest a real vector plus Gaussian noise (sigma 0.05 per dimension), renormalised: "synthetic
  vectors" in the results. Documents carry tags s0.1, s1, s10, s50 on 0.1%, 1%, 10%, 50% of them.
* The index is written through the Store API (``replace_documents``, 50 documents a batch) with the
  default settings, so the engines switch on by themselves at ``engine_min_chunks``; the first
  search after the load brings them up to date (timed: "catch-up").
* Queries: SciFact test claims, embedded beforehand (embedding is left out of every figure).
  keyword = ``keyword_search`` top-30, dense = ``vector_search`` top-30, hybrid = both + RRF + the
  30 chunks read back (bench_pg.hybrid), for the admin with a tag filter at each selectivity.
  The baseline is the same index opened with the engines off (FTS5 + exact NumPy).
* recall@10: the engines' dense top-10 against the exact top-10 of the same filter (ties counted); keyword
  agreement@10: tantivy's top-10 against FTS5's (different stemmers and idf, not a recall).
* Each store answers every query once unmeasured first, hybrid (the engines) or 5 of them (FTS5 + exact):
  the index's pages are in memory. The first query of each filter reads the allowed rowids (and,
  below engine_exact_rows, their vectors) from SQLite, cached per filter and index generation:
  "first query" reports that query, before the warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pg import DATASETS, RESULTS, corpus, documents, hybrid, vectors

from citeline.eval.metrics import percentile
from citeline.filters import Filter, Principal
from citeline.query.analysis import analyze
from citeline.settings import Settings, cache_root
from citeline.wiring import open_store

SELECTIVITY = (None, 0.1, 1, 10, 50)  # percent of documents (and chunks) a filter lets through


def tags_for(i: int) -> dict[str, str]:
    return {f"s{p}": "1" for p in SELECTIVITY[1:] if p is not None and i % 1000 < p * 10}


def flt_for(p: float | None) -> Filter:
    if p is None:
        return Filter.admin()
    return Filter(principal=Principal.local_admin(), tags={f"s{p}": "1"})


def timed(fn: Any, queries: list[Any]) -> tuple[tuple[list[float], list[float]], list[Any], float]:
    """Per-query wall and CPU milliseconds (the first query left out and reported apart), and the
    results. Every engine here runs a query on one thread, so CPU time is what the query would
    take on an idle machine; wall time includes waiting for the cores other jobs hold."""
    wall, cpu, out, first = [], [], [], 0.0
    for i, q in enumerate(queries):
        t, c = time.perf_counter(), time.process_time()
        out.append(fn(q))
        ms, cms = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
        if i == 0:
            first = ms
        else:
            wall.append(ms)
            cpu.append(cms)
    return (wall, cpu), out, first


def stats(times: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = times
    return {
        "p50_ms": round(percentile(wall, 50), 2),
        "p95_ms": round(percentile(wall, 95), 2),
        "cpu_p50_ms": round(percentile(cpu, 50), 2),
        "cpu_p95_ms": round(percentile(cpu, 95), 2),
    }


def overlap(a: list[list[str]], b: list[list[str]], k: int = 10) -> float:
    pairs = [(x[:k], y[:k]) for x, y in zip(a, b, strict=True) if y]
    return round(float(np.mean([len(set(x) & set(y)) / len(y) for x, y in pairs])), 3) if pairs else 1.0


def recall(got: list[list[tuple[str, float]]], exact: list[list[tuple[str, float]]], k: int = 10) -> float:
    """recall@k against exact search, ties counted: a hit scoring at least the exact k-th score is
    right (the corpus repeats its texts past ~50k chunks, and equal texts share one vector)."""
    out = []
    for g, e in zip(got, exact, strict=True):
        if e:
            floor = e[min(k, len(e)) - 1][1] - 1e-5
            out.append(min(1.0, sum(1 for _, s in g[:k] if s >= floor) / min(k, len(e))))
    return round(float(np.mean(out)), 3) if out else 1.0


def measure(store: Any, queries: list[Any], qvecs: np.ndarray, p: float | None, warm: int) -> dict[str, Any]:
    flt = flt_for(p)
    pairs = list(zip(queries, qvecs, strict=True))
    first = 0.0
    for i, (q, v) in enumerate(pairs[:warm]):  # the index's pages into memory, the slice cached
        t = time.perf_counter()
        hybrid(store, q, v, flt)  # the hits' chunk and document rows too, not only the engines
        first = first or (time.perf_counter() - t) * 1000 if i == 0 else first
    kw_t, kw, _ = timed(lambda q: [c for c, _ in store.keyword_search(q[0], flt, 30)], pairs)
    de_t, de, _ = timed(lambda q: store.vector_search(q[1], flt, 30), pairs)
    hy_t, _, _ = timed(lambda q: hybrid(store, q[0], q[1], flt), pairs)
    return {
        "keyword": stats(kw_t),
        "dense": stats(de_t),
        "hybrid": stats(hy_t),
        "first_query_ms": round(first, 1),
        "_keyword": kw,
        "_dense": de,
    }


def sweep(store: Any, base: Any, qvecs: np.ndarray, settings: Settings) -> list[dict[str, Any]]:
    """Unfiltered dense recall@10 and CPU p50 by IVF lists probed (the measurement behind
    engine_nprobe)."""
    from citeline.index.sqlite.engines import EngineSettings

    exact = [base.vector_search(v, Filter.admin(), 10) for v in qvecs]
    rows = []
    for nprobe in (8, 16, 32, 64, 128):
        store._engines.settings = EngineSettings(0, settings.engine_exact_rows, nprobe)
        times, got = timed(lambda v: store.vector_search(v, Filter.admin(), 10), list(qvecs))[:2]
        rows.append(
            {"nprobe": nprobe, "cpu_p50_ms": stats(times)["cpu_p50_ms"], "recall@10": recall(got, exact)}
        )
    store._engines.settings = EngineSettings(0, settings.engine_exact_rows, settings.engine_nprobe)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=10_000, help="chunks with their real vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--baseline-queries", type=int, default=100, help="queries for FTS5 + exact")
    parser.add_argument(
        "--engine-min-chunks",
        type=int,
        default=0,
        help="engine_min_chunks of the measured store (default 0: engines from the first write, to "
        "compare them with FTS5 + exact at any size; the default setting is reported beside)",
    )
    parser.add_argument("--keep", type=Path, help="build the index here and keep it (default: a temp folder)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --keep: measure the index already there (built by an earlier run with the same "
        "--chunks; its write time is taken from --out's JSON)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_engines")
    args = parser.parse_args()
    if not (DATASETS / "scifact").is_dir():
        sys.exit(f"needs {DATASETS / 'scifact'}")
    from citeline.embedding import make_embedder

    chunks = corpus(args.chunks)
    vecs = vectors(chunks, min(args.real, len(chunks)), cache_root() / "bench")
    writes = documents(chunks, vecs)
    for i, w in enumerate(writes):
        w.document.tags.clear()
        w.document.tags.update(tags_for(i))
    claims = [json.loads(line) for line in (DATASETS / "scifact" / "queries.jsonl").open()]
    qrels = {
        line.split()[0] for line in (DATASETS / "scifact" / "qrels" / "test.tsv").open() if line[:1].isdigit()
    }
    texts = [q["text"] for q in claims if q["_id"] in qrels][: args.queries]
    queries = [analyze(t) for t in texts]
    qvecs = make_embedder("minilm-int8").embed(texts).astype(np.float32)
    settings = Settings()
    result: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs",
        "loadavg_before": os.getloadavg(),
        "chunks": len(chunks),
        "real_vectors": min(args.real, len(chunks)),
        "synthetic_vectors": "chunks beyond the real ones: a real vector + N(0, 0.05^2) per dimension, renormalised",
        "queries": len(queries),
        "baseline_queries": min(args.baseline_queries, len(queries)),
        "settings": {
            "engine_min_chunks": settings.engine_min_chunks,
            "engine_exact_rows": settings.engine_exact_rows,
            "engine_nprobe": settings.engine_nprobe,
        },
        "rows": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as tmp:
        location = str(args.keep or Path(tmp) / "index")
        store = open_store(location)
        store.configure(settings.replace(engine_min_chunks=args.engine_min_chunks))
        # the model's own name and version: the kept index answers `citeline search` (bench_scale --index)
        model = make_embedder("minilm-int8")
        store.bind_embedder(model.name, model.version, vecs.shape[1])
        t = time.perf_counter()
        if args.reuse and store.count_chunks(Filter.admin()) == len(chunks):
            previous = json.loads(args.out.with_suffix(".json").read_text(encoding="utf-8"))
            result["write_s"], result["reused"] = previous["write_s"], str(location)
        else:
            for lo in range(0, len(writes), 50):
                store.replace_documents(writes[lo : lo + 50])
            result["write_s"] = round(time.perf_counter() - t, 1)
        result["write_chunks_per_s"] = round(len(chunks) / result["write_s"])
        t = time.perf_counter()
        store.keyword_search("warm", Filter.admin(), 1)
        result["catch_up_s"] = round(time.perf_counter() - t, 1)
        folder = Path(location) / "engines"
        result["engine_bytes"] = (
            sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) if folder.exists() else 0
        )
        result["engines_used"] = store._engines.wanted(store.conn, int(store.meta("generation") or 0))
        base = open_store(location)
        base.configure(settings.replace(engine_min_chunks=10**12))
        nb = result["baseline_queries"]
        for p in SELECTIVITY:
            row: dict[str, Any] = {"selectivity_pct": p if p is not None else 100}
            eng = measure(store, queries, qvecs, p, len(queries))
            ref = measure(base, queries[:nb], qvecs[:nb], p, 5)
            row["engines"] = {k: v for k, v in eng.items() if not k.startswith("_")}
            row["fts5_exact"] = {k: v for k, v in ref.items() if not k.startswith("_")}
            row["dense_recall@10"] = recall(eng["_dense"][:nb], ref["_dense"])
            row["keyword_agreement@10"] = overlap(eng["_keyword"][:nb], ref["_keyword"])
            result["rows"].append(row)
            print(json.dumps(row), flush=True)
        result["nprobe"] = sweep(store, base, qvecs[:nb], settings)
        print(json.dumps(result["nprobe"]), flush=True)
        base.close()
        store.close()
    result["loadavg_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    print(table)


def _cell(x: dict[str, float]) -> str:
    return f"{x['cpu_p50_ms']} / {x['cpu_p95_ms']} ({x['p50_ms']} / {x['p95_ms']})"


def _load(result: dict[str, Any]) -> str:
    """The 1-minute load average before and after the run (older results did not record it)."""
    if "loadavg_before" not in result:
        return "not recorded (a machine shared with other jobs)"
    return f"{result['loadavg_before'][0]:.1f} before, {result.get('loadavg_after', [float('nan')])[0]:.1f} after"


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Machine: {result['machine']}, load average {_load(result)}. Corpus: {result['chunks']:,} chunks of real text "
        f"({result['real_vectors']:,} real MiniLM vectors, the rest synthetic: a real vector plus Gaussian "
        "noise, renormalised). Written through the Store API in "
        f"{result['write_s']} s ({result['write_chunks_per_s']:,} chunks/s, engines maintained while "
        f"writing); first search {result['catch_up_s']} s; engine files {result['engine_bytes'] / 1e6:.0f} MB. "
        f"{result['queries']} SciFact claims ({result['baseline_queries']} for FTS5 + exact), top-30, query "
        f"embedding excluded. Cells: CPU p50 / p95 ms (wall p50 / p95 ms); "
        f"settings {result['settings']}.",
        "",
        "| filter lets through | engines keyword | engines dense | engines hybrid | first query wall ms | FTS5 keyword | exact dense | FTS5+exact hybrid | dense recall@10 | keyword agreement@10 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        e, b = row["engines"], row["fts5_exact"]
        lines.append(
            f"| {row['selectivity_pct']}% | {_cell(e['keyword'])} | {_cell(e['dense'])} | {_cell(e['hybrid'])} | "
            f"{e['first_query_ms']} | {_cell(b['keyword'])} | {_cell(b['dense'])} | {_cell(b['hybrid'])} | "
            f"{row['dense_recall@10']} | {row['keyword_agreement@10']} |"
        )
    lines += [
        "",
        "Unfiltered dense search by IVF lists probed:",
        "",
        "| nprobe | CPU p50 ms | recall@10 |",
        "|---|---|---|",
    ]
    lines += [f"| {r['nprobe']} | {r['cpu_p50_ms']} | {r['recall@10']} |" for r in result.get("nprobe", [])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
