"""The claim check of one answer sentence against the context passages it cites: the verifier's
verdict, then its numbers, dates and names must be in what it cites (facts.py); a sentence its
citations do not support cites the passages of the context that do (precision.py)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from citeline.answer.facts import missing_facts
from citeline.answer.precision import RECITE_MIN_WORDS, precise_citations, supported_elsewhere
from citeline.answer.units import heading_context, table_header
from citeline.answer.verify import Cited, Support, Verifier
from citeline.types import Passage


def as_cited(passage: Passage) -> Cited:
    """A context passage as the verifier reads it: its text after its headings and table header."""
    c = passage.chunk
    return Cited(
        passage.number, c.text, c.start, heading_context(c.heading_trail, passage.hit.title), table_header(c)
    )


@dataclass(frozen=True)
class ClaimChecker:
    """Checks the sentences of one answer against its context, ``by_number`` (passage numbers)."""

    verifier: Verifier
    by_number: Mapping[int, Passage]

    def check(self, text: str, cited: Sequence[Cited]) -> Support:
        """The claim check of ``text`` against ``cited``."""
        support = self.verifier.check(text, cited)
        if support.supported:
            missing = missing_facts(text, "\n".join(self.by_number[c.n].chunk.index_text for c in cited))
            if missing:
                why = f"not in the cited passage: {', '.join(missing[:5])}"
                support = replace(support, supported=False, reason=why)
        return support

    def facts_in(self, text: str, cited: Cited) -> bool:
        """Whether ``text``'s numbers, dates and names are all in the one passage ``cited``."""
        return not missing_facts(text, self.by_number[cited.n].chunk.index_text)

    def precise(self, text: str, cited: Sequence[Cited], support: Support) -> tuple[int, ...]:
        """Of a supported sentence's citations, those whose passage supports it (precision.py)."""
        return precise_citations(
            cited, support, functools.partial(self.check, text), functools.partial(self.facts_in, text)
        )

    def recite(
        self, text: str, valid: tuple[int, ...], cited: list[Cited], support: Support
    ) -> tuple[tuple[int, ...], list[Cited], Support, str]:
        """A sentence its citations do not support cites the other passages of the context that
        do (precision.py, ``supported_elsewhere``), with the reason its check records."""
        if support.supported or not valid or len(text.split()) < RECITE_MIN_WORDS:
            return valid, cited, support, ""
        elsewhere = supported_elsewhere(
            [as_cited(p) for n, p in self.by_number.items() if n not in valid],
            functools.partial(self.check, text),
            functools.partial(self.facts_in, text),
        )
        if elsewhere is None:
            return valid, cited, support, ""
        moved, checked = elsewhere
        numbers = tuple(c.n for c in moved)
        return numbers, moved, checked, f"cited {list(valid)}, supported by {list(numbers)}"
