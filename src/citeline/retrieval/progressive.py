"""Dense search over an index that is being embedded progressively.

``citeline add --background`` writes each chunk with a vector of the fast static embedder
(``minilm-static``) and ``citeline embed`` fills in the index's own embedder's vectors later. Until
then a chunk is *pending*. Every chunk is searched in exactly one space: the index's embedder's
(``Store.vector_search``) when it has that vector, else the fast embedder's
(``Store.pending_vector_search``). The two spaces' cosines are never compared with each other:

* **rescoring** (``rescore_pending`` > 0, the default): the best ``rescore_pending`` pending chunks
  by fast vector are embedded with the index's embedder at query time, so their scores are
  cosines in the index's space, and they are merged by score into the full-vector list. The dense
  list is then one ranking in one space. The vectors computed are kept in memory (never written:
  searches only read), so a chunk is embedded at most once per process. Rescoring stops at half
  the dense side's latency budget (``dense_timeout_ms``); the pending chunks it did not reach join
  rank fusion as below, so a slow machine answers on time, with less of the gap closed.
* **rank fusion** (``rescore_pending`` = 0): the pending chunks' list joins reciprocal rank fusion
  as a list of its own, beside BM25's and the full-vector list: only ranks are fused.

Each hit records where its dense score came from (the trace's stages): ``dense`` alone, the index's
vectors; ``dense`` with ``rescored``, the index's embedder at query time (``rescored`` holds the fast
cosine and rank that picked it); ``dense_fast``, the fast vectors (rank fusion).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from citeline.embedding.base import Embedder
from citeline.index.base import Store
from citeline.models import StageScore
from citeline.retrieval.filters import Filter

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
    store: Store,
    fast: Callable[[str], Embedder],
    embedder: Embedder,
    query: str,
    query_vector: np.ndarray,
    dense: list[tuple[str, float]],
    flt: Filter,
    k: int,
    rescore: int,
    budget_ms: float = 0.0,
) -> tuple[list[tuple[str, float]], PendingSide]:
    """The dense list with the pending chunks merged in (rescoring) or beside it (rank fusion).

    ``fast`` makes the fast embedder from its name (the store names it); nothing is loaded or read
    when no chunk is pending. Rescoring stops once it has taken ``budget_ms`` (0: no limit); the
    pending chunks it did not reach are rank-fused."""
    side = PendingSide()
    name = store.pending_embedder()
    if name is None:
        return dense, side
    t = time.perf_counter()
    fast_embedder = fast(name)
    fast_vector = np.asarray(fast_embedder.embed([query]), dtype=np.float32)[0]
    found = store.pending_vector_search(fast_vector, flt, max(k, rescore))
    side.timings_ms["dense_pending"] = (time.perf_counter() - t) * 1000
    if not found:
        return dense, side
    if rescore <= 0:
        side.fast = found[:k]
        return dense, side
    t = time.perf_counter()
    picked = found[:rescore]
    resolved = store.chunks([c for c, _ in picked])
    picked = [(c, s) for c, s in picked if c in resolved]
    merged, asked = dict(dense), np.asarray(query_vector, dtype=np.float32)
    done = 0
    # A batch at a time, best first, within the budget: what is left joins rank fusion instead
    while done < len(picked) and (budget_ms <= 0 or (time.perf_counter() - t) * 1000 < budget_ms):
        part = picked[done : done + RESCORE_BATCH]
        vectors = CACHE.vectors(embedder, [resolved[c][0].index_text for c, _ in part])
        merged.update((c, float(v @ asked)) for (c, _), v in zip(part, vectors, strict=True))
        done += len(part)
    side.rescored = {c: (s, r) for r, (c, s) in enumerate(picked[:done], 1)}
    side.fast = picked[done:]  # cut by the budget (those below the rescoring depth are left out)
    side.timings_ms["rescore"] = (time.perf_counter() - t) * 1000
    return sorted(merged.items(), key=lambda cs: -cs[1])[:k], side
