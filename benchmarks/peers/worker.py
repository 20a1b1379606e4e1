"""One peer, in its own process (run in benchmarks/peers/.venv by run.py): ingest, re-add, edit, query.

    python benchmarks/peers/worker.py --tool llamaindex|haystack --work DIR [--update]

Reads DIR/chunks.jsonl (citeline's chunks of every corpus file), DIR/edited.jsonl (the edited
file's chunks) and DIR/queries.json, writes DIR/<tool>.json. Timings are wall-clock seconds;
query latency includes embedding the query (as for citeline). Peak memory is this process's
maximum resident set (the embedder's model included, as in citeline's process).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared import (
    EDITED_FILE,
    Clock,
    chunk_table,
    edit_file,
    query_loop,
    read_corpus,
    same_process_readds,
    time_embeddings,
)

WARMUP = 3


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def make_peer(tool: str, embedder: Any) -> tuple[Any, dict[str, str]]:
    if tool == "llamaindex":
        import llamaindex_pipeline

        return llamaindex_pipeline.LlamaIndexPeer(embedder), llamaindex_pipeline.versions()
    if tool == "haystack":
        import haystack_pipeline

        return haystack_pipeline.HaystackPeer(embedder), haystack_pipeline.versions()
    raise SystemExit(f"unknown tool {tool}")


def scale_main(tool: str, work: Path, n_queries: int) -> None:
    import scale
    from shared import citeline_embedder

    queries = dict(list(json.loads((work / "queries.json").read_text(encoding="utf-8")).items())[:n_queries])
    embedder = citeline_embedder()
    embed_stats = time_embeddings(embedder)
    peer, versions = make_peer(tool, embedder)
    rows, vecs = scale.load_rows(work)
    clock = Clock()
    items = [(r["key"], scale.index_text(r), v.tolist()) for r, v in zip(rows, vecs, strict=True)]
    del vecs
    __import__(f"{tool}_pipeline").load_prebuilt(peer, items)
    del items
    load_s, load_cpu_s = clock.lap()
    out: dict[str, Any] = {"tool": tool, "versions": versions, "chunks": peer.count_chunks()}
    out["load_s"], out["load_cpu_s"] = load_s, load_cpu_s
    out["loadavg_start"] = os.getloadavg()
    out.update(query_loop(peer.search, queries, embed_stats, WARMUP))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["loadavg_end"] = os.getloadavg()
    (work / f"{tool}-scale.json").write_text(json.dumps(out), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--work", required=True, type=Path)
    ap.add_argument("--scale-queries", type=int, default=0, help="query latency at scale (scale.py)")
    ap.add_argument(
        "--update", action="store_true", help="one new-process re-add of the saved index (updates.py)"
    )
    args = ap.parse_args()
    work: Path = args.work
    if args.update:
        update_main(args.tool, work)
        return
    if args.scale_queries:
        scale_main(args.tool, work, args.scale_queries)
        return
    corpus = work / "corpus"
    table = chunk_table(read_jsonl(work / "chunks.jsonl") + read_jsonl(work / "edited.jsonl"))
    queries: dict[str, str] = json.loads((work / "queries.json").read_text(encoding="utf-8"))

    from shared import citeline_embedder

    t0 = time.perf_counter()
    embedder = citeline_embedder()
    embed_stats = time_embeddings(embedder)
    peer, versions = make_peer(args.tool, embedder)
    setup_s = time.perf_counter() - t0
    out: dict[str, Any] = {"tool": args.tool, "versions": versions, "setup_s": setup_s}

    load = os.getloadavg()

    def ingest() -> dict[str, Any]:
        before = embed_stats["seconds"]
        clock = Clock()
        stats = peer.ingest(read_corpus(corpus, table))
        wall, cpu = clock.lap()
        return {
            "seconds": wall,
            "cpu_seconds": cpu,
            "embed_seconds": embed_stats["seconds"] - before,
            **stats,
        }

    out["cold_ingest"] = {**ingest(), "chunks": peer.count_chunks()}
    out["readd"] = same_process_readds(ingest)
    original = edit_file(corpus / EDITED_FILE)
    try:
        out["edit"] = {**ingest(), "chunks": peer.count_chunks()}
    finally:
        (corpus / EDITED_FILE).write_text(original, encoding="utf-8")

    out.update(query_loop(peer.search, queries, embed_stats, WARMUP))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["loadavg_start"] = load
    out["loadavg_end"] = os.getloadavg()
    try:  # kept on disk for the new-process re-add and edit (updates.py); not part of any figure above
        clock = Clock()
        __import__(f"{args.tool}_pipeline").save(peer, str(saved_folder(work, args.tool)))
        out["save_s"] = clock.lap()[0]
    except Exception as exc:  # the figures above are kept; the new-process runs will say the state is missing
        out["save_error"] = repr(exc)
    (work / f"{args.tool}.json").write_text(json.dumps(out), encoding="utf-8")


def saved_folder(work: Path, tool: str) -> Path:
    return work / f"{tool}-saved"


def update_main(tool: str, work: Path) -> None:
    """One new-process re-add (updates.py): the saved index loaded, the corpus added again, saved
    back when something changed. Reading citeline's chunk table (it stands in for the peer's own
    chunking) is timed apart, as ``harness_s``, for the caller to take out."""
    clock = Clock()
    table = chunk_table(read_jsonl(work / "chunks.jsonl") + read_jsonl(work / "edited.jsonl"))
    harness_s, harness_cpu_s = clock.lap()
    from shared import citeline_embedder

    module = __import__(f"{tool}_pipeline")
    stats = module.update_saved(
        citeline_embedder(), str(saved_folder(work, tool)), read_corpus(work / "corpus", table)
    )
    out = {**stats, "harness_s": harness_s, "harness_cpu_s": harness_cpu_s}
    (work / f"{tool}-update.json").write_text(json.dumps(out), encoding="utf-8")


if __name__ == "__main__":
    main()
