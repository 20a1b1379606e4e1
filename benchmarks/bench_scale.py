"""Ingest throughput, incremental updates, hybrid retrieval at scale, `ask` and start-up (`make bench`).

Run: .venv/bin/python benchmarks/bench_scale.py [--sizes 10000,100000] [--ingest-docs 200]
Writes benchmarks/results/bench_scale.json and .md. Needs ../shared/datasets/scifact (and pubmedqa).

* Ingest: ``--ingest-docs`` SciFact abstracts staged as Markdown, through ``citeline.open().add``:
  chunks/s, each stage's share (parse, chunk, embed, write: ``IngestReport.seconds``), and the
  pipeline's overhead over raw embedding (one embed call per final chunk's indexed text, nothing
  else, timed in the same process right after). Then the same folder added again (nothing
  changed), and again after one file was edited (one sentence appended): chunks re-embedded.
* Ask: ``--ask-queries`` SciFact claims through ``ask`` on that index, the offline default answerer.
* Retrieval, each size in its own process (its peak memory is its own): real text from
  ``bench_pg.corpus``; the first ``--real`` chunks get their real MiniLM vectors (cached outside the
  repository by model version and text hash, CACHE/bench/vectors.sqlite), later chunks a real
  vector plus Gaussian noise, renormalised (``bench_pg.vectors``: "synthetic vectors"). Written
  through ``Store.replace_documents`` with the vectors given (batches of 50 documents), into the
  store ``open_store`` chooses for a folder. Hybrid = BM25 top-30 + dense top-30 + RRF + resolving
  the hits, the query vector embedded beforehand; p50/p95 over the SciFact test claims, queries/s
  for one client and for ``--clients``.
* Start-up: ``citeline --help`` and a one-shot ``citeline search`` process on the smallest index.

1M chunks: ``make bench-1m`` builds the index once through the Store API (``bench_engines.py
--chunks 1000000 --keep``, which also measures the engines at each filter selectivity), then
measures it here with ``--index PATH`` (hybrid p50/p95, queries/s, one-shot search, memory);
``--sizes 1000000`` builds its own instead (about 45 minutes of writes on 2 cores).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_pg

import citeline
from citeline.eval.metrics import percentile
from citeline.filters import Filter, Principal
from citeline.query.analysis import analyze
from citeline.settings import cache_root
from citeline.types import text_hash

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"
ADMIN = Principal.local_admin()
MODEL = "minilm-int8"
SLICE = 20_000  # chunks built and written at a time (bounded memory at 1M)


def peak_mb() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries a parent's peak
    into a child's ru_maxrss across fork and exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def load_note() -> str:
    return "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def real_vectors(texts: list[str], cache: Path) -> np.ndarray:
    """MiniLM vectors of ``texts``, cached by model version and text hash (embedded once, ever)."""
    from citeline.embedding import make_embedder

    embedder = make_embedder(MODEL)
    cache.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(cache / "vectors.sqlite")
    db.execute("CREATE TABLE IF NOT EXISTS v (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash))")
    hashes = [text_hash(t) for t in texts]
    found: dict[str, np.ndarray] = {}
    unique = list(dict.fromkeys(hashes))
    for lo in range(0, len(unique), 500):
        part = unique[lo : lo + 500]
        rows = db.execute(
            f"SELECT hash, vec FROM v WHERE model = ? AND hash IN ({','.join('?' * len(part))})",
            [embedder.version, *part],
        )
        found.update((h, np.frombuffer(b, dtype=np.float32)) for h, b in rows)
    todo = list({h: t for h, t in zip(hashes, texts, strict=True) if h not in found}.items())
    for lo in range(0, len(todo), 256):
        part = todo[lo : lo + 256]
        vecs = embedder.embed([t for _, t in part]).astype(np.float32)
        with db:
            db.executemany(
                "INSERT OR REPLACE INTO v VALUES (?, ?, ?)",
                [(embedder.version, h, v.tobytes()) for (h, _), v in zip(part, vecs, strict=True)],
            )
        found.update((h, v) for (h, _), v in zip(part, vecs, strict=True))
        print(f"  embedded {lo + len(part)}/{len(todo)} uncached texts", flush=True)
    db.close()
    return np.stack([found[h] for h in hashes]).astype(np.float32)


def claims(limit: int) -> list[str]:
    queries = [json.loads(line) for line in (DATASETS / "scifact" / "queries.jsonl").open()]
    test = {
        line.split()[0] for line in (DATASETS / "scifact" / "qrels" / "test.tsv").open() if line[:1].isdigit()
    }
    return [q["text"] for q in queries if q["_id"] in test][:limit]


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


# -- ingest, re-add, one-file edit, ask --------------------------------------------------------


def stage_docs(folder: Path, n: int) -> Path:
    docs = folder / "abstracts"
    docs.mkdir(parents=True)
    with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n:
                break
            d = json.loads(line)
            (docs / f"a{i:05d}.md").write_text(f"# {d['title']}\n\n{d['text']}\n", encoding="utf-8")
    return docs


def ingest(folder: Path, n: int, ask_queries: int) -> dict[str, Any]:
    docs = stage_docs(folder, n)
    kb = citeline.open(folder / "index")
    embedder = kb.embedder
    embedder.embed(["load the model outside the timing"])
    cpu = time.process_time()
    report, cold = timed(kb.add, [docs], root=folder)
    cold_cpu = time.process_time() - cpu
    # Raw embedding: one embed call over every final chunk's indexed text, nothing else. CPU time
    # too (every thread of the process): wall time on a shared machine moves with the others' load.
    texts = _chunk_texts(kb)
    cpu = time.process_time()
    _, raw = timed(embedder.embed, texts)
    raw_cpu = time.process_time() - cpu
    again, readd = timed(kb.add, [docs], root=folder)
    edited = sorted(docs.iterdir())[len(report.added) // 2]
    with edited.open("a", encoding="utf-8") as f:
        f.write("\nThis sentence was appended to measure a one-file edit.\n")
    doc_chunks = len(kb.store.document_chunks(_doc_id(kb, edited, folder)))
    edit, edit_s = timed(kb.add, [docs], root=folder)
    asks, ask_cpu = [], []
    for q in claims(ask_queries):
        cpu = time.process_time()
        _, s = timed(kb.ask, q, ADMIN)
        asks.append(s * 1000)
        ask_cpu.append((time.process_time() - cpu) * 1000)
    kb.close()
    stages = report.seconds
    staged = sum(stages.values()) or 1.0
    return {
        "documents": len(report.added),
        "chunks": report.chunks_written,
        "seconds": round(cold, 2),
        "chunks_per_s": round(report.chunks_written / cold, 2),
        "stage_share": {k: round(v / staged, 3) for k, v in stages.items()},
        "stage_seconds": {k: round(v, 2) for k, v in stages.items()},
        "raw_embed_seconds": round(raw, 2),
        "overhead_over_raw_embedding": round((cold - raw) / cold, 3),
        "cpu_seconds": round(cold_cpu, 2),
        "raw_embed_cpu_seconds": round(raw_cpu, 2),
        "cpu_overhead_over_raw_embedding": round((cold_cpu - raw_cpu) / cold_cpu, 3),
        "readd_unchanged": {
            "seconds": round(readd, 3),
            "unchanged": len(again.unchanged),
            "chunks_embedded": again.chunks_embedded,
        },
        "one_file_edit": {
            "seconds": round(edit_s, 3),
            "updated": len(edit.updated),
            "chunks_in_document": doc_chunks,
            "chunks_embedded": edit.chunks_embedded,
        },
        "ask": {
            "queries": len(asks),
            "p50_ms": round(percentile(asks, 50), 1) if asks else None,
            "p95_ms": round(percentile(asks, 95), 1) if asks else None,
            "cpu_p50_ms": round(percentile(ask_cpu, 50), 1) if asks else None,
        },
        "peak_mb": peak_mb(),
        "load": load_note(),
    }


def _chunk_texts(kb: Any) -> list[str]:
    texts = []
    for doc in kb.store.documents(Filter.admin()):
        found = kb.store.chunks(kb.store.document_chunks(doc.id))
        texts += [c.index_text for c, _ in found.values()]
    return texts


def _doc_id(kb: Any, path: Path, root: Path) -> str:
    from citeline.types import DEFAULT_COLLECTION, document_id_for

    return document_id_for(DEFAULT_COLLECTION, path.relative_to(root).as_posix())


# -- retrieval at a size (run in a child process) --------------------------------------------


def slice_vectors(chunks: list[Any], head: np.ndarray, lo: int, n: int, cache: Path) -> np.ndarray:
    """Vectors of chunks[lo:lo+n]: the real ones below len(head), then a real vector plus noise
    (``bench_pg.vectors``, seeded by the slice so that slices differ)."""
    real = len(head)
    if lo + n <= real:
        return head[lo : lo + n]
    mixed = bench_pg.vectors(chunks[:real] + chunks[lo : lo + n], real, cache, head=head, seed=7 + lo)[real:]
    return np.concatenate([head[lo:real], mixed[real - lo :]]) if lo < real else mixed


def build(location: str, size: int, real: int, cache: Path) -> dict[str, Any]:
    """Write ``size`` chunks through the Store API, a slice at a time; returns the write figures."""
    from citeline.embedding import make_embedder
    from citeline.wiring import open_store

    chunks = bench_pg.corpus(size)
    real = min(real, len(chunks))
    head = real_vectors([x for _, _, x in chunks[:real]], cache)
    embedder = make_embedder(MODEL)
    store = open_store(location)
    store.bind_embedder(embedder.name, embedder.version, embedder.dim)
    seconds = 0.0
    for lo in range(0, len(chunks), SLICE):
        part = chunks[lo : lo + SLICE]
        writes = bench_pg.documents(part, slice_vectors(chunks, head, lo, len(part), cache), start=lo)
        t = time.perf_counter()
        for w in range(0, len(writes), 50):
            store.replace_documents(writes[w : w + 50])
        seconds += time.perf_counter() - t
    store.close()
    return {"chunks": len(chunks), "real_vectors": real, "write_seconds": round(seconds, 1)}


def folder_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def retrieval(
    size: int, real: int, cache: Path, clients: int, seconds: float, keep: Path | None
) -> dict[str, Any]:
    from citeline.wiring import open_store

    tmp = Path(tempfile.mkdtemp(prefix=f"bench-scale-{size}-"))
    location = str(keep or tmp / "index")
    try:
        row = build(location, size, real, cache)
        row["write_chunks_per_s"] = round(row["chunks"] / max(row["write_seconds"], 1e-9))
        row["index_mb"] = folder_mb(Path(location))
        texts = claims(300)
        queries = [analyze(t) for t in texts]
        qvecs = real_vectors(texts, cache)
        store = open_store(location)
        row["engine"] = type(store).__name__
        row["hybrid"] = bench_pg.latency(store, queries, qvecs)
        row["hybrid"]["qps_1_client"] = round(1000 / row["hybrid"]["mean_ms"], 1)
        store.close()
        row["throughput"] = bench_pg.throughput(location, queries, qvecs, clients, seconds)
        row["peak_mb"] = peak_mb()
        row["load"] = load_note()
        return row
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def existing(index: Path, clients: int, seconds: float) -> dict[str, Any]:
    """Retrieval and start-up on an index built already through the Store API (the 1M run:
    `bench_engines.py --keep`), instead of building one."""
    from citeline.wiring import open_store

    texts = claims(300)
    queries = [analyze(t) for t in texts]
    qvecs = real_vectors(texts, cache_root() / "bench")
    store = open_store(str(index))
    chunks = store.count_chunks(Filter.admin())
    row: dict[str, Any] = {"chunks": chunks, "index": str(index), "index_mb": folder_mb(index)}
    row["engine"] = type(store).__name__
    t = time.perf_counter()
    bench_pg.hybrid(store, queries[0], qvecs[0], Filter.admin())
    row["first_query_ms"] = round((time.perf_counter() - t) * 1000, 1)  # engines opened, caught up
    row["hybrid"] = bench_pg.latency(store, queries, qvecs)
    row["hybrid"]["qps_1_client"] = round(1000 / row["hybrid"]["mean_ms"], 1)
    store.close()
    row["throughput"] = bench_pg.throughput(str(index), queries, qvecs, clients, seconds)
    row["peak_mb"] = peak_mb()
    row["load"] = load_note()
    row["startup"] = startup(index)
    return row


def existing_markdown(row: dict[str, Any]) -> str:
    h, t, s = row["hybrid"], row["throughput"], row["startup"]
    return (
        "\n".join(
            [
                f"Index: {row['chunks']:,} chunks built through the Store API by `bench_engines.py --keep` "
                f"({row['index_mb']:,} MB on disk; real text, real vectors for the first 10,000 chunks, "
                "the rest a real vector plus N(0, 0.05^2) per dimension, renormalised).",
                "",
                "| measure | value |",
                "|---|---|",
                f"| hybrid retrieval p50 / p95 (BM25 top-30 + dense top-30 + RRF + hits resolved; "
                f"query embedding excluded) | {h['p50_ms']} / {h['p95_ms']} ms |",
                f"| queries/s, 1 client / {t['clients']} clients | {h['qps_1_client']} / {t['qps']} |",
                f"| first query after opening | {row['first_query_ms']} ms |",
                f"| one-shot `citeline search` process | {s['search']['median_ms']} ms median (min "
                f"{s['search']['min_ms']}; CPU {s['search']['cpu_median_ms']} ms) |",
                f"| `citeline --help` | {s['help']['median_ms']} ms median (CPU {s['help']['cpu_median_ms']} ms) |",
                f"| peak memory of the measuring process | {row['peak_mb']:,} MB |",
                f"| load | {row['load']}; start-up: {s['load']} |",
            ]
        )
        + "\n"
    )


# -- start-up ------------------------------------------------------------------------------


def cli() -> list[str]:
    script = Path(sys.executable).parent / "citeline"
    return [str(script)] if script.exists() else [sys.executable, "-m", "citeline"]


def compile_bytecode() -> None:
    """Write citeline's bytecode, as installing a wheel does. An editable install never gets it
    where PYTHONDONTWRITEBYTECODE is set (this machine sets it): every process then compiled
    citeline's sources again, about 0.1 s of CPU and 0.3 s of wall per start on a loaded machine."""
    import compileall

    compileall.compile_dir(Path(citeline.__file__).parent, quiet=1)


def startup(index: Path | None, runs: int = 5) -> dict[str, Any]:
    compile_bytecode()

    def best(args: list[str]) -> dict[str, float]:
        # CPU time (user + system) of the child too: a loaded machine stretches wall time.
        times, cpus = [], []
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            _, s = timed(subprocess.run, args, capture_output=True, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times.append(s * 1000)
            cpus.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        return {
            "median_ms": round(statistics.median(times), 1),
            "min_ms": round(min(times), 1),
            "cpu_median_ms": round(statistics.median(cpus), 1),
        }

    out: dict[str, Any] = {"help": best([*cli(), "--help"])}
    if index is not None:
        out["search"] = best([*cli(), "--index", str(index), "search", "vitamin D deficiency", "-k", "10"])
    out["load"] = load_note()
    return out


# -- report --------------------------------------------------------------------------------


def markdown(result: dict[str, Any]) -> str:
    i, s = result["ingest"], result["startup"]
    shares = ", ".join(f"{k} {v:.0%}" for k, v in i["stage_share"].items())
    lines = [
        f"Machine: {result['machine']}.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| ingest, {i['documents']} SciFact abstracts as Markdown ({i['chunks']} chunks) | "
        f"{i['seconds']} s, {i['chunks_per_s']} chunks/s ({i['load']}) |",
        f"| stage shares | {shares} |",
        f"| overhead over raw embedding of the final chunks ({i['raw_embed_seconds']} s; CPU "
        f"{i['raw_embed_cpu_seconds']} s of {i['cpu_seconds']} s) | wall {i['overhead_over_raw_embedding']:.1%}, "
        f"CPU {i['cpu_overhead_over_raw_embedding']:.1%} |",
        f"| re-add, nothing changed | {i['readd_unchanged']['seconds'] * 1000:.0f} ms, "
        f"{i['readd_unchanged']['chunks_embedded']} chunks embedded |",
        f"| one file edited | {i['one_file_edit']['seconds'] * 1000:.0f} ms, "
        f"{i['one_file_edit']['chunks_embedded']} of its {i['one_file_edit']['chunks_in_document']} chunks re-embedded |",
        f"| `ask`, offline default, {i['ask']['queries']} SciFact claims | "
        f"p50 {i['ask']['p50_ms']} ms, p95 {i['ask']['p95_ms']} ms (CPU p50 {i['ask']['cpu_p50_ms']} ms) |",
        f"| peak memory of the ingest and ask process | {i['peak_mb']:,} MB |",
        f"| `citeline --help` | {s['help']['median_ms']} ms median (min {s['help']['min_ms']}; "
        f"CPU {s['help']['cpu_median_ms']} ms) ({s['load']}) |",
    ]
    if "search" in s:
        lines.append(
            f"| one-shot `citeline search` process at {result['search_index_chunks']:,} chunks | "
            f"{s['search']['median_ms']} ms median (min {s['search']['min_ms']}; CPU "
            f"{s['search']['cpu_median_ms']} ms) |"
        )
    lines += [
        "",
        "Hybrid retrieval through the Store API (BM25 top-30 + dense top-30 + RRF + hits resolved; "
        "query embedding excluded). Vectors beyond the real ones are synthetic: a real vector plus "
        "N(0, 0.05^2) per dimension, renormalised.",
        "",
        "| chunks | real vectors | store | writes | index on disk | p50 / p95 | queries/s (1 client) | "
        "queries/s (clients) | peak memory | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["retrieval"]:
        h, t = r["hybrid"], r["throughput"]
        lines.append(
            f"| {r['chunks']:,} | {r['real_vectors']:,} | {r['engine']} | {r['write_chunks_per_s']:,} chunks/s | "
            f"{r['index_mb']} MB | {h['p50_ms']} / {h['p95_ms']} ms | {h['qps_1_client']} | "
            f"{t['qps']} ({t['clients']}) | {r['peak_mb']:,} MB | {r['load']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="chunk counts for retrieval, comma-separated")
    parser.add_argument("--real", type=int, default=10_000, help="chunks with their real vectors")
    parser.add_argument("--ingest-docs", type=int, default=200)
    parser.add_argument("--ask-queries", type=int, default=20)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the concurrent-clients run")
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_scale")
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)  # one size, in a child process
    parser.add_argument("--keep", type=Path, help=argparse.SUPPRESS)
    parser.add_argument(
        "--index",
        type=Path,
        help="measure retrieval and start-up on this index (built by bench_engines.py --keep) "
        "instead of ingesting and building; writes --out (default bench_scale_index)",
    )
    args = parser.parse_args()
    if not (DATASETS / "scifact").is_dir():
        sys.exit(f"needs {DATASETS / 'scifact'}")
    cache = cache_root() / "bench"
    if args.index:
        out = args.out if args.out != RESULTS / "bench_scale" else RESULTS / "bench_scale_index"
        row = existing(args.index, args.clients, args.seconds)
        out.with_suffix(".json").write_text(json.dumps(row, indent=2) + "\n", encoding="utf-8")
        out.with_suffix(".md").write_text(existing_markdown(row), encoding="utf-8")
        print(existing_markdown(row))
        return
    if args.size:
        row = retrieval(args.size, args.real, cache, args.clients, args.seconds, args.keep)
        print("RESULT " + json.dumps(row), flush=True)
        return
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    result: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, {load_note()} at the start",
        "retrieval": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        print("ingest ...", flush=True)
        result["ingest"] = ingest(Path(tmp) / "ingest", args.ingest_docs, args.ask_queries)
        print(json.dumps(result["ingest"]), flush=True)
        search_index = Path(tmp) / "search-index"
        for n, size in enumerate(sizes):
            print(f"retrieval at {size:,} chunks ...", flush=True)
            keep = ["--keep", str(search_index)] if n == 0 else []
            child = subprocess.run(
                [sys.executable, __file__, "--size", str(size), "--real", str(args.real),
                 "--clients", str(args.clients), "--seconds", str(args.seconds), *keep],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            lines = [x for x in child.stdout.splitlines() if x.startswith("RESULT ")]
            if child.returncode or not lines:
                sys.exit(f"size {size} failed:\n{child.stdout[-2000:]}\n{child.stderr[-4000:]}")
            result["retrieval"].append(json.loads(lines[-1][7:]))
            print(json.dumps(result["retrieval"][-1]), flush=True)
        result["search_index_chunks"] = sizes[0] if sizes else 0
        result["startup"] = startup(search_index if sizes else None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
