"""The trained claim checker as a verifier: does some unit of a cited passage entail the sentence?

Premises are the passage's units, its windows of two adjacent sentences, and the passage itself
when it is short (a claim may join two sentences). The quote is the best-entailing unit.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citeline.answer.citations import unescape_markers
from citeline.answer.facts import facts, missing_facts
from citeline.answer.reader import PACKAGED, CrossEncoderModel, packaged_model
from citeline.answer.relevance import weighted_coverage
from citeline.answer.units import Unit, passage_units
from citeline.answer.verify import Cited, Support
from citeline.text.sentences import sentence_spans
from citeline.text.terms import query_terms

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

_SHORT_PASSAGE = 600  # characters: whole passages up to this long are premises too


def premises(n: int, text: str, start: int, table_header: str = "") -> list[tuple[int, Unit]]:
    units = passage_units(text, start, table_header) or [Unit(start, start + len(text), text, "sentence")]
    out = [(n, u) for u in units]
    out += [
        (n, Unit(a.start, b.end, f"{a.text} {b.text}", "window"))
        for a, b in itertools.pairwise(units)
        if a.kind == b.kind == "sentence"
    ]
    if len(text) <= _SHORT_PASSAGE and len(units) > 2:
        out.append((n, Unit(start, start + len(text), " ".join(u.text for u in units), "passage")))
    return out


class TrainedChecker:
    """Entailment probability from our cross-encoder; supported at ``threshold`` or above."""

    name = "checker"

    def __init__(self, model: CrossEncoderModel, threshold: float = 0.5) -> None:
        self.model = model
        self.threshold = threshold

    def check(self, sentence: str, cited: Sequence[Cited]) -> Support:
        if not cited:
            return Support(False, 0.0, {}, "no valid citation")
        found = [p for c in cited for p in premises(c.n, c.text, c.start, c.table_header)]
        # a marker the document wrote is escaped in the answer (⟦7⟧) and plain in the passage ([7])
        claim = unescape_markers(sentence)
        quoted = _verbatim(claim, found) or _verbatim_sentences(claim, found)
        if quoted:
            # a verbatim quote of what it cites needs no model (which misjudges odd text such as markup);
            # the passages holding it are the ones that support it
            return Support(
                True, 1.0, quoted, alone={c.n: (c.n in quoted, float(c.n in quoted)) for c in cited}
            )
        context = {c.n: c.context for c in cited}
        # as in training, each premise is read after its headings ("Sync Options: Retries use ...")
        texts = [f"{context[n]}: {u.text}" if context[n] else u.text for n, u in found]
        probs = self.model.checker_scores(claim, texts)
        quotes: dict[int, tuple[int, int]] = {}
        alone: dict[int, tuple[bool, float]] = {}
        for n in dict.fromkeys(n for n, _ in found):
            idx = [i for i, (m, u) in enumerate(found) if m == n and u.kind != "passage"]
            if idx:
                best = idx[int(np.argmax(probs[idx]))]
                quotes[n] = (found[best][1].start, found[best][1].end)
            # every premise lies within one passage: what this passage's premises score is its own support
            own = float(probs[[i for i, (m, _) in enumerate(found) if m == n]].max())
            alone[n] = (own >= self.threshold, own)
        score = float(probs.max()) if len(probs) else 0.0
        supported = score >= self.threshold
        if not supported and (grounded := _restated(claim, found, texts)) is not None:
            # the model misses a value said in other words ("30 seconds" for "(default: `30s`)")
            n, unit = grounded
            return Support(
                True,
                score,
                {n: (unit.start, unit.end)},
                alone={c.n: (c.n == n, float(c.n == n)) for c in cited},
            )
        reason = "" if supported else f"entailment {score:.2f} below {self.threshold:.2f}"
        return Support(supported, score, quotes, reason, alone)


# A claim restates a unit when every value it states (numbers with units, dates, names, codes,
# `literals`) is in that one unit read after its headings, and that text holds this share of the
# claim's words. The packaged 1.5B writes "The default interval for a Dockerfile HEALTHCHECK is 30
# seconds." for "`--interval=DURATION` (default: `30s`)" under HEALTHCHECK, which the checker
# scores 0.06; a claim that joins two table rows (one's name, the other's effect) is not restated
# by either row.
RESTATED_COVERAGE = 0.6
_LITERAL = re.compile(r"`([^`]+)`|(?<![\w-])(--?[A-Za-z][\w-]*)")


def _restated(claim: str, found: Sequence[tuple[int, Unit]], texts: Sequence[str]) -> tuple[int, Unit] | None:
    """The unit of ``found`` that ``claim`` restates; ``texts`` are the units as the checker reads
    them (after their headings)."""
    said = facts(claim)
    literals = [_squash_all(a or b) for a, b in _LITERAL.findall(claim)]
    if not (said.quantities or said.dates or said.names or said.versions or literals):
        return None  # it states no value: a paraphrase is the model's to judge
    terms = query_terms(claim)
    best: tuple[float, int, Unit] | None = None
    for (n, unit), text in zip(found, texts, strict=True):
        if unit.kind == "passage":
            continue
        if missing_facts(claim, text) or any(lit not in _squash_all(text) for lit in literals):
            continue
        share = weighted_coverage(terms, text)
        if share >= RESTATED_COVERAGE and (best is None or share > best[0]):
            best = (share, n, unit)
    return None if best is None else (best[1], best[2])


def _verbatim_sentences(claim: str, found: Sequence[tuple[int, Unit]]) -> dict[int, tuple[int, int]]:
    """A claim of several sentences, each a verbatim quote of one passage (an LLM often copies a few
    sentences as one): that passage, quoted from the first to the last."""
    parts = [claim[a:b] for a, b in sentence_spans(claim, 0, len(claim))]
    if len(parts) < 2:
        return {}
    for n in dict.fromkeys(m for m, _ in found):
        spans = [_verbatim(part, [f for f in found if f[0] == n]).get(n) for part in parts]
        if all(span is not None for span in spans):
            present = [span for span in spans if span is not None]
            return {n: (min(a for a, _ in present), max(b for _, b in present))}
    return {}


def _squash_all(text: str) -> str:
    return re.sub(r"[\s`'\"]+", "", text.lower())


def _squash(text: str) -> str:
    return " ".join(text.split())


def _verbatim(claim: str, found: Sequence[tuple[int, Unit]]) -> dict[int, tuple[int, int]]:
    """Per cited passage, the shortest unit holding the whole claim word for word (empty: none does)."""
    wanted = _squash(claim)
    quotes: dict[int, tuple[int, int]] = {}
    if not wanted:
        return quotes
    for n, u in sorted(found, key=lambda p: p[1].end - p[1].start):
        if n not in quotes and wanted in _squash(u.text):
            quotes[n] = (u.start, u.end)
    return quotes


def checker_factory(context: BuildContext | None, argument: str | None) -> TrainedChecker:
    folder = Path(argument).expanduser() if argument else PACKAGED
    threshold = context.settings.checker_threshold if context is not None else 0.5
    return TrainedChecker(packaged_model(folder), threshold)
