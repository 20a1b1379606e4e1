"""The PostgreSQL store beside the embedded one, on the same machine (`make bench-pg`).

Run: .venv/bin/python benchmarks/bench_pg.py [--chunks 100000] [--real 10000] [--clients 8]
Writes benchmarks/results/bench_pg.json and .md. Needs ../shared/datasets/scifact and the dev
extra (pgserver: PostgreSQL 16 + pgvector 0.6.2, started here on 127.0.0.1, fsync on,
synchronous_commit off, the closest match of SQLite's WAL with synchronous=NORMAL).

* Corpus: real text. SciFact abstracts cut into windows of 3 sentences (stride 1), then PubMedQA
  contexts, 10 chunks per document, up to ``--chunks``. The first ``--real`` chunks get their real
  MiniLM vectors; every later chunk gets the vector of a real chunk plus Gaussian noise
  (sigma 0.05 per dimension), renormalised: labelled "synthetic vectors" in the results.
* Ingest: (a) the whole pipeline (parse, chunk, embed, write) on 300 SciFact abstracts staged as
  Markdown; (b) store writes of the pre-embedded corpus in batches of 50 documents (500 chunks).
* Queries: the 300 SciFact test claims. Hybrid = BM25 top-30 + dense top-30 + RRF + resolving the
  30 hits, the query vector embedded beforehand (the same cost for both stores, left out).
* Throughput: 8 client threads, each with its own connection to the store, for ``--seconds``.
* Filtered dense search at 100k: exact scan vs HNSW (with raised ef_search) by selectivity, the
  measurement behind ``pg_exact_scan_rows`` / ``pg_exact_scan_fraction``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import blingfire
import numpy as np

import citeline
from citeline.eval.metrics import percentile
from citeline.filters import Filter
from citeline.index.base import DocumentWrite, Store
from citeline.index.postgres.local import LocalPostgres
from citeline.query.analysis import analyze
from citeline.retrieval.fusion import reciprocal_rank_fusion
from citeline.types import Chunk, Document, document_id_for, text_hash
from citeline.wiring import open_store

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
RESULTS = ROOT / "benchmarks" / "results"
PER_DOC = 10


Piece = tuple[str, str, str]  # (title, chunk text, indexed text: the title and the text)


def corpus(limit: int) -> list[Piece]:
    """Chunks of real text: 3-sentence windows, stride 1."""
    texts: list[tuple[str, str]] = []
    with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        texts += [(d.get("title", ""), d["text"]) for d in map(json.loads, f)]
    with gzip.open(DATASETS / "pubmedqa" / "ori_pqal.json.gz", "rt", encoding="utf-8") as f:
        pubmed = json.load(f)
    texts += [(v["QUESTION"], " ".join(v["CONTEXTS"])) for v in pubmed.values()]
    out: list[Piece] = []
    # The texts hold ~41.5k windows; a larger corpus goes round them again, and each round names
    # itself in the indexed text: a chunk's vector is stored once per indexed-text hash, so
    # repeated texts would share one vector (1M chunks held 41,571 distinct ones, and dense
    # recall counted the copies as ties).
    rounds = 0
    while len(out) < limit:
        before = len(out)
        mark = f" (round {rounds})" if rounds else ""
        for title, text in texts:
            sentences = [s for s in blingfire.text_to_sentences(text).split("\n") if s.strip()]
            for i in range(max(1, len(sentences) - 2)):
                body = " ".join(sentences[i : i + 3])
                out.append((title, body, f"{title}{mark}\n\n{body}"))
                if len(out) >= limit:
                    return out
        if len(out) == before:
            break
        rounds += 1
    return out


def from_index(location: str, limit: int) -> tuple[list[Piece], np.ndarray]:
    """The chunks and the real vectors of the first ``limit`` chunks of an embedded index (the
    SciFact evaluation index: real text, real MiniLM vectors, no embedding here)."""
    store = open_store(location, create=False, read_only=True)
    chunks: list[Piece] = []
    hashes: list[str] = []
    for doc in store.documents(Filter.admin()):
        found = store.chunks(store.document_chunks(doc.id))
        for chunk, _ in sorted(found.values(), key=lambda x: x[0].ordinal):
            if len(chunks) >= limit:
                break
            chunks.append((doc.title, chunk.text, chunk.index_text))
            hashes.append(text_hash(chunk.index_text))
        if len(chunks) >= limit:
            break
    found_vectors = store.cached_vectors(hashes)
    store.close()
    return chunks, np.stack([found_vectors[h] for h in hashes]).astype(np.float32)


def vectors(
    chunks: list[tuple[str, str]], real: int, cache: Path, head: np.ndarray | None = None, seed: int = 7
) -> np.ndarray:
    from citeline.embedding import make_embedder

    path = cache / f"bench_pg_vectors_{real}.npy"
    if head is not None:
        pass
    elif path.exists():
        head = np.load(path)
    else:
        embedder = make_embedder("minilm-int8")
        head = np.concatenate(
            [embedder.embed([x for _, _, x in chunks[lo : lo + 256]]) for lo in range(0, real, 256)]
        ).astype(np.float32)
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, head)
    rng = np.random.default_rng(seed)
    rest = head[np.arange(len(chunks) - real) % real] + rng.normal(
        0, 0.05, (len(chunks) - real, head.shape[1])
    )
    rest /= np.linalg.norm(rest, axis=1, keepdims=True)
    return np.concatenate([head, rest.astype(np.float32)])


def documents(chunks: list[Piece], vecs: np.ndarray, start: int = 0) -> list[DocumentWrite]:
    """Documents of PER_DOC chunks; ``start``: the corpus position of chunks[0] (writing a large
    corpus a slice at a time gives each slice's documents their own names)."""
    writes = []
    for lo in range(0, len(chunks), PER_DOC):
        source = f"bench/{(start + lo) // PER_DOC:06d}.md"
        doc_id = document_id_for("default", source)
        part, text, pieces, pos = chunks[lo : lo + PER_DOC], "", [], 0
        for j, (title, body, index_text) in enumerate(part):
            pieces.append(
                Chunk(
                    f"{doc_id[:12]}-{j:012d}",
                    doc_id,
                    j,
                    pos,
                    pos + len(body),
                    body,
                    index_text,
                    (title,),
                    "paragraph",
                )
            )
            text += body + "\n\n"
            pos += len(body) + 2
        vec = {text_hash(c.index_text): vecs[lo + j] for j, c in enumerate(pieces)}
        doc = Document(
            doc_id,
            source,
            part[0][0][:80],
            "markdown",
            f"h{start + lo}",
            len(text),
            0.0,
            None,
            tags={"shard": str((start + lo) // PER_DOC % 100)},
        )
        writes.append(DocumentWrite(doc, text, pieces, vec))
    return writes


def load(store: Store, writes: list[DocumentWrite], dim: int, bulk: bool = True) -> float:
    """Seconds to write every document in batches of 50 (PostgreSQL: into a new index the HNSW
    index is built once at the end, as `citeline migrate` and Ray ingestion do; included)."""
    from contextlib import nullcontext

    store.bind_embedder("minilm-int8", "bench", dim)
    t = time.perf_counter()
    bulk_load = getattr(store, "bulk_load", None) if bulk else None
    with bulk_load() if bulk_load is not None else nullcontext():
        for lo in range(0, len(writes), 50):
            store.replace_documents(writes[lo : lo + 50])
    return time.perf_counter() - t


def hybrid(store: Store, query: Any, vector: np.ndarray, flt: Filter, k: int = 30) -> list[str]:
    lexical = store.keyword_search(query, flt, k)
    dense = store.vector_search(vector, flt, k)
    fused = reciprocal_rank_fusion([[c for c, _ in lexical], [c for c, _ in dense]], k=60)[:k]
    store.chunks([c for c, _ in fused])
    return [c for c, _ in fused]


def latency(store: Store, queries: list[Any], qvecs: np.ndarray) -> dict[str, float]:
    admin = Filter.admin()
    for q, v in zip(queries[:10], qvecs[:10], strict=True):
        hybrid(store, q, v, admin)  # warm caches (the embedded store loads its matrix)
    times = []
    for q, v in zip(queries, qvecs, strict=True):
        t = time.perf_counter()
        hybrid(store, q, v, admin)
        times.append((time.perf_counter() - t) * 1000)
    return {
        "p50_ms": round(percentile(times, 50), 2),
        "p95_ms": round(percentile(times, 95), 2),
        "mean_ms": round(statistics.mean(times), 2),
    }


def throughput(
    location: str, queries: list[Any], qvecs: np.ndarray, clients: int, seconds: float
) -> dict[str, float]:
    stores = [open_store(location) for _ in range(clients)]
    for s in stores:
        hybrid(s, queries[0], qvecs[0], Filter.admin())
    done, stop, errors = [0] * clients, threading.Event(), []

    def client(i: int) -> None:
        j = i
        try:
            while not stop.is_set():
                hybrid(stores[i], queries[j % len(queries)], qvecs[j % len(queries)], Filter.admin())
                done[i] += 1
                j += clients
        except Exception as exc:  # reported, not hidden
            errors.append(repr(exc))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    time.sleep(seconds)
    stop.set()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    for s in stores:
        s.close()
    if errors:
        raise RuntimeError(errors[0])
    return {"clients": clients, "queries": sum(done), "qps": round(sum(done) / elapsed, 1)}


def pipeline_ingest(location: str, folder: Path, n: int) -> dict[str, float]:
    docs = folder / "abstracts"
    if not docs.exists():
        docs.mkdir(parents=True)
        with gzip.open(DATASETS / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
            for i, line in enumerate(f):
                if i >= n:
                    break
                d = json.loads(line)
                (docs / f"a{i:05d}.md").write_text(f"# {d['title']}\n\n{d['text']}\n", encoding="utf-8")
    kb = citeline.open(location)
    _ = kb.embedder
    t = time.perf_counter()
    report = kb.add([docs], root=folder)
    elapsed = time.perf_counter() - t
    kb.close()
    return {
        "documents": len(report.added),
        "chunks": report.chunks_written,
        "seconds": round(elapsed, 1),
        "docs_per_s": round(len(report.added) / elapsed, 2),
    }


SHARES = (1, 2, 5, 10, 20, 50)


def share_tags(index: int) -> dict[str, str]:
    """Document ``index`` carries tag pN=1 when it is in the first N% of every hundred."""
    return {f"p{n}": "1" for n in SHARES if index % 100 < n}


def filtered_dense(store: Any, qvecs: np.ndarray) -> list[dict[str, Any]]:
    """Exact scan vs HNSW (ef_search raised to 2k/share, at most 1000) by the share of chunks a
    filter lets through: latency, and the HNSW lists' size and recall against the exact ones."""
    rows = []
    saved = store.exact_scan_rows, store.exact_scan_fraction
    for share in SHARES:
        flt = Filter(principal=Filter.admin().principal, tags={f"p{share}": "1"})
        lists: dict[str, list[list[str]]] = {}
        row: dict[str, Any] = {"share": share / 100}
        for mode, limits in {"exact": (10**9, 1.0), "hnsw": (0, 0.0)}.items():
            store.exact_scan_rows, store.exact_scan_fraction = limits
            store.hnsw_fallback = mode == "exact"
            times, lists[mode] = [], []
            for v in qvecs[:50]:
                t = time.perf_counter()
                hits = store.vector_search(v, flt, 30)
                times.append((time.perf_counter() - t) * 1000)
                lists[mode].append([c for c, _ in hits])
            row[f"{mode}_p50_ms"] = round(percentile(times, 50), 2)
        store.hnsw_fallback = True
        row["hnsw_rows"] = round(float(np.mean([len(b) for b in lists["hnsw"]])), 1)
        row["hnsw_recall@30"] = round(
            float(
                np.mean(
                    [
                        len(set(a) & set(b)) / max(1, len(a))
                        for a, b in zip(lists["exact"], lists["hnsw"], strict=True)
                    ]
                )
            ),
            3,
        )
        rows.append(row)
    store.exact_scan_rows, store.exact_scan_fraction = saved
    return rows


def markdown(result: dict[str, Any]) -> str:
    s, p = result["stores"]["sqlite"], result["stores"]["postgresql"]
    lines = [
        f"Machine: {result['machine']}. Corpus: {result['chunks']:,} chunks of real text "
        f"({result['real_vectors']:,} real MiniLM vectors, the rest synthetic: a real vector plus Gaussian noise, renormalised).",
        "",
        "| | embedded (SQLite) | PostgreSQL + pgvector |",
        "|---|---|---|",
        f"| ingest, whole pipeline ({s['pipeline']['documents']} SciFact abstracts) | {s['pipeline']['docs_per_s']} docs/s | {p['pipeline']['docs_per_s']} docs/s |",
        f"| store writes into a new index, pre-embedded, batches of 500 chunks (PostgreSQL: HNSW built after loading) | {s['write_chunks_per_s']:,} chunks/s | {p['write_chunks_per_s']:,} chunks/s |",
        f"| store writes into a live index (first 5,000 chunks; PostgreSQL: HNSW maintained per row) | {s['incremental_chunks_per_s']:,} chunks/s | {p['incremental_chunks_per_s']:,} chunks/s |",
        f"| hybrid query p50 / p95 at {result['chunks'] // 1000}k chunks | {s['hybrid']['p50_ms']} / {s['hybrid']['p95_ms']} ms | {p['hybrid']['p50_ms']} / {p['hybrid']['p95_ms']} ms |",
        f"| throughput, {s['throughput']['clients']} concurrent clients | {s['throughput']['qps']} queries/s | {p['throughput']['qps']} queries/s |",
        "",
        "Filtered dense search on PostgreSQL (top-30): exact scan vs HNSW, by the share of chunks the filter lets through",
        "",
        "| share | exact p50 | HNSW p50 | HNSW rows returned | HNSW recall@30 |",
        "|---|---|---|---|---|",
    ]
    for row in result["filtered_dense"]:
        lines.append(
            f"| {row['share']:.0%} | {row['exact_p50_ms']} ms | {row['hnsw_p50_ms']} ms | {row['hnsw_rows']} | {row['hnsw_recall@30']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=10_000, help="chunks with their real vectors")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="throughput run length")
    parser.add_argument("--pipeline-docs", type=int, default=300)
    parser.add_argument(
        "--real-from",
        help="take the real chunks and vectors from this embedded index (e.g. the SciFact evaluation "
        "index that `citeline eval retrieval` built) instead of embedding them here",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_pg")
    args = parser.parse_args()
    if not (DATASETS / "scifact").is_dir():
        sys.exit(f"needs {DATASETS / 'scifact'}")
    from citeline.embedding import make_embedder
    from citeline.settings import cache_root

    head = None
    if args.real_from:
        real_chunks, head = from_index(args.real_from, args.real)
        chunks = real_chunks + corpus(args.chunks - len(real_chunks))
    else:
        chunks = corpus(args.chunks)
    vecs = vectors(chunks, min(args.real, len(chunks)), cache_root() / "bench", head)
    writes = documents(chunks, vecs)
    for i, w in enumerate(writes):
        w.document.tags.update(share_tags(i))
    claims = [json.loads(line) for line in (DATASETS / "scifact" / "queries.jsonl").open()]
    qrels = {
        line.split()[0] for line in (DATASETS / "scifact" / "qrels" / "test.tsv").open() if line[:1].isdigit()
    }
    texts = [q["text"] for q in claims if q["_id"] in qrels][:300]
    queries = [analyze(t) for t in texts]
    qvecs = make_embedder("minilm-int8").embed(texts)
    result: dict[str, Any] = {
        "machine": f"{__import__('os').cpu_count()} CPUs, shared; PostgreSQL 16 + pgvector 0.6.2 (pgserver), fsync on, synchronous_commit off",
        "chunks": len(chunks),
        "real_vectors": min(args.real, len(chunks)),
        "synthetic_vectors": "chunks beyond the real ones: a real vector + N(0, 0.05^2) per dimension, renormalised",
        "queries": len(queries),
        "stores": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-pg-") as tmp:
        folder = Path(tmp)
        server = LocalPostgres.start(folder / "pg", durable=True)
        try:
            for name in ("sqlite", "postgresql"):
                make = (lambda n, _name=name: str(folder / n)) if name == "sqlite" else server.create_database
                row: dict[str, Any] = {
                    "pipeline": pipeline_ingest(make("pipeline"), folder, args.pipeline_docs)
                }
                small = open_store(make("incremental"))
                few = writes[: 5000 // PER_DOC]
                row["incremental_chunks_per_s"] = round(5000 / load(small, few, vecs.shape[1], bulk=False))
                small.close()
                location = make("big")
                store = open_store(location)
                seconds = load(store, writes, vecs.shape[1])
                row["write_seconds"] = round(seconds, 1)
                row["write_chunks_per_s"] = round(len(chunks) / seconds)
                row["hybrid"] = latency(store, queries, qvecs)
                if name == "postgresql":
                    result["filtered_dense"] = filtered_dense(store, qvecs)
                store.close()
                row["throughput"] = throughput(location, queries, qvecs, args.clients, args.seconds)
                result["stores"][name] = row
                print(name, json.dumps(row), flush=True)
        finally:
            server.stop()
            shutil.rmtree(folder / "pg", ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    table = markdown(result)
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
