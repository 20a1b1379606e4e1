"""Hand-made hits for reranker unit tests."""

from __future__ import annotations

from citeline.types import Chunk, Hit, StageScore


def make_hit(
    n: int,
    text: str,
    title: str = "",
    bm25: tuple[float, int] | None = None,
    dense: tuple[float, int] | None = None,
) -> Hit:
    index_text = f"{title}\n\n{text}" if title else text
    chunk = Chunk(
        id=f"c{n}",
        document_id=f"d{n}",
        ordinal=0,
        start=0,
        end=len(text),
        text=text,
        index_text=index_text,
        heading_trail=(),
        kind="paragraph",
    )
    stages = {}
    if bm25 is not None:
        stages["bm25"] = StageScore(*bm25)
    if dense is not None:
        stages["dense"] = StageScore(*dense)
    stages["fused"] = StageScore(1.0 / n, n)
    return Hit(chunk=chunk, source=f"doc{n}.md", title=title, score=1.0 / n, stages=stages)
