"""Context assembly: the numbered passages a generator sees.

Passages are numbered [1]..[n] in the order they are shown. For LLMs the strongest
evidence goes to the start and the end of the context, the weakest to the middle,
where long-context models attend least ("lost in the middle", Liu et al. 2023).
When the passages do not fit the generator's token budget, long passages are
compressed extractively: only their sentences most relevant to the question are
kept, verbatim (never rewritten), so every quote still exists in the document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citeline.answer.relevance import weighted_coverage
from citeline.answer.units import passage_units
from citeline.text.terms import query_terms
from citeline.types import Hit, Passage

TokenCounter = Callable[[Sequence[str]], list[int]]

# Tokens reserved for instructions, the question and the answer itself.
RESERVED_TOKENS = 700


def edge_order(n: int) -> list[int]:
    """Ranks 0..n-1 in the order they are shown: best first, second best last, weakest in the middle.

    >>> edge_order(5)
    [0, 2, 4, 3, 1]
    """
    front = list(range(0, n, 2))
    back = list(range(1, n, 2))
    return front + back[::-1]


def compress(question: str, text: str, offset: int, budget: int, count: TokenCounter) -> str:
    """Keep the passage's most question-relevant units, in document order, within ``budget`` tokens."""
    units = passage_units(text, offset)
    if not units:
        return text
    terms = query_terms(question)
    ranked = sorted(range(len(units)), key=lambda i: -weighted_coverage(terms, units[i].text))
    sizes = count([u.text for u in units])
    keep: set[int] = set()
    used = 0
    for i in ranked:
        if used + sizes[i] > budget and keep:
            continue
        keep.add(i)
        used += sizes[i]
    return " … ".join(text[units[i].start - offset : units[i].end - offset] for i in sorted(keep))


def assemble(
    question: str,
    hits: Sequence[Hit],
    budget_tokens: int,
    count: TokenCounter,
    reorder: bool = True,
) -> list[Passage]:
    """Number the passages and fit them into the budget (hits arrive best first)."""
    shown = [hits[r] for r in (edge_order(len(hits)) if reorder else range(len(hits)))]
    budget = max(budget_tokens - RESERVED_TOKENS, 64 * max(1, len(hits)))
    sizes = count([h.chunk.text for h in shown]) if shown else []
    texts = [h.chunk.text for h in shown]
    if sum(sizes) > budget:
        share = budget // max(1, len(shown))
        texts = [
            compress(question, h.chunk.text, h.chunk.start, share, count) if size > share else h.chunk.text
            for h, size in zip(shown, sizes, strict=True)
        ]
    return [Passage(i, hit, text) for i, (hit, text) in enumerate(zip(shown, texts, strict=True), 1)]
