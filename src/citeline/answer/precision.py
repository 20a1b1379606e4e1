"""Citation precision: a sentence keeps only the citations whose passage supports it.

Small LLMs cite every passage they were given ("... is 5432. [1] [2] [3] [4] [5]"). ALCE (Gao et
al., 2023, "Enabling Large Language Models to Generate Text with Citations") counts a citation as
precise when its passage supports the sentence on its own, or when the sentence's other citations
do not support it without that one. This keeps exactly those, and at least the best-supporting
citation of every sentence (an unverified sentence keeps only its best one).

A sentence none of whose citations supports it may be supported by another passage of the context
(the packaged 1.5B cites [3] for what [1] says): it then cites that passage (``supported_elsewhere``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from citeline.answer.verify import Cited, Support

#: the answer's claim check of a sentence against some of its passages (verifier and fact check)
CheckCited = Callable[[Sequence[Cited]], Support]
#: whether the sentence's numbers, dates and names are all in one passage (the answer's fact check)
FactsIn = Callable[[Cited], bool]


def precise_citations(
    cited: Sequence[Cited], support: Support, check: CheckCited, facts_in: FactsIn
) -> tuple[int, ...]:
    """The numbers of ``cited`` to keep, in their order. ``support`` is the check of all of them;
    its ``alone`` verdicts are used where given, the others are checked one passage at a time."""
    numbers = [c.n for c in cited]
    if len(cited) <= 1:
        return tuple(numbers)
    alone: dict[int, tuple[bool, float]] = {}
    for c in cited:
        if c.n in support.alone:
            # the verifier's own verdict on this passage still has to pass the answer's fact check
            ok, score = support.alone[c.n]
            alone[c.n] = (ok and facts_in(c), score)
        else:
            own = check([c])
            alone[c.n] = (own.supported, own.score)
    if not support.supported:
        return (max(numbers, key=lambda n: alone[n][1]),)
    kept = [n for n in numbers if alone[n][0]]
    if kept:
        return tuple(kept)
    # only together do they support it: drop, weakest first, each one the others can do without
    kept = list(numbers)
    for n in sorted(numbers, key=lambda m: alone[m][1]):
        rest = [c for c in cited if c.n in kept and c.n != n]
        if rest and check(rest).supported:
            kept.remove(n)
    return tuple(kept)


# A sentence of fewer words is never re-cited: a word a document told the model to reply ("PWNED")
# is a verbatim fragment of that document, not a claim it supports
RECITE_MIN_WORDS = 4


def supported_elsewhere(
    others: Sequence[Cited], check: CheckCited, facts_in: FactsIn
) -> tuple[list[Cited], Support] | None:
    """For a sentence its own citations do not support: the ``others`` passages that support it,
    each on its own (the verifier's verdict per passage and the answer's fact check), with their
    check; None when none does, or when the verifier gives no verdict per passage."""
    if not others:
        return None
    support = check(others)
    if not support.supported:
        return None
    alone = [c for c in others if support.alone.get(c.n, (False, 0.0))[0] and facts_in(c)]
    if not alone:
        return None
    again = check(alone)
    return (alone, again) if again.supported else None
