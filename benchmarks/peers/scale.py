"""Query latency at a larger size (``run.py --scale-chunks N``): every tool loaded with the same
N pre-embedded chunks, then the same queries, each tool in its own process.

Real text on the keyword side: SciFact abstracts (then PubMedQA contexts) cut into windows of 3
sentences, stride 1, as benchmarks/bench_pg.py does. Vectors: the real MiniLM vectors of the
main run's chunks (from citeline's index of the slice, no embedding here), cycled, plus Gaussian
noise (sigma 0.05 per dimension) and renormalised: synthetic vectors, labelled as such. (A
--scale-only run takes them from whatever citeline index the --work folder holds.) Loading
is not compared (citeline: Store.replace_documents in batches of 50 documents; LlamaIndex:
VectorStoreIndex over nodes that already carry their embedding, BM25Retriever built over them;
Haystack: DocumentWriter of documents that carry theirs); queries go through the same
retrievers as the main run, query embedding included (and reported apart).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

PER_DOC = 10


def texts(datasets: Path, limit: int) -> list[tuple[str, str]]:
    """(title, 3-sentence window) pairs of real text, up to ``limit``."""
    import blingfire

    sources: list[tuple[str, str]] = []
    with gzip.open(datasets / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        sources += [(d.get("title", ""), d["text"]) for d in map(json.loads, f)]
    pubmed = datasets / "pubmedqa" / "ori_pqal.json.gz"
    if pubmed.is_file():
        with gzip.open(pubmed, "rt", encoding="utf-8") as f:
            sources += [(v["QUESTION"], " ".join(v["CONTEXTS"])) for v in json.load(f).values()]
    out: list[tuple[str, str]] = []
    copy = 0
    while len(out) < limit:
        for title, text in sources:
            sentences = [s for s in blingfire.text_to_sentences(text).split("\n") if s.strip()]
            for i in range(max(1, len(sentences) - 2)):
                out.append((title if not copy else f"{title} ({copy})", " ".join(sentences[i : i + 3])))
                if len(out) >= limit:
                    return out
        copy += 1
    return out


def prepare(work: Path, datasets: Path, n: int) -> dict[str, Any]:
    """Write work/scale.jsonl (key, text) and work/scale.npy (vectors) for ``n`` chunks."""
    from shared import text_hash

    from citeline.filters import Filter
    from citeline.kb import open_kb

    kb = open_kb(str(work / "citeline-index"))
    hashes = []
    for doc in kb.store.documents(Filter.admin()):
        hashes += [
            text_hash(c.index_text) for c, _ in kb.store.chunks(kb.store.document_chunks(doc.id)).values()
        ]
    found = kb.store.cached_vectors(hashes)
    kb.close()
    head = np.stack([found[h] for h in hashes if h in found]).astype(np.float32)
    rng = np.random.default_rng(7)
    vecs = head[np.arange(n) % len(head)] + rng.normal(0, 0.05, (n, head.shape[1]))
    vecs = (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)
    np.save(work / "scale.npy", vecs)
    with (work / "scale.jsonl").open("w", encoding="utf-8") as f:
        for i, (title, body) in enumerate(texts(datasets, n)):
            f.write(
                json.dumps({"key": f"s{i // PER_DOC:07d}#{i % PER_DOC}", "title": title, "body": body}) + "\n"
            )
    return {"chunks": n, "real_vectors_cycled": len(head), "noise_sigma": 0.05}


def load_rows(work: Path) -> tuple[list[dict[str, str]], np.ndarray]:
    rows = [json.loads(line) for line in (work / "scale.jsonl").read_text(encoding="utf-8").splitlines()]
    return rows, np.load(work / "scale.npy")


def index_text(row: dict[str, str]) -> str:
    return f"{row['title']}\n\n{row['body']}"


def citeline_scale(work: Path) -> tuple[Any, Any]:
    """A new citeline index holding the scale corpus, written through the Store API."""
    from shared import text_hash

    from citeline.index.base import DocumentWrite
    from citeline.kb import open_kb
    from citeline.types import Chunk, Document, document_id_for

    rows, vecs = load_rows(work)
    folder = work / "citeline-scale-index"
    if folder.exists():
        shutil.rmtree(folder)
    kb = open_kb(str(folder))
    kb.embedder  # noqa: B018 - binds the embedder to the new index
    writes = []
    for lo in range(0, len(rows), PER_DOC):
        source = f"scale/{lo // PER_DOC:07d}.md"
        doc_id = document_id_for("default", source)
        text, chunks, pos, vec = "", [], 0, {}
        for j, row in enumerate(rows[lo : lo + PER_DOC]):
            body, itext = row["body"], index_text(row)
            chunks.append(
                Chunk(
                    f"{doc_id[:12]}-{j:012d}",
                    doc_id,
                    j,
                    pos,
                    pos + len(body),
                    body,
                    itext,
                    (row["title"],),
                    "paragraph",
                )
            )
            vec[text_hash(itext)] = vecs[lo + j]
            text += body + "\n\n"
            pos += len(body) + 2
        doc = Document(doc_id, source, rows[lo]["title"][:80], "markdown", f"h{lo}", len(text), 0.0, None)
        writes.append(DocumentWrite(doc, text, chunks, vec))
    for lo in range(0, len(writes), 50):
        kb.store.replace_documents(writes[lo : lo + 50])
    return kb, rows
