"""Semantic chunking vs sentence windows for PDFs with no usable structure.

Builds flat PDFs (no outline, one font size, no titles) from SciFact abstracts: each PDF
holds --per-pdf abstracts in a seeded order, either as one running paragraph ("flow",
the text-dump case) or one paragraph per abstract ("paragraphs"). Both are ingested
through the product pipeline with ``chunk_unstructured`` = windows and = semantic, and
every SciFact test query is searched (fused BM25 + dense). Each chunk is labelled with
the abstract it overlaps most, so the scores are about where chunks are cut:

- nDCG@10: abstracts ranked by their best chunk, against SciFact's qrels;
- coverage@5: share of each relevant abstract's characters inside the top 5 chunks;
- purity@5: share of the top 5 chunks' characters that belong to a relevant abstract;
- chunks, ingest seconds, wall and CPU (semantic compares every sentence gap at ingest).

A mode "semantic/SIMILARITY" cuts topics with another way of comparing the two sides of a
sentence gap (``ChunkingOptions.similarity``): pairs (each two-sentence side embedded: what
semantic does), sentences (each sentence embedded once, a side the sum of two), heads (only
the first words of each sentence embedded), lexical (TF-IDF cosine, no embedding: what lexical
does). benchmarks/results/semantic_chunking_variants.json came from

    .venv/bin/python benchmarks/bench_semantic_chunking.py [--queries 300] [--distractors 500]
    .venv/bin/python benchmarks/bench_semantic_chunking.py --queries 300 --distractors 100 \
        --layouts flow --modes lexical,semantic,windows,semantic/sentences,semantic/heads
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import re
import tempfile
import time
import unicodedata
from pathlib import Path
from xml.sax.saxutils import escape

from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import ParagraphStyle
from reportlab.platypus import Paragraph, SimpleDocTemplate

import citeline
import citeline.ingest.pipeline as pipeline
from citeline.eval.beir import BeirDataset, fixed_slice, load_beir
from citeline.eval.metrics import mean, ndcg_at_k
from citeline.filters import Filter

ROOT = Path(__file__).resolve().parents[1]
STYLE = ParagraphStyle("body", fontName="Helvetica", fontSize=10, leading=13, spaceAfter=0)


def ascii_text(text: str) -> str:
    """The standard PDF fonts cover Latin-1 only; anything else would extract as garbage."""
    folded = unicodedata.normalize("NFKD", text)
    return " ".join("".join(c for c in folded if ord(c) < 256 and not unicodedata.combining(c)).split())


def build_pdfs(data: BeirDataset, out: Path, per_pdf: int, layout: str, seed: int) -> dict[str, list[str]]:
    """Write the PDFs; return file name -> the abstract ids it holds, in order."""
    ids = sorted(data.corpus)
    random.Random(seed).shuffle(ids)
    layouts: dict[str, list[str]] = {}
    for n, lo in enumerate(range(0, len(ids), per_pdf)):
        group = [i for i in ids[lo : lo + per_pdf] if ascii_text(data.corpus[i].text)]
        texts = [escape(ascii_text(data.corpus[i].text)) for i in group]
        flowables = (
            [Paragraph(" ".join(texts), STYLE)]
            if layout == "flow"
            else [Paragraph(t, ParagraphStyle("p", parent=STYLE, spaceAfter=8)) for t in texts]
        )
        name = f"flat-{n:04d}.pdf"
        SimpleDocTemplate(str(out / name), pagesize=LETTER, title="", author="").build(flowables)
        layouts[name] = group
    return layouts


def locate(text: str, abstracts: list[str]) -> list[tuple[int, int]] | None:
    """Each abstract's span in the stored text (it runs up to where the next one starts)."""
    starts, pos = [], 0
    for abstract in abstracts:
        words = ascii_text(abstract).split()[:8]
        pattern = r"\s*".join(re.escape(w) for w in words)
        m = re.compile(pattern).search(text, pos)
        if m is None:
            return None
        starts.append(m.start())
        pos = m.end()
    return list(zip(starts, [*starts[1:], len(text)], strict=True))


def run_mode(data: BeirDataset, pdf_dir: Path, layouts: dict[str, list[str]], mode: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        # "windows:120" = sentence windows with a 120-token target (a control for chunk size);
        # "semantic/lexical" = semantic chunking with another gap similarity
        name, _, tokens = mode.partition(":")
        name, _, similarity = name.partition("/")
        sizes = {"chunk_tokens": int(tokens)} if tokens else {}
        make_chunker = pipeline.make_chunker
        if similarity:

            def with_similarity(embedder, settings):  # type: ignore[no-untyped-def]
                chunker = make_chunker(embedder, settings)
                chunker.options = dataclasses.replace(chunker.options, similarity=similarity)
                return chunker

            pipeline.make_chunker = with_similarity
        try:
            kb = citeline.open(
                Path(tmp) / "index", create=True, chunk_unstructured=name, trace=False, **sizes
            )
            c0, t0 = time.process_time(), time.perf_counter()
            report = kb.add([pdf_dir])
            ingest_s, ingest_cpu_s = time.perf_counter() - t0, time.process_time() - c0
        finally:
            pipeline.make_chunker = make_chunker
        assert not report.failed, report.failed
        spans: dict[str, list[tuple[str, int, int]]] = {}
        missing = 0
        for doc in kb.store.documents(Filter.admin()):
            name = Path(doc.source).name
            found = locate(kb.store.document_text(doc.id), [data.corpus[i].text for i in layouts[name]])
            if found is None:
                missing += 1
                continue
            spans[doc.id] = [(i, a, b) for i, (a, b) in zip(layouts[name], found, strict=True)]
        where = {i: (doc_id, a, b) for doc_id, parts in spans.items() for i, a, b in parts}
        n_chunks = kb.store.count_chunks(Filter.admin())
        mean_tokens = kb.store.conn.execute("SELECT AVG(token_count) FROM chunks").fetchone()[0]
        ndcg, coverage, purity = [], [], []
        for qid, query in data.queries.items():
            hits = kb.retrieve(query, Filter.admin(), k=30).hits
            labelled = []
            for h in hits:
                parts = spans.get(h.chunk.document_id, [])
                overlaps = [(min(b, h.chunk.end) - max(a, h.chunk.start), i, a, b) for i, a, b in parts]
                best = max(overlaps, default=(0, "", 0, 0))
                labelled.append((best[1], h.chunk.start, h.chunk.end, h.chunk.document_id))
            ranking: list[str] = []
            for label, *_ in labelled:
                if label and label not in ranking:
                    ranking.append(label)
            gold = {d: g for d, g in data.qrels[qid].items() if g > 0}
            ndcg.append(ndcg_at_k({d: 1.0 / (r + 1) for r, d in enumerate(ranking)}, gold, 10))
            top = labelled[:5]
            covered, inside = [], 0
            for i in gold:
                if i not in where:
                    continue
                doc_id, a, b = where[i]
                mask = bytearray(b - a)
                for _, s, e, d in top:
                    lo, hi = max(a, s), min(b, e)
                    if d == doc_id and hi > lo:
                        mask[lo - a : hi - a] = b"\x01" * (hi - lo)
                        inside += hi - lo
                covered.append(sum(mask) / max(1, b - a))
            total = sum(e - s for _, s, e, _ in top)
            coverage.append(mean(covered) if covered else 0.0)
            purity.append(inside / total if total else 0.0)
        kb.close()
    return {
        "ndcg@10": round(mean(ndcg), 4),
        "coverage@5": round(mean(coverage), 4),
        "purity@5": round(mean(purity), 4),
        "chunks": n_chunks,
        "mean_chunk_tokens": round(float(mean_tokens or 0), 1),
        "ingest_s": round(ingest_s, 1),
        "ingest_cpu_s": round(ingest_cpu_s, 1),
        "chunk_s": round(report.seconds["chunk"], 1),
        "documents_unlocated": missing,
        # per query, in the dataset's order: for paired comparisons between modes
        "ndcg@10_per_query": [round(x, 4) for x in ndcg],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--beir", default=str(ROOT.parent / "shared" / "datasets" / "scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--distractors", type=int, default=500)
    ap.add_argument("--per-pdf", type=int, default=8)
    ap.add_argument("--layouts", default="flow,paragraphs")
    ap.add_argument(
        "--modes", default="windows,lexical,semantic", help='e.g. "windows,lexical,semantic,windows:120"'
    )
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args()
    data = fixed_slice(load_beir(args.beir, args.split), args.queries, args.distractors, args.seed)
    print(f"{len(data.queries)} queries, {len(data.corpus)} abstracts, {args.per_pdf} per PDF")
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layout in args.layouts.split(","):
            pdf_dir = Path(tmp) / layout
            pdf_dir.mkdir()
            layouts = build_pdfs(data, pdf_dir, args.per_pdf, layout, args.seed)
            for mode in args.modes.split(","):
                r = run_mode(data, pdf_dir, layouts, mode)
                results.setdefault(layout, {})[mode] = r
                shown = {k: v for k, v in r.items() if not k.endswith("_per_query")}
                print(
                    f"{layout:<11} {mode:<18} " + "  ".join(f"{k} {v}" for k, v in shown.items()), flush=True
                )
    if args.out:
        Path(args.out).write_text(json.dumps({"args": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
