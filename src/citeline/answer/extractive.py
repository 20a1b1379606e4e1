"""The offline default generator: picks the sentences of the passages that best answer the question.

No LLM: every answer sentence is a verbatim unit (sentence, table row, list item) of a
numbered passage, so its citation is right by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

import numpy as np

from citeline.answer.answer_type import can_answer, expected_type
from citeline.answer.bearing import bears, states_literal, typed
from citeline.answer.citations import escape_markers
from citeline.answer.relevance import weighted_coverage
from citeline.answer.units import (
    Unit,
    binding_contexts,
    chunk_units,
    entry_terms,
    heading_context,
    leads,
    never_an_answer,
    points_back,
)
from citeline.embedding.base import Embedder
from citeline.embedding.memo import remembered
from citeline.errors import ConfigError
from citeline.query.analysis import Query, analyze, mentions_years
from citeline.retrieval.hybrid import exact_codes, mentions
from citeline.types import Draft, DraftSentence, Passage

if TYPE_CHECKING:
    from citeline.answer.reader import Reader
    from citeline.build_context import BuildContext

SIMILARITY_WEIGHT = 0.55
OVERLAP_WEIGHT = 0.45
# extractive_picks = "both": the reader's best unit leads the answer when it scores at least this.
# The two rankings miss different questions: golden dev (with the relevance reranker) named the gold
# in 0.694 of answers by overlap, 0.633 by the reader, 0.735 by both (any lead from 0.8 to 0.95);
# the held-out golden test did not follow (README, Reranking), so it is not the default.
READER_LEAD = 0.9
# extractive_picks = "blend" (the default): a unit's score gains this much of the reader's score.
# Chosen on golden dev + dev-extra (108 answerable questions) and a ConditionalQA train slice (209),
# answers naming the gold, replayed over each question's units: 0.1 gave +1 / +3 questions, 0.2
# +2 (3 better, 1 worse) / +6 (none worse), 0.3 +3 / +2 (5 better, 3 worse), 0.4 +3 / +2 (6
# better, 4 worse). Through the pipeline 0.2 gave +2 / +4, none worse on ConditionalQA.
READER_WEIGHT = 0.2
# The questions whose answer-bearing units lead the answer (query/slot.py)
LEADING_ATTRIBUTES = frozenset(
    {"default", "maximum", "minimum", "version", "quantity", "which", "procedure", "reason", "where"}
)


@dataclass(frozen=True)
class Scored:
    passage: int
    unit: Unit
    score: float
    #: what the answer quotes for it, in order: a window's sentences, led by its definition's term
    #: (empty: the unit itself)
    parts: tuple[Unit, ...] = ()
    #: the score by the whole question's similarity, which the floor (``min_score``) was chosen on
    #: (None: ``score``)
    floor: float | None = None
    #: it states a value of the kind the question asks for, about its subject (answer/bearing.py)
    bears: bool = False
    #: it holds an exact code of the question ("40P01"): the row or sentence about that one thing
    exact: bool = False

    def quotes(self) -> list[tuple[int, tuple[int, int], Unit]]:
        """(passage, span, unit) of each unit quoted for it: a term leading two picks is one quote."""
        return [(self.passage, (u.start, u.end), u) for u in self.parts or (self.unit,)]


# Among the units that state the asked value, those of the better form lead: a default stated as
# a literal ("The default is no.") one that only says what happens by default; a line as it is
# typed ("$ docker inspect -f ...", "varname = value # FIXED") prose naming a command in passing
_BETTER_FORM: dict[str, Callable[[str], bool]] = {"default": states_literal, "procedure": typed}


def ranked(scored: list[Scored], query: Query) -> list[Scored]:
    """Best first: when the question asks for a value (a default, a limit, a version, an amount,
    which option), the units that state one about its subject lead, whatever their similarity."""
    attribute = query.slot.attribute
    if attribute not in LEADING_ATTRIBUTES:
        return sorted(scored, key=lambda s: (not s.exact, -s.score))
    better = _BETTER_FORM.get(attribute)
    return sorted(
        scored,
        key=lambda s: (
            not s.exact,
            not s.bears,
            not (s.bears and better is not None and better(s.unit.text)),
            -s.score,
        ),
    )


def _entry_similarity(
    candidates: Sequence[tuple[int, Unit, str, tuple[Unit, ...], bool, str]], *scores: np.ndarray
) -> list[np.ndarray]:
    """A unit that states the asked value is as similar to the question as the entry it belongs to:
    "The default is 10." resembles no question; "Specifies the first display number available for
    X11 forwarding.", two sentences before it in X11DisplayOffset's entry, does. Its entry: the
    units of its passage that its binding context holds (answer/units.py, ``binding_contexts``).
    Each of ``scores`` (one value per candidate) is lifted so; the entries are found once."""
    entries = [
        [j for j, (m, other, *_) in enumerate(candidates) if m == n and j != i and other.text in about]
        for i, (n, _, _, _, bearing, about) in enumerate(candidates)
        if bearing
    ]
    bearing_at = [i for i, c in enumerate(candidates) if c[4]]
    lifted = []
    for values in scores:
        out = values.copy()
        for i, entry in zip(bearing_at, entries, strict=True):
            if entry:
                out[i] = max(out[i], values[entry].max())
        lifted.append(out)
    return lifted


def confidence(scored: Sequence[Scored]) -> float:
    """What the floor (``min_score``) is checked against: the best score on the floor's scale."""
    return max((s.score if s.floor is None else s.floor for s in scored), default=0.0)


class ExtractiveGenerator:
    name = "extractive"
    context_tokens = 4096

    def __init__(
        self,
        embedder: Embedder,
        max_sentences: int = 3,
        keep_ratio: float = 0.85,
        min_score: float = 0.0,
        reader: Reader | None = None,
        picks: str = "reader",
    ) -> None:
        self.embedder = embedder
        self.min_score = min_score
        self.max_sentences = max_sentences
        self.keep_ratio = keep_ratio
        #: with a reader, units are chosen by similarity and overlap plus the trained model's score
        #: ("blend"), by the model alone ("reader"), or by similarity and overlap led by the
        #: model's best unit when it is sure ("both"); without, by similarity and overlap alone
        self.reader = reader
        self.picks = picks

    def score_units(self, question: Query | str, passages: Sequence[Passage]) -> list[Scored]:
        query = analyze(question)
        candidates: list[tuple[int, Unit, str, tuple[Unit, ...], bool, str]] = []
        for p in passages:
            context = heading_context(p.chunk.heading_trail, p.hit.title)
            units = chunk_units(p.chunk)
            trail = p.chunk.heading_trail
            for unit, before, about, entry in zip(
                units,
                leads(units, p.chunk.text, p.chunk.start, trail),
                binding_contexts(units, p.chunk.text, p.chunk.start, trail, p.hit.title),
                entry_terms(units, p.chunk.text, p.chunk.start, trail),
                strict=True,
            ):
                if never_an_answer(unit.text):
                    continue
                lead: tuple[Unit, ...] = (*before, unit) if before else ()
                # asked which option: the option's name may be in what the unit is quoted after
                # ("-i: Incremental mode." before "Read entries from standard input ...")
                shown = (
                    " ".join(u.text for u in lead) if query.slot.attribute == "which" and lead else unit.text
                )
                if before and points_back(unit.text):
                    # "This proportion is 500." states the default its sentence before names
                    shown = f"{before[-1].text} {unit.text}"
                bearing = bears(query.slot, shown, about, entry)
                contextual = f"{context}: {unit.text}" if context else unit.text
                candidates.append((p.number, unit, contextual, lead, bearing, about))
        if not candidates:
            return []
        # A question that first tells a story ("I am 17 and my parents ... Can I get X?") is read
        # twice: a unit's similarity is the better of the whole question's and its asking part's.
        # ConditionalQA train (400 questions): answers naming the gold 0.204 -> 0.225, 5 better and
        # none worse. The floor stays on the whole question's similarity: on the better of the two
        # it answered 6 more unanswerable questions there (and 6 more answerable ones).
        asking = [query.focus] if query.focus != query.text else []
        leading = query.slot.attribute in LEADING_ATTRIBUTES
        # a unit that states the asked value is also compared as the answer quotes it, after its
        # lead ("By default, all containers get the same proportion ... This proportion is 500."):
        # alone, "This proportion is 500." resembles no question
        quoted = {
            i: f"{c[2].rsplit(': ', 1)[0]}: {' '.join(u.text for u in c[3])}"
            for i, c in enumerate(candidates)
            if leading and c[4] and c[3]
        }
        texts = [c[2] for c in candidates] + list(quoted.values())
        vectors = remembered(self.embedder, [query.text, *asking, *texts])
        units_at = vectors[1 + len(asking) :]
        whole = units_at[: len(candidates)] @ vectors[0]
        sims = np.maximum(whole, units_at[: len(candidates)] @ vectors[1]) if asking else whole.copy()
        for j, i in enumerate(quoted):
            extra = units_at[len(candidates) + j]
            sims[i] = max(sims[i], float(extra @ vectors[0]), float(extra @ vectors[1]) if asking else 0.0)
        if leading:
            # the floor too: a right value line is not refused for resembling no question
            # ("Default: -200" under "How much to reward leaving a Recommends unresolved")
            sims, whole = _entry_similarity(candidates, sims, whole)
        weights = query.weights or None
        kind = expected_type(query.text)
        codes = exact_codes(query)
        years = query.years  # of the asking part: a story's years are circumstances
        scored: list[Scored] = []
        other_kinds: list[Scored] = []
        for (n, unit, contextual, lead, bearing, about), sim, sim_whole in zip(
            candidates, sims, whole, strict=True
        ):
            if not mentions_years(years, contextual):
                continue  # about another year (RGB: "revenue in Q1 2021" answered with Q1 2023)
            overlap = weighted_coverage(query.terms, contextual, weights)
            # a unit that states the value is ranked by what its context says too: "The default
            # is the number of CPU cores." names nothing the question asks about; the sentence
            # before it ("It sets the number of cached data chunks") does. The floor keeps the
            # unit's own overlap, as it was chosen on.
            ranked_overlap = (
                weighted_coverage(query.terms, f"{about}\n{contextual}", weights)
                if leading and bearing
                else overlap
            )
            score = SIMILARITY_WEIGHT * float(sim) + OVERLAP_WEIGHT * ranked_overlap
            unit_floor = SIMILARITY_WEIGHT * float(sim_whole) + OVERLAP_WEIGHT * overlap
            changed = asking or ranked_overlap != overlap or float(sim) != float(sim_whole)
            floor = unit_floor if changed else None
            # a unit that states the asked value about the subject answers whatever its form
            named = f"{about}\n{unit.text}" if bearing else unit.text
            stated = bearing and query.slot.wants_value  # a default, a limit, a version, a name or date
            (scored if stated or can_answer(kind, contextual) else other_kinds).append(
                # a code names a value's unit through its entry ("X11DisplayOffset ... The default is 10.")
                Scored(n, unit, score, lead, floor, bearing, any(mentions(c, named) for c in codes))
            )
        # The expected kind is a preference, not a requirement: when no unit has it ("How long may
        # the PROTO attribute be?" is answered by "up to 64 characters", no duration; "When do ldap
        # tables share a connection?" by a condition), the units of any kind compete.
        if not scored:
            scored = other_kinds
        return ranked(scored, query)

    def select(self, scored: list[Scored]) -> list[Scored]:
        chosen: list[Scored] = []
        seen: list[set[str]] = []
        quoted: set[tuple[int, tuple[int, int]]] = set()  # a term leading two picks is quoted once
        for s in scored:
            if chosen and s.score < self.keep_ratio * chosen[0].score:
                continue  # (units that state the asked value come first, whatever their score)
            parts = {(n, span) for n, span, _ in s.quotes()}
            if len(quoted | parts) > self.max_sentences:
                if not chosen and s.bears:
                    # the unit that states the asked value leads, without what it is quoted
                    # after when all of it does not fit (its leads are context, not the answer)
                    s = replace(s, parts=())
                    parts = {(n, span) for n, span, _ in s.quotes()}
                else:
                    continue
            words = set(s.unit.text.lower().split())
            if any(len(words & w) / max(1, len(words | w)) > 0.7 for w in seen):
                continue  # near-duplicate of a chosen sentence (overlapping chunks repeat text)
            chosen.append(s)
            seen.append(words)
            quoted |= parts
        return chosen

    def read(self, question: Query | str, passages: Sequence[Passage]) -> list[Scored]:
        """Candidates ranked by the reader; a window of two sentences stands for both."""
        assert self.reader is not None
        query = analyze(question)
        out = []
        for s in self.reader.read(query, passages).scored:
            if mentions_years(query.years, f"{s.candidate.context}: {s.candidate.unit.text}"):
                out.append(Scored(s.candidate.passage, s.candidate.unit, s.score, s.candidate.parts))
        return out

    def select_spans(self, scored: list[Scored]) -> list[Scored]:
        """The best candidate, then others close to it whose text does not overlap what is chosen,
        up to ``max_sentences`` sentences."""
        chosen: list[Scored] = []
        taken: list[tuple[int, int]] = []
        quoted: set[tuple[int, tuple[int, int]]] = set()  # a term leading two picks is quoted once
        for s in scored:
            if chosen and s.score < self.keep_ratio * chosen[0].score:
                break
            parts = {(n, span) for n, span, _ in s.quotes()}
            if len(quoted | parts) > self.max_sentences:
                continue
            if any(s.unit.start < b and a < s.unit.end for a, b in taken):
                continue  # overlaps a chosen unit (a window and its own sentence, or repeated text)
            chosen.append(s)
            taken.append((s.unit.start, s.unit.end))
            quoted |= parts
        return chosen

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        if self.reader is not None and self.picks == "reader":
            return self._draft(self.read(question, passages), spans=True)
        scored = self.score_units(question, passages)
        if self.reader is None or not scored or confidence(scored) < self.min_score:
            return self._draft(scored)
        if self.picks == "blend":
            return self._draft(self.blend(question, passages, scored))
        return self._draft(scored, chosen=self.reader_lead(question, passages, self.select(scored)))

    def blend(self, question: Query | str, passages: Sequence[Passage], scored: list[Scored]) -> list[Scored]:
        """``scored`` re-ranked: each unit gains READER_WEIGHT times the reader's best score of a
        candidate that quotes it (itself, a window holding it, or a unit it leads); a unit the
        reader did not read gains nothing. A story question is read twice, whole and by its asking
        part (as ``score_units`` does), and the better score counts. The floor keeps the unblended
        score: refusals do not move.

        The two rankings fail differently: similarity and overlap favour a unit that repeats the
        question's words ("Restrictions are applied in the order as specified"), the reader one
        that answers it ("The default time unit is d (days)."), but the reader alone misreads
        option lines ("-M: Show master.cf ...") and lost 0.694 -> 0.653 on golden dev."""
        assert self.reader is not None
        query = analyze(question)
        best: dict[tuple[int, int, int], float] = {}
        for asked in (query, query.focus) if query.focus != query.text else (query,):
            for read in self.reader.read(asked, passages).scored:
                for part in read.candidate.parts:
                    key = (read.candidate.passage, part.start, part.end)
                    best[key] = max(best.get(key, 0.0), read.score)
        blended = [
            replace(
                s,
                score=s.score + READER_WEIGHT * best.get((s.passage, s.unit.start, s.unit.end), 0.0),
                floor=s.score if s.floor is None else s.floor,
            )
            for s in scored
        ]
        return ranked(blended, query)

    def reader_lead(
        self, question: Query | str, passages: Sequence[Passage], chosen: list[Scored]
    ) -> list[Scored]:
        """``chosen`` led by the reader's best unit, when it scores at least READER_LEAD and is
        not quoted already."""
        read = self.read(question, passages)
        if not read or read[0].score < READER_LEAD:
            return chosen
        best = read[0]
        for c in chosen:
            for n, _, u in c.quotes():
                if n == best.passage and u.start < best.unit.end and best.unit.start < u.end:
                    return chosen
        return [best, *chosen]

    def _draft(self, scored: list[Scored], spans: bool = False, chosen: list[Scored] | None = None) -> Draft:
        best = confidence(scored)
        if best < (0.0 if spans else self.min_score):  # the reader's floor is the refusal guard's
            return Draft(sentences=(), refused=True, confidence=best)
        if chosen is None:
            chosen = self.select_spans(scored) if spans else self.select(scored)
        quoted: set[tuple[int, tuple[int, int]]] = set()  # a definition's term leads each of its picks
        sentences = []
        for s in chosen:
            for n, span, part in s.quotes():
                if (n, span) not in quoted and len(quoted) < self.max_sentences:
                    quoted.add((n, span))
                    sentences.append(DraftSentence(escape_markers(part.text), (n,)))
        raw = " ".join(f"{s.text} [{s.citations[0]}]" for s in sentences)
        return Draft(sentences=tuple(sentences), refused=not sentences, raw=raw, confidence=best)

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Sentence by sentence; each piece ends after its complete [n] markers."""
        draft = self.generate(question, passages)
        for i, s in enumerate(draft.sentences):
            yield ("" if i == 0 else " ") + s.text + "".join(f" [{n}]" for n in s.citations)


def extractive_factory(context: BuildContext | None, argument: str | None) -> ExtractiveGenerator:
    if context is None:
        raise ConfigError("The extractive generator needs the index's embedder (build it from settings).")
    s = context.settings
    # the context's reader is answer/reader.py:Reader (build_context.py names it from below)
    reader = (
        cast("Reader | None", context.reader) if s.extractive_picks in ("blend", "reader", "both") else None
    )
    return ExtractiveGenerator(
        context.embedder,
        max_sentences=s.max_answer_sentences,
        min_score=s.min_answer_score,
        reader=reader,
        picks=s.extractive_picks,
    )
