"""Choose the static embedder's post-processing on SciFact *train* (the test split is left for the
figures): dense nDCG@10 of each variant of PCA dimensions and token weighting, from the cached
forward passes of training/distill_static.py.

    python training/static_variants.py --index ~/.cache/citeline/i37/scifact-static

``--index``: any index of the whole SciFact corpus (its chunks are what is scored; documents by
their best chunk, as `citeline eval retrieval` scores them). Runs with the product's environment
(numpy and tokenizers); PCA as model2vec computes it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from citeline.eval.beir import load_beir
from citeline.eval.metrics import ndcg_at_k
from citeline.filters import Filter
from citeline.kb import open_kb
from training.distill_static import CACHE, MINILM_TOKENIZER, by_minilm_id


def pca(table: np.ndarray, dims: int | None) -> np.ndarray:
    centred = table - table.mean(axis=0)
    if dims is None:
        return centred
    _values, vectors = np.linalg.eigh(centred.T @ centred / (len(table) - 1))
    return np.asarray(centred @ vectors[:, ::-1][:, :dims], dtype=np.float32)


def rank_weights(n: int, sif: float) -> np.ndarray:
    """model2vec's: Zipf's law over the vocabulary's order."""
    inv_rank = 1 / np.arange(2, n + 2)
    return sif / (sif + inv_rank / inv_rank.sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--beir", default="/work/shared/datasets/scifact")
    ap.add_argument("--split", default="train")
    args = ap.parse_args()

    from tokenizers import Tokenizer

    raw = np.load(CACHE / "raw-vectors.npy")
    tokens = json.loads((CACHE / "raw-tokens.json").read_text())["tokens"]
    data = load_beir(args.beir, args.split)
    kb = open_kb(str(args.index))
    ids = [c for d in kb.store.documents(Filter.admin()) for c in kb.store.document_chunks(d.id)]
    resolved = kb.store.chunks(ids)
    chunk_doc = [str(resolved[c][1].metadata["beir_id"]) for c in ids if c in resolved]
    texts = [resolved[c][0].text for c in ids if c in resolved]
    tokenizer = Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    chunk_ids = [e.ids[:256] for e in tokenizer.encode_batch(texts)]
    query_ids = {q: tokenizer.encode(t).ids for q, t in data.queries.items() if q in data.qrels}
    docs = np.array(chunk_doc)
    print(f"{len(texts)} chunks, {len(query_ids)} {args.split} queries")

    def score(table: np.ndarray) -> float:
        def embed(seqs: list[list[int]]) -> np.ndarray:
            out = np.stack([table[s].sum(axis=0) for s in seqs])
            return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)

        chunks = embed(chunk_ids)
        qids = list(query_ids)
        queries = embed([query_ids[q] for q in qids])
        total = 0.0
        for q, row in zip(qids, queries @ chunks.T, strict=True):
            order = np.argsort(-row)[:200]
            ranking = list(dict.fromkeys(docs[order]))[:10]
            total += ndcg_at_k(ranking, data.qrels[q], 10)
        return total / len(qids)

    for dims in (128, 256, None):
        reduced = pca(raw, dims)
        for sif in (1e-3, 1e-4, 1e-5, None):
            weights = rank_weights(len(raw), sif) if sif else np.ones(len(raw))
            table, silent = by_minilm_id(reduced * weights[:, None], tokens)
            table[silent] = 0
            started = time.perf_counter()
            print(
                f"dims {dims} sif {sif}: dense nDCG@10 {score(table):.4f} ({time.perf_counter() - started:.0f} s)"
            )


if __name__ == "__main__":
    main()
