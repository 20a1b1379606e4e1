"""Dense search over an index that is being embedded progressively.

``citeline add --background`` writes each chunk with a vector of the fast static embedder
(``minilm-static``) and ``citeline embed`` fills in the index's own embedder's vectors later. Until
then a chunk is *pending*. Every chunk is searched in exactly one space: the index's embedder's
(``Store.vector_search``) when it has that vector, else the fast embedder's
(``Store.pending_vector_search``). The two spaces' cosines are never compared with each other:

* **rescoring** (``rescore_pending`` > 0, the default): the fused top candidates (BM25's list and
  the pending list, merged by RRF; the first ``rescore_pending`` that the full-vector list lacks) are
  scored in the index's space: with their stored full vector, or, pending, embedded with the index's
  embedder at query time. The dense list is then one ranking in one space, fused with BM25 as
  always. Rescoring the pending list alone was not enough: on SciFact the fast embedder's top 30
  miss too much (fused nDCG@10 0.634 against BM25 alone's 0.687, benchmarks/results/progressive.md).
  The vectors computed are kept in memory (never written: searches only read), so a chunk is
  embedded at most once per process. Rescoring stops at half the dense side's latency budget
  (``dense_timeout_ms``); the pending chunks it did not reach are rank-fused as below, so a slow
  machine answers on time, with less of the gap closed.
* **rank fusion** (``rescore_pending`` = 0): the pending chunks' list joins reciprocal rank fusion
  as a list of its own, beside BM25's and the full-vector list: only ranks are fused.

Each hit records where its dense score came from (the trace's stages): ``dense`` alone, the index's
vectors; ``dense`` with ``rescored``, the index's embedder at query time (``rescored`` holds the fast
cosine, 0 when BM25 proposed it, and its rank among the chunks embedded); ``dense_fast``, the fast
vectors (rank fusion).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from citeline.embedding.base import Embedder
from citeline.filters import Filter
from citeline.index.base import Store
from citeline.retrieval.fusion import reciprocal_rank_fusion
from citeline.types import StageScore, text_hash

#: vectors computed at query time kept per process (384 floats each: 6 MB)
CACHE_SIZE = 4096
#: pending chunks embedded per call when rescoring (the budget is checked between calls)
RESCORE_BATCH = 8


@dataclass
class PendingSide:
    """What the pending chunks added to one retrieval."""

    #: the fast embedder's list (rank fusion), empty when rescored
    fast: list[tuple[str, float]] = field(default_factory=list)
    #: chunk id -> (fast cosine, fast rank) of the chunks rescored into the dense list
    rescored: dict[str, tuple[float, int]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def stages(self) -> dict[str, dict[str, StageScore]]:
        return {
            "dense_fast": {c: StageScore(s, r) for r, (c, s) in enumerate(self.fast, 1)},
            "rescored": {c: StageScore(s, r) for c, (s, r) in self.rescored.items()},
        }


class _VectorCache:
    """The index's embedder's vectors computed at query time, by (embedder version, text)."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def vectors(self, embedder: Embedder, texts: list[str]) -> np.ndarray:
        version = getattr(embedder, "version", embedder.name)
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if (version, t) not in self._items]
        if missing:
            computed = np.asarray(embedder.embed(missing), dtype=np.float32)
            with self._lock:
                for text, vector in zip(missing, computed, strict=True):
                    self._items[(version, text)] = vector
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        with self._lock:
            found = [self._items.get((version, t)) for t in texts]
        if any(v is None for v in found):  # evicted meanwhile by another thread: compute again
            return np.asarray(embedder.embed(texts), dtype=np.float32)
        return np.stack([v for v in found if v is not None]) if found else np.zeros((0, embedder.dim))


CACHE = _VectorCache()


def pending_side(
    store: Store, fast: Callable[[str], Embedder], query: str, flt: Filter, k: int
) -> PendingSide:
    """The pending chunks' own list, by the fast embedder's vectors (``fast`` makes it from the
    name the store gives); nothing is loaded or read when no chunk is pending."""
    side = PendingSide()
    name = store.pending_embedder()
    if name is None:
        return side
    t = time.perf_counter()
    fast_vector = np.asarray(fast(name).embed([query]), dtype=np.float32)[0]
    side.fast = store.pending_vector_search(fast_vector, flt, k)
    side.timings_ms["dense_pending"] = (time.perf_counter() - t) * 1000
    return side


@dataclass(frozen=True)
class Rescorer:
    """Scores the fused top candidates the dense list lacks in the index's space (rescoring)."""

    store: Store
    embedder: Embedder
    #: how many candidates (``rescore_pending``)
    depth: int
    rrf_k: int
    #: rescoring stops once it has taken this long (0: no limit)
    budget_ms: float = 0.0

    def dense(
        self,
        query_vector: np.ndarray,
        lexical: list[tuple[str, float]],
        dense: list[tuple[str, float]],
        side: PendingSide,
    ) -> list[tuple[str, float]]:
        """The dense list with the candidates scored in: the first ``depth`` of BM25's list and the
        pending list fused (RRF) that the dense list does not hold. A candidate whose text has its
        full vector stored is scored with it; the others (pending) are embedded now, a batch at a
        time, best first, within the budget. ``side.rescored`` gets those embedded; ``side.fast``
        keeps the pending chunks the budget left out, for rank fusion."""
        t = time.perf_counter()
        held = dict(dense)
        order = reciprocal_rank_fusion([[c for c, _ in lexical], [c for c, _ in side.fast]], k=self.rrf_k)
        picked = [c for c, _ in order if c not in held][: self.depth]
        resolved = self.store.chunks(picked)
        picked = [c for c in picked if c in resolved]
        hashes = {c: text_hash(resolved[c][0].index_text) for c in picked}
        stored = self.store.cached_vectors(set(hashes.values()))
        asked = np.asarray(query_vector, dtype=np.float32)
        held.update((c, float(stored[hashes[c]] @ asked)) for c in picked if hashes[c] in stored)
        pending = [c for c in picked if hashes[c] not in stored]
        fast_scores = dict(side.fast)
        done, budget = 0, self.budget_ms
        while done < len(pending) and (budget <= 0 or (time.perf_counter() - t) * 1000 < budget):
            part = pending[done : done + RESCORE_BATCH]
            vectors = CACHE.vectors(self.embedder, [resolved[c][0].index_text for c in part])
            held.update((c, float(v @ asked)) for c, v in zip(part, vectors, strict=True))
            done += len(part)
        side.rescored = {c: (fast_scores.get(c, 0.0), r) for r, c in enumerate(pending[:done], 1)}
        left = set(pending[done:])
        side.fast = [(c, s) for c, s in side.fast if c in left]  # the budget's leftovers
        side.timings_ms["rescore"] = (time.perf_counter() - t) * 1000
        return sorted(held.items(), key=lambda cs: -cs[1])
