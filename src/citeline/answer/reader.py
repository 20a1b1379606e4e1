"""Our own cross-encoder, trained on this project's data (training/, MODEL_CARD.md beside the weights).

One small ONNX model (MiniLM-L6, int8) answers two questions, told apart by the first segment:

* the reader: ("question: ...", "heading trail: unit") -> does this unit answer the question?
* the claim checker: ("claim: ...", "unit") -> does this unit entail the claim?

Units are sentences, table rows, list items and windows of two adjacent sentences (so "the
setting's description + the sentence that gives its default" can win together). The reader's
best score over the context is what the refusal guard decides on.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from citeline.answer.facts import neutral_numbers
from citeline.answer.span import SpanHead
from citeline.answer.units import (
    Unit,
    chunk_units,
    definition_term,
    heading_context,
    leads,
    never_an_answer,
)
from citeline.errors import ConfigError
from citeline.query.analysis import Query, analyze
from citeline.types import Hit, Passage

if TYPE_CHECKING:
    from citeline.build_context import BuildContext
    from citeline.embedding.base import Embedder

PACKAGED = Path(__file__).parent / "data" / "cross-encoder"
_READ_MEMO = 2048  # (question, unit) scores kept: a few questions' worth of reranked passages


def _sigmoid(x: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float32)


class CrossEncoderModel:
    """The trained model: probabilities for (question, unit) and (claim, premise) pairs."""

    def __init__(self, folder: Path = PACKAGED, threads: int | None = None) -> None:
        from citeline.rerank.cross_encoder import OnnxPairScorer

        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"No trained cross-encoder in {folder} (config.json, model.onnx, tokenizer.json); "
                "`make train` builds one, or set reader = none and verifier = heuristic."
            )
        self.config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.folder = folder
        self.version = str(self.config.get("version", "?"))
        self.prefixes: dict[str, str] = dict(self.config["prefixes"])
        self.pairs = OnnxPairScorer(
            folder, max_tokens=int(self.config.get("max_tokens", 128)), threads=threads
        )
        #: the span head beside the reader (answer/span.py), when the folder ships one
        self.span = SpanHead(folder, self.config["span"], threads) if "span" in self.config else None
        # The reranker reads the units of the top passages; the reader then reads the context's
        # units again for the refusal guard and the picks: those pairs are scored once.
        # (question, unit, with the span head) -> (the pair's log-odds, the span's or 0)
        self._read: OrderedDict[tuple[str, str, bool], tuple[float, float]] = OrderedDict()

    def _probabilities(self, task: str, pairs: Sequence[tuple[str, str]]) -> npt.NDArray[np.float32]:
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        logits = self.pairs.logits([(self.prefixes[task] + first, second) for first, second in pairs])
        return _sigmoid(logits[:, -1])

    def span_weight(self, weight: float | None = None) -> float:
        """``weight`` (None: the model's own, config.json) or 0 when the model has no span head."""
        if self.span is None:
            return 0.0
        return self.span.weight if weight is None else weight

    def reader_logits(
        self, question: str, units: Sequence[str], with_span: bool = True
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
        """Per unit, the pair classifier's log-odds and the span head's (zeros without it)."""
        with_span = with_span and self.span is not None
        missing = list(dict.fromkeys(u for u in units if (question, u, with_span) not in self._read))
        if missing:
            pairs = [(self.prefixes["reader"] + question, u) for u in missing]
            logits = self.pairs.logits(pairs, head=self.span if with_span else None)
            for unit, row in zip(missing, logits, strict=True):
                self._read[(question, unit, with_span)] = (float(row[0]), float(row[1]) if with_span else 0.0)
        parts = np.array([self._read[(question, u, with_span)] for u in units], dtype=np.float32)
        while len(self._read) > _READ_MEMO:
            self._read.popitem(last=False)
        parts = parts.reshape(-1, 2)
        return parts[:, 0], parts[:, 1]

    def reader_scores(
        self, question: str, units: Sequence[str], span_weight: float | None = None
    ) -> npt.NDArray[np.float32]:
        """P(the unit answers the question): the pair classifier's log-odds plus ``span_weight``
        (default: the model's own; 0: the classifier alone) times the span head's."""
        weight = self.span_weight(span_weight)
        pair, span = self.reader_logits(question, units, with_span=weight > 0)
        return _sigmoid(pair + weight * span)

    def checker_scores(self, claim: str, premises: Sequence[str]) -> npt.NDArray[np.float32]:
        return self._probabilities("checker", [neutral_numbers(claim, p) for p in premises])


_MODELS: dict[Path, CrossEncoderModel] = {}


def packaged_model(folder: Path = PACKAGED) -> CrossEncoderModel:
    """The model in ``folder``, loaded once per process."""
    if folder not in _MODELS:
        _MODELS[folder] = CrossEncoderModel(folder)
    return _MODELS[folder]


@dataclass(frozen=True)
class Candidate:
    """A unit of a numbered passage that could answer: a unit, or two adjacent sentences."""

    passage: int
    unit: Unit
    #: what an answer quotes for it, in order: its sentences, led by its definition's term
    parts: tuple[Unit, ...]
    context: str  # "heading > trail", what the model reads before the unit

    @property
    def model_text(self) -> str:
        return f"{self.context}: {self.unit.text}" if self.context else self.unit.text


def candidates(passages: Sequence[Passage]) -> list[Candidate]:
    """Every unit of the passages, and each pair of adjacent sentences of one paragraph.

    A unit no answer quotes (``units.never_an_answer``: the refusal sentence, a question, a short
    pointer elsewhere) is not a candidate. In a definition's passage (it starts
    with the term its trail ends with: "smtpd_recipient_limit (default: 1000)"), the term and the
    first sentence are also read together, and every other candidate quotes the term first: the
    description alone does not say what it describes, or the value it defaults to.
    """
    out: list[Candidate] = []
    for p in passages:
        context = heading_context(p.chunk.heading_trail, p.hit.title)
        units = [u for u in chunk_units(p.chunk) if not never_an_answer(u.text)]
        term = definition_term(units, p.chunk.heading_trail)
        before = leads(units, p.chunk.text, p.chunk.start, p.chunk.heading_trail)
        for i, unit in enumerate(units):
            out.append(Candidate(p.number, unit, (*before[i], unit), context))
            nxt = units[i + 1] if i + 1 < len(units) else None
            if nxt is None or unit.kind != "sentence" or nxt.kind != "sentence":
                continue
            if unit is term:  # read as a manual page joins them: "term: description"
                window = Unit(unit.start, nxt.end, f"{unit.text}: {nxt.text}", "window")
                out.append(Candidate(p.number, window, (unit, nxt), context))
            elif "\n\n" not in p.chunk.text[unit.end - p.chunk.start : nxt.start - p.chunk.start]:
                window = Unit(unit.start, nxt.end, f"{unit.text} {nxt.text}", "window")
                out.append(Candidate(p.number, window, (*before[i], unit, nxt), context))
    return out


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float  # the reader's: the pair classifier and the span head together (what picks units)
    pair: float  # the pair classifier's alone (what the refusal guard reads)


@dataclass(frozen=True)
class Reading:
    """The reader's scores for one question over one context, best first."""

    scored: tuple[Scored, ...]

    @property
    def best(self) -> float:
        """The best unit's score (pair classifier and span head): what orders the units."""
        return self.scored[0].score if self.scored else 0.0

    @property
    def guard(self) -> float:
        """The best pair-classifier score: what the refusal guard and the LLM fallback compare with
        their thresholds. Chosen on golden dev: with the span head's score in it the guard refused
        as many unanswerable questions only by refusing more answerable ones (docs/evaluation.md)."""
        return max((s.pair for s in self.scored), default=0.0)


def reading_json(reading: Reading, threshold: float, top: int = 5) -> dict[str, object]:
    """What a trace keeps of a reading: the best pair-classifier score and the threshold it is
    compared with, and the top candidates with their scores (span head included) and pair scores."""
    return {
        "best": round(reading.guard, 4),
        "threshold": threshold,
        "scored": len(reading.scored),
        "top": [
            {
                "n": s.candidate.passage,
                "start": s.candidate.unit.start,
                "end": s.candidate.unit.end,
                "kind": s.candidate.unit.kind,
                "score": round(s.score, 4),
                "pair": round(s.pair, 4),
            }
            for s in reading.scored[:top]
        ],
    }


class Reader:
    """Scores the candidate units of a context with the trained model.

    ``prefilter`` ranks candidates cheaply (the extractive generator's similarity and term
    overlap) and only the top ``limit`` reach the model: the cost of a question is bounded.
    The last readings are kept, so the refusal guard and the generator share one. ``span_weight``
    adds the span head's log-odds to the pair classifier's (answer/span.py; 0: off, the default).
    """

    name = "citeline"

    def __init__(
        self,
        model: CrossEncoderModel,
        limit: int = 12,
        prefilter: Prefilter | None = None,
        span_weight: float = 0.0,
    ) -> None:
        self.model = model
        self.limit = limit
        self.prefilter = prefilter
        self.span_weight = span_weight
        self._recent: OrderedDict[tuple[str, tuple[str, ...]], Reading] = OrderedDict()

    def read(self, question: Query | str, passages: Sequence[Passage]) -> Reading:
        query = analyze(question)
        key = (query.text, tuple(f"{p.number}:{p.chunk.id}" for p in passages))
        if key in self._recent:
            self._recent.move_to_end(key)
            return self._recent[key]
        found = candidates(passages)
        if self.prefilter is not None and len(found) > self.limit:
            found = self.prefilter(query, found)[: self.limit]
        weight = self.model.span_weight(self.span_weight)
        pair, span = self.model.reader_logits(query.text, [c.model_text for c in found], weight > 0)
        scores, alone = _sigmoid(pair + weight * span), _sigmoid(pair)
        order = sorted(range(len(found)), key=lambda i: (-float(scores[i]), i))
        reading = Reading(tuple(Scored(found[i], float(scores[i]), float(alone[i])) for i in order))
        self._recent[key] = reading
        while len(self._recent) > 8:
            self._recent.popitem(last=False)
        return reading


class Prefilter:
    """Cheap ranking of candidates: embedding similarity plus IDF-weighted term coverage."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def __call__(self, query: Query, found: Sequence[Candidate]) -> list[Candidate]:
        from citeline.answer.relevance import weighted_coverage
        from citeline.embedding.memo import remembered

        embedded = [embedded_texts(c) for c in found]
        texts = list(dict.fromkeys([query.text, *(t for ts in embedded for t in ts)]))
        vectors = remembered(self.embedder, texts)
        row = {t: i for i, t in enumerate(texts)}
        sims = [composed(vectors[[row[t] for t in ts]]) @ vectors[0] for ts in embedded]
        weights = query.weights or None
        scores = [
            0.55 * float(sim) + 0.45 * weighted_coverage(query.terms, c.model_text, weights)
            for c, sim in zip(found, sims, strict=True)
        ]
        order = sorted(range(len(found)), key=lambda i: (-scores[i], i))
        return [found[i] for i in order]


def embedded_texts(candidate: Candidate) -> tuple[str, ...]:
    """What the prefilter embeds for a candidate: its text, or for a window of two sentences the
    texts of the two sentences (each one a candidate of its own, and a unit the extractive
    generator embeds too), whose vectors are composed: a window costs no embedding of its own."""
    if candidate.unit.kind != "window":
        return (candidate.model_text,)
    *_, first, second = candidate.parts
    return tuple(f"{candidate.context}: {u.text}" if candidate.context else u.text for u in (first, second))


def composed(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """One unit vector for the rows of ``vectors`` (unit vectors): their normalised sum."""
    total = vectors.sum(axis=0, dtype=np.float32)
    norm = float(np.linalg.norm(total))
    return np.asarray(total / norm if norm > 0 else total, dtype=np.float32)


def reader_factory(context: BuildContext | None, argument: str | None) -> Reader:
    """``citeline`` (the packaged model) or ``citeline:DIR`` (another export of it)."""
    folder = Path(argument).expanduser() if argument else PACKAGED
    if context is None:
        return Reader(packaged_model(folder))
    settings = context.settings
    return Reader(
        packaged_model(folder),
        limit=settings.reader_units,
        prefilter=Prefilter(context.embedder),
        span_weight=settings.reader_span_weight,
    )


class ReaderReranker:
    """The reader as a passage reranker: a passage scores its best unit (sentence, row, item,
    window), and the order fuses that rank with the retrieval's (reciprocal ranks, k = 60).

    Measured on golden dev (46 answerable questions with resolved evidence, top 10 reordered):
    gold passage in the top 5, retrieval alone 0.696, best unit alone 0.717, fused 0.761. The model
    scoring a passage's whole text instead (its first version) fell to 0.522: it was trained on
    units, and a chunk's text runs past its 128 tokens. Through the whole pipeline the answers did
    not follow (golden dev, answers naming the gold: none 0.653, this 0.612, late-interaction over
    30 0.694 at 2.2x the latency): reranking stays off by default.
    """

    name = "reader"
    rrf_k = 60

    def __init__(self, model: CrossEncoderModel, span_weight: float = 0.0) -> None:
        self.model = model
        self.span_weight = span_weight

    def rerank(self, query: Query | str, hits: Sequence[Hit]) -> list[Hit]:
        from dataclasses import replace

        from citeline.types import StageScore

        if not hits:
            return []
        passages = [Passage(number=i, hit=h, text=h.chunk.text) for i, h in enumerate(hits, 1)]
        found = candidates(passages)
        scores = self.model.reader_scores(
            analyze(query).text, [c.model_text for c in found], self.span_weight
        )
        best = [0.0] * len(hits)
        for c, score in zip(found, scores, strict=True):
            best[c.passage - 1] = max(best[c.passage - 1], float(score))
        by_reader = sorted(range(len(hits)), key=lambda i: (-best[i], i))
        reader_rank = {i: r for r, i in enumerate(by_reader, 1)}
        fused = {i: 1 / (self.rrf_k + i + 1) + 1 / (self.rrf_k + reader_rank[i]) for i in range(len(hits))}
        order = sorted(range(len(hits)), key=lambda i: (-fused[i], i))
        return [
            replace(hits[i], score=fused[i], stages={**hits[i].stages, "rerank": StageScore(best[i], r)})
            for r, i in enumerate(order, 1)
        ]


def reader_reranker_factory(context: BuildContext | None, argument: str | None) -> ReaderReranker:
    model = packaged_model(Path(argument).expanduser() if argument else PACKAGED)
    return ReaderReranker(model, context.settings.reader_span_weight if context is not None else 0.0)
