"""Embedding chunks for ingestion: batches, retries with backoff, checks on what comes back, and
re-embedding a whole index with another embedder."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import numpy as np

from citeline.embedding.base import Embedder
from citeline.errors import CitelineError
from citeline.index.base import Store

Progress = Callable[[str, int], None]  # (event, amount), as citeline.ingest.pipeline.Progress


class EmbeddingError(CitelineError):
    """The embedder failed (after retries) or returned vectors that cannot be right."""


#: first pause before retrying a failed embedding batch; doubled for each further try
RETRY_BACKOFF_S = 0.2


def embed_checked(embedder: Embedder, texts: list[str], retries: int = 2) -> np.ndarray:
    """Vectors for ``texts``: a failing call is retried ``retries`` times with exponential backoff,
    and what comes back must be one finite vector of the embedder's dimension per text."""
    for attempt in range(retries + 1):
        try:
            vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
            if vectors.shape != (len(texts), embedder.dim):
                raise EmbeddingError(
                    f"the embedder '{embedder.name}' returned an array of shape {vectors.shape} for "
                    f"{len(texts)} texts of dimension {embedder.dim}"
                )
            if not np.isfinite(vectors).all():
                raise EmbeddingError(f"the embedder '{embedder.name}' returned vectors with NaN or infinity")
            return vectors
        except CitelineError:
            raise
        except Exception as exc:  # a model runtime error, out of memory, a remote embedder's network
            if attempt == retries:
                raise EmbeddingError(
                    f"the embedder '{embedder.name}' failed on a batch of {len(texts)} chunks "
                    f"({attempt + 1} tries): {type(exc).__name__}: {exc}; nothing of this document was written"
                ) from exc
            time.sleep(RETRY_BACKOFF_S * 2**attempt)
    raise AssertionError("unreachable")


def embed_batches(
    embedder: Embedder,
    items: list[tuple[str, str]],
    progress: Progress | None = None,
    batch: int = 64,
    retries: int = 2,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Embed (text hash, text) pairs a batch at a time: (hashes, vectors) per batch."""
    for lo in range(0, len(items), batch):
        part = items[lo : lo + batch]
        vectors = embed_checked(embedder, [t for _, t in part], retries)
        if progress:
            progress("chunks", len(part))
        yield [h for h, _ in part], vectors


def reembed(
    store: Store, new: Embedder, progress: Progress | None = None, *, swap: bool = True
) -> dict[str, object]:
    """Embed every chunk with another embedder side by side, then make it the index's in one swap
    (``swap=False``: only side by side, for a comparison to decide on the swap first)."""
    pending = store.all_text_hashes()
    have = store.cached_vectors([h for h, _ in pending], embedder=new.name)
    todo = [(h, t) for h, t in pending if h not in have]
    if max(new.count_tokens([t for _, t in todo]), default=0) > new.max_tokens:
        raise CitelineError(
            f"Some chunks are longer than '{new.name}' accepts ({new.max_tokens} tokens); re-add the "
            "documents with that embedder in a fresh index instead."
        )
    for hashes, vectors in embed_batches(new, todo, progress):
        store.add_vectors(new.name, dict(zip(hashes, vectors, strict=True)))
    if swap:
        store.swap_embedder(new.name, new.version, new.dim)
    return {"embedder": new.name, "chunks": len(pending), "embedded": len(todo)}


#: pending texts read per round of the background pass (embedded ``batch`` at a time, each batch
#: committed on its own: a kill loses at most the batch in flight)
PASS_READ = 1024
PASS_BATCH = 64


def embed_pending(
    store: Store,
    embedder: Embedder,
    progress: Progress | None = None,
    retries: int = 2,
    stop: Callable[[], bool] | None = None,
) -> dict[str, object]:
    """The background pass of progressive indexing: the index's embedder's vector for every
    pending chunk text, a batch per transaction, so it can be killed at any moment and run again
    (it resumes with what is still pending; a committed vector is never computed again). When
    nothing is pending any more the fast vectors are dropped. ``progress``: ("pending", how many
    at the start), then ("chunks", n) per batch. ``stop``: asked between batches (a server
    shutting down)."""
    info = store.embedder_info()
    if info is None:  # nothing was ever added
        return {"embedder": embedder.name, "embedded": 0, "finished": True, "seconds": 0.0}
    if info.name != embedder.name:
        raise CitelineError(f"The index's embedder is {info.name}, not {embedder.name}.")
    embedded, started = 0, time.perf_counter()
    if progress and store.pending_embedder() is not None:
        progress("pending", int((store.stats().get("pending_vectors") or {}).get("chunks", 0)))
    while not (stop and stop()):
        todo = store.unembedded(PASS_READ)
        if not todo:
            break
        todo.sort(key=lambda ht: len(ht[1]))  # similar lengths in each call: little padding
        for hashes, vectors in embed_batches(embedder, todo, progress, PASS_BATCH, retries):
            store.add_vectors(embedder.name, dict(zip(hashes, vectors, strict=True)))
            embedded += len(hashes)
            if stop and stop():
                break
    finished = store.finish_pending() if not (stop and stop()) else False
    return {
        "embedder": embedder.name,
        "embedded": embedded,
        "finished": finished,
        "seconds": round(time.perf_counter() - started, 3),
    }
