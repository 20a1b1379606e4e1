"""A writer and searcher of an index with the derived engines forced on, run until killed
(tests/reliability/test_engine_crash.py): each round replaces a few documents, removes one, and
searches (each search brings tantivy and faiss up to date; some rounds write a faiss checkpoint).

Run: python engine_worker.py INDEX SEED
"""

from __future__ import annotations

import sys

import numpy as np

from citeline.filters import Filter
from citeline.index.base import DocumentWrite
from citeline.settings import Settings
from citeline.types import Chunk, Document, document_id_for, text_hash
from citeline.wiring import open_store

DIM = 16
PER_DOC = 20


def vector(number: int, version: int, part: int) -> np.ndarray:
    v = np.random.default_rng([number, version, part]).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def document_write(
    source: str,
    bodies: list[str],
    vectors: list[np.ndarray],
    content_hash: str,
    tags: dict[str, str] | None = None,
) -> DocumentWrite:
    """A document of one chunk per body (paragraphs, given vectors), as ingestion would write it."""
    doc_id = document_id_for("default", source)
    chunks, by_hash, text = [], {}, ""
    for j, (body, vec) in enumerate(zip(bodies, vectors, strict=True)):
        index_text = f"{source} > {body}"
        start = len(text)
        chunks.append(
            Chunk(
                f"{doc_id[:12]}-{j:012d}",
                doc_id,
                j,
                start,
                start + len(body),
                body,
                index_text,
                (),
                "paragraph",
            )
        )
        by_hash[text_hash(index_text)] = vec
        text += body + "\n\n"
    doc = Document(doc_id, source, source, "markdown", content_hash, len(text), 0.0, None, tags=tags or {})
    return DocumentWrite(doc, text, chunks, by_hash)


def write(number: int, version: int) -> DocumentWrite:
    """Document ``number`` at ``version``: every chunk holds the word uniq{number}v{version}."""
    return document_write(
        f"doc-{number:04d}.md",
        [
            f"uniq{number}v{version} part{j} deployment notes number {number * 100 + j}"
            for j in range(PER_DOC)
        ],
        [vector(number, version, j) for j in range(PER_DOC)],
        f"h{number}-{version}",
    )


def main() -> None:
    index, seed = sys.argv[1], int(sys.argv[2])
    rng = np.random.default_rng(seed)
    store = open_store(index)
    store.configure(Settings(engine_min_chunks=0))
    store.bind_embedder("test", "1", DIM)
    version = seed * 1000
    while True:
        version += 1
        numbers = rng.choice(200, 10, replace=False)
        store.replace_documents([write(int(n), version) for n in numbers])
        gone = store.find_document(f"doc-{int(rng.integers(200)):04d}.md")
        if gone is not None:
            store.remove_document(gone.id)
        store.keyword_search(f"uniq{int(numbers[0])}v{version}", Filter.admin(), 5)
        store.vector_search(vector(int(numbers[0]), version, 0), Filter.admin(), 5)


if __name__ == "__main__":
    main()
