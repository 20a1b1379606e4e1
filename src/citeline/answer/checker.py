"""The trained claim checker as a verifier: does some unit of a cited passage entail the sentence?

Premises are the passage's units, its windows of two adjacent sentences, and the passage itself
when it is short (a claim may join two sentences). The quote is the best-entailing unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citeline.answer.citations import unescape_markers
from citeline.answer.reader import PACKAGED, CrossEncoderModel, packaged_model
from citeline.answer.units import Unit, passage_units
from citeline.answer.verify import Cited, Support

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
        quoted = _verbatim(claim, found)
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
        reason = "" if supported else f"entailment {score:.2f} below {self.threshold:.2f}"
        return Support(supported, score, quotes, reason, alone)


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
