"""What every peer pipeline shares: citeline's own ONNX embedder and the exported chunks.

The peers run in their own environment (benchmarks/peers/.venv, pinned in requirements.txt).
citeline's source is put on sys.path so that they embed with exactly the embedder citeline
uses (src/citeline/embedding/onnx.py: all-MiniLM-L6-v2 int8, same tokenizer, same batching and
onnxruntime threads), and they index exactly the chunks citeline made of the corpus
(``index_text``: the context prefix and the chunk, what citeline embeds and keyword-indexes).
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

#: candidates per retrieval stage and in the fused list, for every tool (citeline's top_k default)
TOP_K = 30
#: re-adds of the unchanged corpus per tool in new processes (updates.py); the median is reported
READDS = 3
#: re-adds in the process that built the index: a few milliseconds each for some tools, where one
#: garbage collection or scheduler hiccup moves a median of three; fewer (at least READDS) once they
#: have taken SAME_PROCESS_BUDGET_S together (a tool that re-reads everything)
SAME_PROCESS_READDS = 9
SAME_PROCESS_BUDGET_S = 60.0


def same_process_readds(add: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``add`` run SAME_PROCESS_READDS times (or READDS, past the time budget): the median run."""
    runs: list[dict[str, Any]] = []
    while len(runs) < SAME_PROCESS_READDS:
        runs.append(add())
        if len(runs) >= READDS and sum(r["seconds"] for r in runs) > SAME_PROCESS_BUDGET_S:
            break
    return median_run(runs)


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median wall time, with every run's wall seconds beside it (``runs_s``)."""
    ordered = sorted(runs, key=lambda r: r["seconds"])
    return {**ordered[len(ordered) // 2], "runs_s": [r["seconds"] for r in runs]}


def citeline_embedder() -> Any:
    """The embedder citeline builds by default (``minilm-int8``), built the same way."""
    from citeline.embedding.onnx import minilm_int8

    return minilm_int8()


@dataclass(frozen=True)
class ChunkRow:
    key: str  # "<beir id>#<ordinal>": stable across tools
    text: str  # citeline's index_text


@dataclass(frozen=True)
class SourceDoc:
    """One corpus file as citeline read it: its path, BEIR id, content hash and chunks."""

    source: str
    beir_id: str
    file_hash: str
    text: str
    chunks: tuple[ChunkRow, ...]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_docs(rows: list[dict[str, Any]]) -> list[SourceDoc]:
    return [
        SourceDoc(
            source=r["source"],
            beir_id=r["beir_id"],
            file_hash=r["file_hash"],
            text=r["text"],
            chunks=tuple(ChunkRow(c["key"], c["text"]) for c in r["chunks"]),
        )
        for r in rows
    ]


#: what the one-file edit appends to the edited file (citeline's side and the peers' alike)
EDIT_SENTENCE = " This abstract was edited for the one-file edit benchmark."
EDITED_FILE = "d0000000.md"


def chunk_table(rows: list[dict[str, Any]]) -> dict[tuple[str, str], SourceDoc]:
    """(file name, content hash) -> that version of the file with citeline's chunks of it."""
    return {(d.source, d.file_hash): d for d in load_docs(rows)}


def read_corpus(folder: Path, table: dict[tuple[str, str], SourceDoc]) -> list[SourceDoc]:
    """Read every corpus file from disk (timed with the ingest, as a user's loader would), hash
    it, and pair it with citeline's chunks of exactly that content."""
    docs = []
    for path in sorted(folder.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        docs.append(table[(path.name, text_hash(text))])
    return docs


def edit_file(path: Path) -> str:
    """Append EDIT_SENTENCE to ``path``; returns the original text (to restore it)."""
    original = path.read_text(encoding="utf-8")
    path.write_text(original.rstrip("\n") + EDIT_SENTENCE + "\n", encoding="utf-8")
    return original


def time_embeddings(embedder: Any) -> dict[str, float]:
    """Count the seconds and texts ``embedder.embed`` takes from now on (wraps the instance's method)."""
    stats = {"seconds": 0.0, "texts": 0.0}
    inner = embedder.embed

    def embed(texts: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(texts)
        finally:
            stats["seconds"] += time.perf_counter() - t
            stats["texts"] += len(texts)

    embedder.embed = embed
    return stats


class Clock:
    """Wall-clock and process CPU seconds (every thread of this process: onnxruntime's too)."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def lap(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def query_loop(
    search: Any, queries: dict[str, str], embed_stats: dict[str, float], warmup: int = 3
) -> dict[str, Any]:
    """Run every query once (after ``warmup`` untimed ones): results, wall, CPU and embedding ms."""
    items = list(queries.items())
    for _qid, q in items[:warmup]:
        search(q)
    runs: dict[str, list[str]] = {}
    wall: list[float] = []
    cpu: list[float] = []
    embed: list[float] = []
    for qid, q in items:
        before = embed_stats["seconds"]
        clock = Clock()
        runs[qid] = search(q)
        w, c = clock.lap()
        wall.append(w * 1000)
        cpu.append(c * 1000)
        embed.append((embed_stats["seconds"] - before) * 1000)
    return {"runs": runs, "query_ms": wall, "query_cpu_ms": cpu, "query_embed_ms": embed}
