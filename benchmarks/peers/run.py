"""citeline beside LlamaIndex and Haystack in one run: same embedder, same chunks, same queries.

    make bench-peers                                       # 1,000 SciFact documents, 300 test queries
    make bench-peers PEERS_ARGS="--docs 5183"              # the whole corpus (~75 min on 2 cores)
    .venv/bin/python benchmarks/peers/run.py --docs 300 --queries 50 --tools citeline,haystack

Runs in citeline's environment; each tool is measured in its own process, one after the other
(citeline first: its chunks are what the peers index), the peers in benchmarks/peers/.venv
(pinned in benchmarks/peers/requirements.txt, configs in benchmarks/peers/*_pipeline.py).

The corpus is a reproducible slice of SciFact (citeline.eval.beir.fixed_slice): every document
judged for the chosen test queries plus seeded random others, up to ``--docs``. Each document is
staged as a Markdown file the way ``citeline eval retrieval`` stages it.

Measured for each tool:
- cold ingest: citeline ``add`` of the folder into a new index (read, parse, chunk, embed, write);
  a peer: its indexing pipeline over citeline's chunks of the same files (embedding included,
  chunking not: the peers get the chunks ready-made).
- re-add: the same again, nothing changed (citeline: content hashes; peers: see their configs),
  three times in a row, the median reported.
- one-file edit: one file gets a sentence appended, then the whole corpus is added again.
- re-add and one-file edit again, each in a new process from start to exit (updates.py;
  ``--skip-updates`` leaves them out).
``--reuse llamaindex`` takes that tool's results from an earlier run in the same ``--work``
(the report's meta names the reused tools), e.g. to measure a change to citeline alone.
- query latency p50/p95 over the test queries (after 3 warm-up queries), hybrid BM25 + dense
  fused by RRF, TOP_K candidates per stage, the query's embedding included for every tool.
- peak RSS of the tool's process; SciFact nDCG@10 on the slice, chunks collapsed to documents by
  their best chunk, scored here by citeline.eval.metrics for all tools alike.
Writes benchmarks/results/peers.json and peers.md; ratios are peer / citeline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from shared import (  # noqa: E402
    EDITED_FILE,
    TOP_K,
    Clock,
    edit_file,
    query_loop,
    same_process_readds,
    text_hash,
    time_embeddings,
)
from tables import markdown, scale_markdown  # noqa: E402

PEERS = ("llamaindex", "haystack")
WARMUP = 3


def stage(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    from citeline.eval.beir import fixed_slice, load_beir
    from citeline.eval.retrieval_run import _staged_markdown

    full = load_beir(args.dataset, "test")
    judged_only = fixed_slice(full, n_queries=args.queries, n_distractors=0)
    extra = max(0, args.docs - len(judged_only.corpus))
    data = fixed_slice(full, n_queries=args.queries, n_distractors=extra)
    corpus = work / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    corpus.mkdir(parents=True)
    for i, (doc_id, doc) in enumerate(data.corpus.items()):
        (corpus / f"d{i:07d}.md").write_text(_staged_markdown(doc_id, doc), encoding="utf-8")
    (work / "queries.json").write_text(json.dumps(data.queries), encoding="utf-8")
    (work / "qrels.json").write_text(json.dumps(data.qrels), encoding="utf-8")
    return {"documents": len(data.corpus), "queries": len(data.queries), "edited_file": EDITED_FILE}


def export_chunks(kb: Any, corpus: Path, only: set[str] | None = None) -> list[dict[str, Any]]:
    """citeline's chunks of each file, in order: what it embeds and keyword-indexes (index_text)."""
    from citeline.filters import Filter

    rows = []
    for doc in kb.store.documents(Filter.admin()):
        name = Path(doc.source).name
        if only is not None and name not in only:
            continue
        beir_id = str(doc.metadata["beir_id"])
        chunks = sorted(
            (c for c, _ in kb.store.chunks(kb.store.document_chunks(doc.id)).values()),
            key=lambda c: c.ordinal,
        )
        text = (corpus / name).read_text(encoding="utf-8")
        rows.append(
            {
                "source": name,
                "beir_id": beir_id,
                "file_hash": text_hash(text),
                "text": text,
                "chunks": [{"key": f"{beir_id}#{c.ordinal}", "text": c.index_text} for c in chunks],
            }
        )
    rows.sort(key=lambda r: r["source"])
    return rows


def citeline_worker(work: Path) -> None:
    """citeline's side, in its own process (like each peer): ingest, re-add, edit, query."""
    from citeline.filters import Filter
    from citeline.kb import open_kb

    corpus = work / "corpus"
    queries: dict[str, str] = json.loads((work / "queries.json").read_text(encoding="utf-8"))
    index = work / "citeline-index"
    if index.exists():
        shutil.rmtree(index)
    t0 = time.perf_counter()
    kb = open_kb(str(index))
    retriever = kb.components.retriever()
    embed_stats = time_embeddings(kb.embedder)
    out: dict[str, Any] = {"tool": "citeline", "versions": {"citeline": "0.1.0 (this branch)"}}
    out["setup_s"] = time.perf_counter() - t0
    load = os.getloadavg()

    def add() -> dict[str, Any]:
        before = embed_stats["seconds"]
        clock = Clock()
        report = kb.add([str(corpus)], root=str(corpus))
        wall, cpu = clock.lap()
        return {
            "seconds": wall,
            "cpu_seconds": cpu,
            "embed_seconds": embed_stats["seconds"] - before,
            "chunks_embedded": report.chunks_embedded,
        }

    out["cold_ingest"] = {**add(), "chunks": kb.store.count_chunks(Filter.admin())}
    rows_all = export_chunks(kb, corpus)
    (work / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows_all), encoding="utf-8")
    out["readd"] = same_process_readds(add)
    original = edit_file(corpus / EDITED_FILE)
    try:
        out["edit"] = {**add(), "chunks": kb.store.count_chunks(Filter.admin())}
        rows = export_chunks(kb, corpus, only={EDITED_FILE})
        (work / "edited.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    finally:  # the peers start from the original corpus and make the same edit themselves
        (corpus / EDITED_FILE).write_text(original, encoding="utf-8")

    beir_of = {r["source"]: r["beir_id"] for r in rows_all}

    degraded: list[str] = []

    def search(q: str) -> list[str]:
        got = retriever.retrieve(q, Filter.admin(), k=TOP_K, rrf_k=kb.settings.rrf_k)
        if got.degraded:
            degraded.append(got.degraded)
        return [f"{beir_of[Path(h.source).name]}#{h.chunk.ordinal}" for h in got.hits]

    out.update(query_loop(search, queries, embed_stats, WARMUP))
    out["degraded_queries"] = degraded
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["loadavg_start"] = load
    out["loadavg_end"] = os.getloadavg()
    kb.close()
    (work / "citeline.json").write_text(json.dumps(out), encoding="utf-8")


def run_tool(tool: str, work: Path, peers_python: Path, scale_queries: int = 0) -> dict[str, Any]:
    extra = ["--scale-queries", str(scale_queries)] if scale_queries else []
    if tool == "citeline":
        cmd = [sys.executable, str(HERE / "run.py"), "--worker", "--work", str(work), *extra]
        # dense_timeout_ms = 0: no latency budget, so that a slow query on this loaded machine is
        # never answered by BM25 alone (every query of every tool is hybrid); counted as degraded
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), CITELINE_DENSE_TIMEOUT_MS="0")
    else:
        cmd = [str(peers_python), str(HERE / "worker.py"), "--tool", tool, "--work", str(work), *extra]
        env = dict(os.environ, HAYSTACK_TELEMETRY_ENABLED="False")  # its documented opt-out: no network here
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    print(f"[peers] {tool}: {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    subprocess.run(["nice", "-n", "5", *cmd], check=True, env=env)
    name = f"{tool}-scale" if scale_queries else tool
    data: dict[str, Any] = json.loads((work / f"{name}.json").read_text(encoding="utf-8"))
    data["process_s"] = time.perf_counter() - t0
    return data


def reused(tool: str, work: Path, scale: bool = False) -> dict[str, Any]:
    """A tool's results as its worker wrote them into ``work`` in an earlier run (--reuse,
    --scale-reuse); how long that worker's process ran was not kept."""
    path = work / f"{tool}-scale.json" if scale else work / f"{tool}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    data.setdefault("process_s", None)
    print(f"[peers] {tool}: results of an earlier run reused ({path})", flush=True)
    return data


def percentile(values: list[float], p: float) -> float:
    from citeline.eval.metrics import percentile as pct

    return pct(values, p)


def documents_run(data: dict[str, Any]) -> dict[str, list[str]]:
    """A tool's ranked chunks collapsed to documents, each at its best chunk's rank."""
    return {qid: list(dict.fromkeys(k.rsplit("#", 1)[0] for k in keys)) for qid, keys in data["runs"].items()}


def score(data: dict[str, Any], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    from citeline.eval.metrics import evaluate

    return evaluate(documents_run(data), qrels, ("ndcg@10", "recall@10"))


def ndcg_against_citeline(
    results: dict[str, dict[str, Any]], qrels: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """Each peer's per-query nDCG@10 minus citeline's: mean, 95% interval, paired test p-value."""
    from citeline.eval.metrics import paired_difference, per_query

    ours = per_query(documents_run(results["citeline"]), qrels, "ndcg@10")
    return {
        tool: paired_difference(ours, per_query(documents_run(d), qrels, "ndcg@10"))
        for tool, d in results.items()
        if tool != "citeline"
    }


RATIO_KEYS = (
    "cold_ingest_s",
    "readd_s",
    "edit_s",
    "query_p50_ms",
    "query_p95_ms",
    "cold_ingest_cpu_s",
    "readd_cpu_s",
    "edit_cpu_s",
    "query_cpu_p50_ms",
    "query_cpu_p95_ms",
    "query_noembed_p50_ms",
    "query_noembed_p95_ms",
    "peak_rss_mb",
    "ndcg@10",
)


def summarise(results: dict[str, dict[str, Any]], qrels: dict[str, dict[str, int]]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for tool, d in results.items():
        lat, cpu = d["query_ms"], d["query_cpu_ms"]
        noembed = [w - e for w, e in zip(lat, d["query_embed_ms"], strict=True)]
        row: dict[str, Any] = {"versions": d["versions"], "chunks": d["cold_ingest"].get("chunks")}
        for phase, name in (("cold_ingest", "cold_ingest"), ("readd", "readd"), ("edit", "edit")):
            row[f"{name}_s"] = d[phase]["seconds"]
            row[f"{name}_cpu_s"] = d[phase]["cpu_seconds"]
            row[f"{name}_embed_s"] = d[phase]["embed_seconds"]
            row[f"{name}_chunks_embedded"] = d[phase].get("chunks_embedded")
        row.update(
            {
                "query_p50_ms": percentile(lat, 50),
                "query_p95_ms": percentile(lat, 95),
                "query_cpu_p50_ms": percentile(cpu, 50),
                "query_cpu_p95_ms": percentile(cpu, 95),
                "query_noembed_p50_ms": percentile(noembed, 50),
                "query_noembed_p95_ms": percentile(noembed, 95),
                "peak_rss_mb": d["peak_rss_mb"],
                "degraded_queries": len(d.get("degraded_queries", [])),
                **score(d, qrels),
                "loadavg_start": d["loadavg_start"],
                "loadavg_end": d["loadavg_end"],
                "process_s": d["process_s"],
            }
        )
        rows[tool] = row
    base = rows.get("citeline")
    if base:
        for r in rows.values():
            r["ratio_to_citeline"] = {k: (r[k] / base[k] if base[k] else None) for k in RATIO_KEYS}
        for tool, diff in ndcg_against_citeline(results, qrels).items():
            rows[tool]["ndcg@10_difference"] = diff
    return rows


def citeline_scale_worker(work: Path, n_queries: int) -> None:
    """citeline's side of the query-latency-at-scale run (scale.py), in its own process."""
    import scale

    from citeline.filters import Filter

    queries = dict(list(json.loads((work / "queries.json").read_text(encoding="utf-8")).items())[:n_queries])
    clock = Clock()
    kb, _rows = scale.citeline_scale(work)
    load_s, load_cpu_s = clock.lap()
    embed_stats = time_embeddings(kb.embedder)
    retriever = kb.components.retriever()
    out: dict[str, Any] = {"tool": "citeline", "versions": {"citeline": "0.1.0 (this branch)"}}
    out["chunks"] = kb.store.count_chunks(Filter.admin())
    out["load_s"], out["load_cpu_s"] = load_s, load_cpu_s
    out["loadavg_start"] = os.getloadavg()

    degraded: list[str] = []

    def search(q: str) -> list[str]:
        got = retriever.retrieve(q, Filter.admin(), k=TOP_K, rrf_k=kb.settings.rrf_k)
        if got.degraded:
            degraded.append(got.degraded)
        return [h.chunk.id for h in got.hits]

    out.update(query_loop(search, queries, embed_stats, WARMUP))
    out["degraded_queries"] = degraded
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["loadavg_end"] = os.getloadavg()
    kb.close()
    (work / "citeline-scale.json").write_text(json.dumps(out), encoding="utf-8")


SCALE_KEYS = (
    "query_p50_ms",
    "query_p95_ms",
    "query_cpu_p50_ms",
    "query_noembed_p50_ms",
    "query_noembed_p95_ms",
)


def summarise_scale(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for tool, d in results.items():
        noembed = [w - e for w, e in zip(d["query_ms"], d["query_embed_ms"], strict=True)]
        rows[tool] = {
            "versions": d["versions"],
            "chunks": d["chunks"],
            "load_s": d["load_s"],
            "load_cpu_s": d["load_cpu_s"],
            "queries": len(d["query_ms"]),
            "query_p50_ms": percentile(d["query_ms"], 50),
            "query_p95_ms": percentile(d["query_ms"], 95),
            "query_cpu_p50_ms": percentile(d["query_cpu_ms"], 50),
            "query_noembed_p50_ms": percentile(noembed, 50),
            "query_noembed_p95_ms": percentile(noembed, 95),
            "peak_rss_mb": d["peak_rss_mb"],
            "degraded_queries": len(d.get("degraded_queries", [])),
            "loadavg_start": d["loadavg_start"],
            "loadavg_end": d["loadavg_end"],
        }
    base = rows.get("citeline")
    if base:
        for r in rows.values():
            r["ratio_to_citeline"] = {k: (r[k] / base[k] if base[k] else None) for k in SCALE_KEYS}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default=str(ROOT.parent / "shared" / "datasets" / "scifact"))
    ap.add_argument("--docs", type=int, default=1000, help="corpus documents (SciFact has 5,183)")
    ap.add_argument("--queries", type=int, default=300, help="test queries (SciFact test has 300)")
    ap.add_argument("--tools", default="citeline," + ",".join(PEERS))
    ap.add_argument(
        "--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "citeline-bench-peers"
    )
    ap.add_argument("--peers-python", type=Path, default=HERE / ".venv" / "bin" / "python")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "peers")
    ap.add_argument("--scale-chunks", type=int, default=0, help="also: query latency at N chunks (scale.py)")
    ap.add_argument("--scale-queries", type=int, default=30, help="queries of the --scale-chunks run")
    ap.add_argument(
        "--scale-only", action="store_true", help="only the --scale-chunks run, on --work of an earlier run"
    )
    ap.add_argument(
        "--scale-reuse",
        default="",
        help="tools whose --scale-chunks results in --work are taken as they are (e.g. to rerun one tool)",
    )
    ap.add_argument(
        "--reuse",
        default="",
        help="tools whose results in --work (of an earlier run of the same corpus) are taken as they are",
    )
    ap.add_argument("--skip-updates", action="store_true", help="no new-process re-add and edit (updates.py)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        if args.scale_chunks or "--scale-queries" in sys.argv:
            citeline_scale_worker(args.work, args.scale_queries)
        else:
            citeline_worker(args.work)
        return
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if tools[0] != "citeline":
        raise SystemExit("--tools must start with citeline: its chunks are what the peers index")
    args.work.mkdir(parents=True, exist_ok=True)
    if args.scale_only:
        earlier = args.out.with_suffix(".json")
        run_scale(args, tools, json.loads(earlier.read_text(encoding="utf-8")) if earlier.is_file() else {})
        return
    meta: dict[str, Any] = stage(args, args.work)
    meta["command"] = " ".join(["python", "benchmarks/peers/run.py", *sys.argv[1:]])
    meta["machine"] = f"{os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}"
    meta["loadavg_before"] = os.getloadavg()
    meta["started"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    reuse = {t.strip() for t in args.reuse.split(",") if t.strip()}
    results = {
        tool: reused(tool, args.work) if tool in reuse else run_tool(tool, args.work, args.peers_python)
        for tool in tools
    }
    meta["reused"] = sorted(reuse & set(tools))
    meta["loadavg_after"] = os.getloadavg()
    qrels = json.loads((args.work / "qrels.json").read_text(encoding="utf-8"))
    rows = summarise(results, qrels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    raw = {t: {k: v for k, v in d.items() if k != "runs"} for t, d in results.items()}
    args.out.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "tools": rows, "raw": raw}, indent=1), encoding="utf-8"
    )
    args.out.with_suffix(".md").write_text(markdown(meta, rows), encoding="utf-8")
    print(markdown(meta, rows))
    if args.skip_updates:
        return
    import updates  # re-add and edit again, each in a new process as a user runs them

    updates.add_to_report(args.work, args.out, args.peers_python, meta["command"])
    if args.scale_chunks:
        run_scale(args, tools, {"meta": meta, "tools": rows, "raw": raw})


def run_scale(args: argparse.Namespace, tools: list[str], report: dict[str, Any]) -> None:
    """The --scale-chunks run, added to the report written by the main run."""
    import scale

    if not args.scale_chunks:
        raise SystemExit("--scale-only needs --scale-chunks N")
    meta = scale.prepare(args.work, Path(args.dataset).parent, args.scale_chunks)
    meta["command"] = " ".join(["python", "benchmarks/peers/run.py", *sys.argv[1:]])
    meta["loadavg_before"] = os.getloadavg()
    reuse = {t.strip() for t in args.scale_reuse.split(",") if t.strip()}
    meta["reused"] = sorted(reuse)
    results = {
        tool: reused(tool, args.work, scale=True)
        if tool in reuse
        else run_tool(tool, args.work, args.peers_python, args.scale_queries)
        for tool in tools
    }
    meta["loadavg_after"] = os.getloadavg()
    report["scale"] = {"meta": meta, "tools": summarise_scale(results)}
    report["raw_scale"] = {t: {k: v for k, v in d.items() if k != "runs"} for t, d in results.items()}
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    text = scale_markdown(report["scale"])
    if "tools" in report:
        text = markdown(report["meta"], report["tools"]) + "\n" + text
    args.out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(scale_markdown(report["scale"]))


if __name__ == "__main__":
    main()
