"""Retrieval evaluation on BEIR-style datasets: one index per corpus, metrics per stage.

How a dataset becomes an index
------------------------------
Each corpus document is written as a small Markdown file (front matter ``title`` and
``beir_id``, the text as the body) and added with ``KnowledgeBase.add``, so parsing, chunking
and embedding are exactly the product's own. The title becomes the context prefix of every
chunk. The index is cached (see :func:`cache_key`): a second run embeds nothing.

Per-chunk vs per-document scoring
---------------------------------
The product retrieves and reranks *chunks*. A long document can give several chunks; for the
metrics, which judge *documents*, each stage's chunk ranking is collapsed to documents by their
best chunk (a document takes the rank of its first chunk in the list, later chunks of the same
document are dropped). The metrics of bm25, dense and the fusions come from lists ``depth`` chunks
deep (enough for Recall@100). The reranker sees what it sees in the product: the top
``rerank_depth`` chunks of a retrieval made with the product's ``top_k`` per stage; the documents of
the deep fused list follow, so the reranked stage's Recall@100 stays comparable.

Stages reported: ``bm25`` (FTS5 alone), ``dense`` (vectors alone), ``fused`` (the fusion chosen
with ``fusion``/``alpha``), ``fused_<other>`` (the other fusion on the same two lists, so both are
always reported) and ``reranked`` (the reranker over the chosen fusion). Latency is per query and
per stage, measured at the product's depth, as a user of that stage alone would pay it: ``dense``
includes embedding the query, ``fused`` both searches and resolving the hits, ``reranked`` all of
that plus reranking.

A query whose dense side failed, overran ``dense_timeout_ms`` or was skipped by the open circuit
(retrieval/breaker.py) is keyword-only, as in the product: it is scored as it came back (no dense
list), counted in the report's ``degraded_queries`` (``degraded``: why, for how many), and its
dense latency is how long it waited for the dense side before going on without it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from citeline.errors import CitelineError
from citeline.eval.beir import BeirDataset, BeirDoc
from citeline.eval.metrics import DEFAULT_METRICS, evaluate, percentile
from citeline.filters import Filter
from citeline.jsonable import Jsonable, json_spec, omit_always
from citeline.kb import KnowledgeBase, open_kb
from citeline.rerank.base import Reranker
from citeline.retrieval.fusion import convex_combination, reciprocal_rank_fusion
from citeline.retrieval.hybrid import Retrieval
from citeline.settings import Settings, cache_root, is_url, load_settings
from citeline.types import Hit
from citeline.url_secrets import redact_url

FUSIONS = ("rrf", "convex")
STAGE_ORDER = ("bm25", "dense", "fused", "fused_rrf", "fused_convex", "reranked")
DEFAULT_DEPTH = 200  # chunks per stage list: enough for 100 distinct documents on BEIR corpora
STAGING_FORMAT = "1"  # bump when the staged Markdown layout changes (invalidates cached indexes)

Progress = Callable[[str, int], None]


# --------------------------------------------------------------------------------------------
# The index: staged Markdown files through KnowledgeBase.add, cached by key
# --------------------------------------------------------------------------------------------


def corpus_digest(corpus: Mapping[str, BeirDoc]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(corpus):
        doc = corpus[doc_id]
        for part in (doc_id, doc.title, doc.text):
            h.update(part.encode("utf-8"))
            h.update(b"\0")
    return h.hexdigest()


def cache_key(dataset_path: str | Path, corpus: Mapping[str, BeirDoc], embedder: str, chunking: str) -> str:
    """Dataset folder + the corpus actually indexed + embedder + chunking settings.

    The split is not part of it: in BEIR every split searches the same corpus, so train and test
    share one index. A slice (a different corpus) gets its own.
    """
    raw = "|".join(
        [str(Path(dataset_path).resolve()), corpus_digest(corpus), embedder, chunking, STAGING_FORMAT]
    )
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def default_cache_root(settings: Settings | None = None) -> Path:
    """``eval_cache``, else CACHE/eval (see settings.cache_root)."""
    settings = settings or load_settings()
    if settings.eval_cache:
        return Path(settings.eval_cache).expanduser()
    return cache_root(settings) / "eval"


def _staged_markdown(doc_id: str, doc: BeirDoc) -> str:
    # JSON strings are valid YAML scalars, so any title or id survives the front matter.
    front = f"---\ntitle: {json.dumps(doc.title)}\nbeir_id: {json.dumps(doc_id)}\n---\n\n"
    return front + doc.text.strip() + "\n"


@dataclass
class EvalIndex:
    kb: KnowledgeBase
    folder: Path
    built: bool  # False when the cached index was reused as it was
    chunks_embedded: int
    ingest_seconds: float
    chunk_to_doc: dict[str, str]


def open_eval_index(
    dataset: BeirDataset,
    dataset_path: str | Path,
    *,
    embedder: str = "minilm-int8",
    index: str | Path | None = None,
    cache_root: Path | None = None,
    progress: Progress | None = None,
    batch: int = 256,
    progressive: bool = False,
) -> EvalIndex:
    """Open the dataset's cached index, building (or finishing) it first if needed.

    Documents are staged as Markdown under ``<cache_root>/<key>/docs`` and added in batches; an
    interrupted build resumes where it stopped (unchanged files are skipped by the ingestor).
    ``progressive``: with the fast embedder's vectors only (``citeline add --progressive``).
    """
    root = cache_root or default_cache_root()
    # Chunking settings come from the index's own citeline.toml (if any) and CITELINE_* variables.
    settings = load_settings(index if index is not None else Path(root) / "_defaults", embedder=embedder)
    # (chunk_unstructured is left out: documents are staged as Markdown, which it never touches)
    chunking = f"{settings.chunk_tokens}:{settings.overlap_tokens}"
    key = cache_key(dataset_path, dataset.corpus, embedder, chunking)
    base = Path(root) / key
    location = str(index) if index is not None else str(base / "index")
    if is_url(location):  # a database: the completion marker lives in the cache, keyed by the URL
        digest = hashlib.sha256(redact_url(location).encode()).hexdigest()[:16]
        folder, marker = base / "db", base / f"eval-complete-{digest}.json"
        marker.parent.mkdir(parents=True, exist_ok=True)
    else:
        folder = Path(location)
        marker = folder / "eval-complete.json"
    kb = open_kb(location, embedder=embedder)
    built, embedded, started = False, 0, time.perf_counter()
    if not _complete(marker, key, len(dataset.corpus)):
        _check_reusable(kb, marker, key)
        built = True
        staging = base / "docs"
        staging.mkdir(parents=True, exist_ok=True)
        paths: list[Path] = []
        for i, (doc_id, doc) in enumerate(dataset.corpus.items()):
            path = staging / f"d{i:07d}.md"
            text = _staged_markdown(doc_id, doc)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
            paths.append(path)
        failed: list[tuple[str, str]] = []
        for lo in range(0, len(paths), batch):
            report = kb.add(paths[lo : lo + batch], progressive=progressive)
            embedded += report.chunks_embedded
            failed += report.failed
            if progress:
                progress("documents", len(paths[lo : lo + batch]))
        marker.write_text(
            json.dumps({"key": key, "documents": len(dataset.corpus), "failed": failed}), encoding="utf-8"
        )
    chunk_to_doc = {
        chunk_id: str(doc.metadata["beir_id"])
        for doc in kb.store.documents(Filter.admin())
        if doc.metadata.get("beir_id") is not None
        for chunk_id in kb.store.document_chunks(doc.id)
    }
    return EvalIndex(kb, folder, built, embedded, time.perf_counter() - started, chunk_to_doc)


def _check_reusable(kb: KnowledgeBase, marker: Path, key: str) -> None:
    """Refuse to mix another dataset (or the user's own documents) into an evaluation index."""
    if marker.is_file():
        try:
            other = json.loads(marker.read_text(encoding="utf-8")).get("key")
        except (OSError, ValueError):
            other = None
        if other != key:
            raise CitelineError(
                f"{kb.settings.index} holds the evaluation index of another dataset or embedder; "
                "pass another --index folder (or none, to use the cache)."
            )
    foreign = sum(d.metadata.get("beir_id") is None for d in kb.store.documents(Filter.admin()))
    if foreign:
        raise CitelineError(
            f"{kb.settings.index} already holds {foreign} documents that are not from an evaluation dataset; "
            "pass an empty or new --index folder."
        )


def _complete(marker: Path, key: str, documents: int) -> bool:
    if not marker.is_file():
        return False
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(data.get("key") == key and data.get("documents") == documents)


# --------------------------------------------------------------------------------------------
# Evaluation
# --------------------------------------------------------------------------------------------


def documents_by_best_chunk(chunk_ids: Sequence[str], chunk_to_doc: Mapping[str, str]) -> list[str]:
    """Collapse a chunk ranking to documents: each document at the rank of its best chunk."""
    return list(dict.fromkeys(chunk_to_doc[c] for c in chunk_ids if c in chunk_to_doc))


@dataclass
class StageResult:
    metrics: dict[str, float]
    latency_ms: dict[str, float]


@dataclass
class RetrievalReport(Jsonable):
    dataset: str
    split: str
    queries: int
    documents: int
    chunks: int
    embedder: str
    fusion: str
    alpha: float
    reranker: str
    rerank_depth: int
    depth: int
    index: dict[str, Any] = field(default_factory=dict)
    stages: dict[str, StageResult] = field(kw_only=True)
    #: how many queries were keyword-only (the dense side degraded), and the most common reasons
    #: why: {reason: how many queries}
    degraded_queries: int = 0
    degraded: dict[str, int] = field(default_factory=dict)
    #: the documents each stage ranked per query (``keep_runs``): kept on the object, not in the JSON
    runs: dict[str, dict[str, list[str]]] = field(
        default_factory=dict, repr=False, metadata=json_spec(omit=omit_always)
    )


def rerank_hits(reranker: Reranker | None, query: str, hits: Sequence[Hit], depth: int) -> list[Hit]:
    """The top ``depth`` hits reordered by the reranker, then the rest in their fused order."""
    if reranker is None or depth <= 0:
        return list(hits)
    return [*reranker.rerank(query, hits[:depth]), *hits[depth:]]


@dataclass
class QueryRuns:
    """What running a dataset's queries gave: document runs ({stage: {query id: doc ids}}),
    per-query latencies ({stage: [ms]}) and why queries were keyword-only ({query id: reason})."""

    runs: dict[str, dict[str, list[str]]]
    latency: dict[str, list[float]]
    degraded: dict[str, str]


def dense_ms(retrieval: Retrieval) -> float:
    """What the dense side of a retrieval took: embedding the query and searching, or, when it
    degraded, how long the retrieval waited for it (the keyword side ran meanwhile)."""
    t = retrieval.timings_ms
    if retrieval.degraded is None:
        return t["embed_query"] + t["dense"]
    return t["bm25"] + t.get("dense_wait", 0.0)


def run_queries(
    kb: KnowledgeBase,
    dataset: BeirDataset,
    chunk_to_doc: Mapping[str, str],
    *,
    fusion: str = "rrf",
    alpha: float = 0.5,
    reranker: Reranker | None = None,
    rerank_depth: int = 30,
    depth: int = DEFAULT_DEPTH,
    progress: Progress | None = None,
    on_query: Callable[[str, str, list[Hit]], None] | None = None,
) -> QueryRuns:
    """Document runs, per-query latencies and the queries that were keyword-only (QueryRuns).

    Each query is retrieved twice: once ``depth`` deep, for the metrics of the first stages, and
    once as the product retrieves (``top_k`` per stage, at least ``rerank_depth``), which is what
    the reranker reorders and what the latencies are measured on. The reranked run is the
    reranked candidates followed by the deep fused run's other documents, so its Recall@100 is
    comparable. ``on_query(qid, query, candidates)`` sees the product-depth candidates.
    """
    if fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got '{fusion}'")
    other = "convex" if fusion == "rrf" else "rrf"
    retriever = kb.components.retriever()
    rrf_k = kb.settings.rrf_k
    product_k = max(kb.settings.top_k, rerank_depth)
    runs: dict[str, dict[str, list[str]]] = {
        s: {} for s in ("bm25", "dense", "fused", f"fused_{other}", "reranked")
    }
    latency: dict[str, list[float]] = {s: [] for s in runs}
    degraded: dict[str, str] = {}
    for qid, query in dataset.queries.items():
        deep = retriever.retrieve(query, Filter.admin(), k=depth, fusion=fusion, rrf_k=rrf_k, alpha=alpha)
        if other == "convex":
            alt = convex_combination(dict(deep.lexical), dict(deep.dense), alpha)
        else:
            alt = reciprocal_rank_fusion([[c for c, _ in deep.lexical], [c for c, _ in deep.dense]], k=rrf_k)
        runs["bm25"][qid] = documents_by_best_chunk([c for c, _ in deep.lexical], chunk_to_doc)
        runs["dense"][qid] = documents_by_best_chunk([c for c, _ in deep.dense], chunk_to_doc)
        runs["fused"][qid] = documents_by_best_chunk([h.chunk.id for h in deep.hits], chunk_to_doc)
        runs[f"fused_{other}"][qid] = documents_by_best_chunk([c for c, _ in alt[:depth]], chunk_to_doc)

        started = time.perf_counter()
        live = retriever.retrieve(query, Filter.admin(), k=product_k, fusion=fusion, rrf_k=rrf_k, alpha=alpha)
        total = (time.perf_counter() - started) * 1000
        t0 = time.perf_counter()
        if other == "convex":
            convex_combination(dict(live.lexical), dict(live.dense), alpha)
        else:
            reciprocal_rank_fusion([[c for c, _ in live.lexical], [c for c, _ in live.dense]], k=rrf_k)
        alt_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        reranked = rerank_hits(reranker, query, live.hits[:rerank_depth], rerank_depth)
        rerank_ms = (time.perf_counter() - t0) * 1000
        runs["reranked"][qid] = list(
            dict.fromkeys(
                documents_by_best_chunk([h.chunk.id for h in reranked], chunk_to_doc) + runs["fused"][qid]
            )
        )
        why = deep.degraded or live.degraded
        if why is not None:
            degraded[qid] = why
        t, dense = live.timings_ms, dense_ms(live)
        latency["bm25"].append(t["bm25"])
        latency["dense"].append(dense)
        latency["fused"].append(total)
        # both searches, or (degraded) the keyword search and the wait for the dense side
        latency[f"fused_{other}"].append((t["bm25"] if live.degraded is None else 0.0) + dense + alt_ms)
        latency["reranked"].append(total + rerank_ms)
        if on_query is not None:
            on_query(qid, query, live.hits)
        if progress:
            progress("queries", 1)
    return QueryRuns(runs, latency, degraded)


def evaluate_retrieval(
    dataset: BeirDataset,
    dataset_path: str | Path,
    *,
    split: str = "test",
    embedder: str = "minilm-int8",
    index: str | Path | None = None,
    cache_root: Path | None = None,
    fusion: str = "rrf",
    alpha: float = 0.5,
    reranker: str = "none",
    rerank_depth: int = 30,
    depth: int = DEFAULT_DEPTH,
    metrics: Sequence[str] = DEFAULT_METRICS,
    progress: Progress | None = None,
    keep_runs: bool = False,
) -> RetrievalReport:
    """Build or reuse the dataset's index, run every query, and score each stage."""
    built = open_eval_index(
        dataset, dataset_path, embedder=embedder, index=index, cache_root=cache_root, progress=progress
    )
    kb = built.kb
    try:
        rr: Reranker | None = None
        if reranker != "none":
            from citeline.registry import registry

            rr = registry.create("reranker", reranker, kb.components)
        ran = run_queries(
            kb,
            dataset,
            built.chunk_to_doc,
            fusion=fusion,
            alpha=alpha,
            reranker=rr,
            rerank_depth=rerank_depth,
            depth=depth,
            progress=progress,
        )
        runs, latency = ran.runs, ran.latency
        if rr is None:
            del runs["reranked"], latency["reranked"]
        stages = {
            name: StageResult(
                metrics=evaluate(run, dataset.qrels, metrics),
                latency_ms={"p50": percentile(latency[name], 50), "p95": percentile(latency[name], 95)},
            )
            for name, run in runs.items()
        }
        return RetrievalReport(
            dataset=str(dataset_path),
            split=split,
            queries=len(dataset.queries),
            documents=len(dataset.corpus),
            chunks=kb.store.count_chunks(Filter.admin()),
            embedder=embedder,
            fusion=fusion,
            alpha=alpha,
            reranker=reranker,
            rerank_depth=rerank_depth,
            depth=depth,
            stages=stages,
            degraded_queries=len(ran.degraded),
            degraded=dict(Counter(ran.degraded.values()).most_common(5)),
            index={
                "folder": redact_url(str(built.kb.settings.index)),
                "built": built.built,
                "chunks_embedded": built.chunks_embedded,
                "ingest_seconds": round(built.ingest_seconds, 2),
            },
            runs=runs if keep_runs else {},
        )
    finally:
        kb.close()
