"""The measurement behind the vector engine's library (README: Libraries and why): faiss IVF (flat
lists) against usearch HNSW on N vectors (default 100k) made like bench_pg's synthetic ones (the
cached 1,000 real MiniLM vectors plus N(0, 0.05^2) noise, renormalised), one thread each: build
time, query time and recall@10 against exact search, and faiss with a 10% id-bitmap filter.

Run: .venv/bin/python benchmarks/bench_engine_choice.py [N]   (needs `make bench-pg` or
bench_engines.py to have cached bench_pg_vectors_1000.npy). Measured on 2 shared cores, 100k:
faiss IVF build 64.5 s, 1.19 ms at nprobe 16 (recall 1.0 on these clustered vectors); usearch HNSW
(M=16, ef_add 128, ef_search 64) build 312 s, 2.67 ms (recall 0.985).
"""

import sys
import time

import faiss
import numpy as np
from usearch.index import Index

from citeline.settings import cache_root

faiss.omp_set_num_threads(1)
head = np.load(cache_root() / "bench" / "bench_pg_vectors_1000.npy")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
rng = np.random.default_rng(7)
X = head[np.arange(N) % len(head)] + rng.normal(0, 0.05, (N, head.shape[1]))
X = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
Q = head[rng.choice(len(head), 100)] + rng.normal(0, 0.05, (100, head.shape[1]))
Q = (Q / np.linalg.norm(Q, axis=1, keepdims=True)).astype(np.float32)
d = X.shape[1]


def exact(q, allowed=None):
    s = X @ q
    if allowed is not None:
        s = np.where(allowed, s, -9)
    return set(np.argpartition(-s, 10)[:10].tolist())


truth = [exact(q) for q in Q]
t = time.perf_counter()
[X @ q for q in Q[:20]]
print("numpy exact ms", (time.perf_counter() - t) / 20 * 1000)
nlist = int(4 * np.sqrt(N))
t = time.perf_counter()
quant = faiss.IndexFlatIP(d)
ivf = faiss.IndexIVFFlat(quant, d, nlist, faiss.METRIC_INNER_PRODUCT)
sample = X[rng.choice(N, min(N, 40 * nlist), replace=False)]
ivf.train(sample)
ivf.add_with_ids(X, np.arange(N, dtype=np.int64))
print("faiss ivfflat build s", round(time.perf_counter() - t, 1), "nlist", nlist)
for nprobe in (8, 16, 32, 64):
    ivf.nprobe = nprobe
    t = time.perf_counter()
    rec = []
    for q, tr in zip(Q, truth, strict=False):
        _, ids = ivf.search(q[None], 10)
        rec.append(len(set(ids[0].tolist()) & tr) / 10)
    print(
        "faiss nprobe",
        nprobe,
        "ms",
        round((time.perf_counter() - t) / len(Q) * 1000, 3),
        "recall",
        np.mean(rec),
    )
# filtered 10%
allowed = rng.random(N) < 0.1
bm = np.packbits(allowed, bitorder="little")
sel = faiss.IDSelectorBitmap(N, faiss.swig_ptr(bm))
for nprobe in (16, 64, 128):
    p = faiss.SearchParametersIVF(sel=sel, nprobe=nprobe)
    t = time.perf_counter()
    rec = []
    for q in Q:
        _, ids = ivf.search(q[None], 10, params=p)
        rec.append(len(set(ids[0].tolist()) & exact(q, allowed)) / 10)
    print(
        "faiss 10% filter nprobe",
        nprobe,
        "ms",
        round((time.perf_counter() - t) / len(Q) * 1000, 3),
        "recall",
        np.mean(rec),
    )
t = time.perf_counter()
u = Index(ndim=d, metric="cos", dtype="f32", connectivity=16, expansion_add=128, expansion_search=64)
u.add(np.arange(N), X, threads=1)
print("usearch hnsw build s", round(time.perf_counter() - t, 1))
t = time.perf_counter()
rec = []
for q, tr in zip(Q, truth, strict=False):
    m = u.search(q, 10)
    rec.append(len(set(m.keys.tolist()) & tr) / 10)
print("usearch ms", round((time.perf_counter() - t) / len(Q) * 1000, 3), "recall", np.mean(rec))
