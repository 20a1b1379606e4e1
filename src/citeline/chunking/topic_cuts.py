"""Where flat text is cut by topic (chunking/chunker.py, ``chunk_unstructured`` lexical or semantic): the
similarity of the two sentences before each sentence gap with the two after (by TF-IDF, or by
sentence vectors), and the choice of cuts from those similarities. Pure functions."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np


def semantic_cuts(
    similarities: Sequence[float], tokens: Sequence[int], budget: int, threshold: float, min_tokens: int
) -> list[int]:
    """Indices i where pieces are cut (between piece i-1 and i), pure and deterministic.

    ``similarities[i]`` compares the text before gap i+1 with the text after it. Every gap
    below ``threshold`` is cut when both sides keep ``min_tokens``; then any segment over
    ``budget`` is cut recursively at its least similar gap until every segment fits.
    """
    n = len(tokens)
    if n <= 1:
        return []
    prefix = np.concatenate([[0], np.cumsum(tokens)])

    def size(lo: int, hi: int) -> int:
        return int(prefix[hi] - prefix[lo])

    kept: list[int] = []
    last = 0
    for gap in range(1, n):  # left to right: a cut is kept only when both sides are long enough
        if similarities[gap - 1] < threshold and size(last, gap) >= min_tokens <= size(gap, n):
            kept.append(gap)
            last = gap
    cuts = set(kept)
    # Segments over budget: cut at their least similar gap (an explicit stack: no recursion limit).
    stack = list(zip([0, *kept], [*kept, n], strict=True))
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= 1 or size(lo, hi) <= budget:
            continue
        gaps = range(lo + 1, hi)
        balanced = [g for g in gaps if size(lo, g) >= min_tokens <= size(g, hi)]
        gap = min(balanced or gaps, key=lambda g: (similarities[g - 1], abs(size(lo, g) - size(g, hi)), g))
        cuts.add(gap)
        stack += [(lo, gap), (gap, hi)]
    return sorted(cuts)


def _gap_sides(n: int, gap: int) -> tuple[int, int, int]:
    """The two sides of gap (between piece gap-1 and gap): pieces lo..gap-1 and gap..hi-1."""
    return max(0, gap - 2), gap, min(n, gap + 2)


def vector_gap_similarities(vectors: np.ndarray) -> list[float]:
    """Cosine of the normalised sums of the (up to) two sentence vectors on each side of each gap."""
    n = len(vectors)
    if n < 2:
        return []
    csum = np.vstack([np.zeros((1, vectors.shape[1]), dtype=np.float64), np.cumsum(vectors, axis=0)])
    gaps = np.arange(1, n)
    left = csum[gaps] - csum[np.maximum(0, gaps - 2)]
    right = csum[np.minimum(n, gaps + 2)] - csum[gaps]
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    dots = np.einsum("ij,ij->i", left, right)
    return [float(x) for x in np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0)]


_WORD = re.compile(r"\w\w+")


def lexical_gap_similarities(paragraphs: Sequence[Sequence[str]]) -> list[list[float]]:
    """TF-IDF cosine of the two sentences before each gap with the two after, per paragraph.

    ``paragraphs`` holds each paragraph's sentences. Words are lower-cased runs of two or more
    word characters; a word's weight on a side is (1 + log tf) * log((1 + N) / (1 + df)), where
    N counts the sentences of all paragraphs and df those holding the word, so a word in
    every sentence weighs nothing. Two sides sharing no weighted word score 0.0. Linear in the
    text; no embedding.
    """
    bags = [[Counter(_WORD.findall(s.lower())) for s in sentences] for sentences in paragraphs]
    df: Counter[str] = Counter()
    for para in bags:
        for bag in para:
            df.update(bag.keys())
    total = sum(len(p) for p in bags)
    idf = {w: math.log((1 + total) / (1 + d)) for w, d in df.items()}

    def side(para: list[Counter[str]], lo: int, hi: int) -> dict[str, float]:
        tf: Counter[str] = Counter()
        for bag in para[lo:hi]:
            tf.update(bag)
        return {w: (1 + math.log(c)) * idf[w] for w, c in tf.items() if idf[w] > 0}

    out: list[list[float]] = []
    for para in bags:
        sims: list[float] = []
        n = len(para)
        for gap in range(1, n):
            lo, mid, hi = _gap_sides(n, gap)
            left, right = side(para, lo, mid), side(para, mid, hi)
            if len(left) > len(right):
                left, right = right, left
            dot = sum(x * right.get(w, 0.0) for w, x in left.items())
            norm = math.sqrt(sum(x * x for x in left.values()) * sum(x * x for x in right.values()))
            sims.append(dot / norm if norm > 0 else 0.0)
        out.append(sims)
    return out


def sentence_head(sentence: str, words: int) -> str:
    """The first ``words`` words of a sentence (all of it when words is 0)."""
    if words <= 0:
        return sentence
    parts = sentence.split(maxsplit=words)
    return " ".join(parts[:words])
