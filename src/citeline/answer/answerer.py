"""Ask: retrieve, select context, guard, generate, resolve citations, check claims, trace."""

from __future__ import annotations

import dataclasses
import time
import uuid
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from citeline.answer.bearing import bearing_units, deeper_context, missing_value
from citeline.answer.citations import StreamingCitationFilter, escape_markers
from citeline.answer.claims import ClaimChecker, as_cited
from citeline.answer.context import TokenCounter, assemble
from citeline.answer.extractive import ExtractiveGenerator as UnitScorer
from citeline.answer.fallback import below_floor, fallback_json, falls_back
from citeline.answer.generators.base import Generator
from citeline.answer.prompt import near_refusal, parse_free_text
from citeline.answer.reader import Reader, Reading, reading_json
from citeline.answer.relevance import Relevance, assess
from citeline.answer.verify import Support, Verifier
from citeline.errors import InvalidQuestionError
from citeline.filters import Filter
from citeline.index.base import Store
from citeline.query.analysis import Query, analyze
from citeline.query.slot import Slot
from citeline.rerank.base import Reranker
from citeline.retrieval.diversity import mmr
from citeline.retrieval.hybrid import HybridRetriever, Retrieval
from citeline.settings import Settings
from citeline.trace import Candidates, Check, Trace, TracedHit
from citeline.types import (
    REFUSAL,
    Answer,
    AnswerSentence,
    Citation,
    Draft,
    Hit,
    Passage,
    SentenceQuote,
    text_hash,
)

#: called once per draft sentence right after its claim check, in answer order, with the sentence
#: (passage numbers as in the context, before renumbering), the check's result and the passages
SentenceListener = Callable[[AnswerSentence, Support, Sequence[Passage]], None]
#: hears where an answer stands: ("retrieved", {"passages": 5, ...}), ("read", ...), ("generating",
#: ...), ("checking", {"sentence": k, "of": n}) before each claim check (answer/streaming.py)
ProgressListener = Callable[[str, Mapping[str, Any]], None]


@dataclass(frozen=True)
class Prepared:
    """A question taken up to the refusal decision (``Answerer.prepare``)."""

    query: Query
    retrieval: Retrieval
    #: the reranked, diversified hits the passages are assembled from
    context: list[Hit]
    relevance: Relevance
    passages: list[Passage]


@dataclass
class Stage:
    """Times a block and records it under ``name``."""

    timings: dict[str, float]
    name: str

    def __enter__(self) -> Stage:
        self.t = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timings[self.name] = self.timings.get(self.name, 0.0) + (time.perf_counter() - self.t) * 1000


def below_threshold(signal: str, score: float, threshold: float) -> str:
    """A refusal's reason that never reads "0.12 below threshold 0.12": as many digits as tell
    the score from the threshold (two at least, six at most)."""
    digits = 2
    while digits < 6 and f"{score:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return f"{signal} {score:.{digits}f} below threshold {threshold:.{digits}f}"


class Answerer:
    def __init__(
        self,
        store: Store,
        retriever: HybridRetriever,
        generator: Generator,
        verifier: Verifier,
        settings: Settings,
        reranker: Reranker | None = None,
        count_tokens: TokenCounter | None = None,
        reader: Reader | None = None,
        floor: UnitScorer | None = None,
        fallback: Generator | None = None,
    ) -> None:
        self.store = store
        self.retriever = retriever
        self.generator = generator
        self.verifier = verifier
        self.settings = settings
        self.reranker = reranker
        #: the trained reader: its best score over the context is what the refusal guard decides on
        self.reader = reader
        #: with an LLM generator, the extractive generator's unit scores: the best must reach its
        #: ``min_score`` (``min_answer_score``) before the LLM is called, as before an extractive answer
        self.floor = floor
        #: with an LLM generator, the extractive generator: its answer on the same passages when the
        #: model's is refused for finding nothing or for failing its checks (``fallback_reader_score``)
        self.fallback = fallback
        # Without the embedder's tokenizer, estimate ~4 characters per token.
        self.count_tokens: TokenCounter = count_tokens or (lambda texts: [len(t) // 4 + 2 for t in texts])

    def check_question(self, question: str) -> str:
        question = " ".join(question.split())
        if not question:
            raise InvalidQuestionError(
                'The question is empty. Ask something, e.g. citeline ask "How do I ...?"'
            )
        if len(question) > self.settings.max_question_chars:
            raise InvalidQuestionError(
                f"The question is {len(question):,} characters long; the limit is "
                f"{self.settings.max_question_chars:,} (max_question_chars). Shorten it to the actual question."
            )
        return question

    def prepare(self, question: str, flt: Filter, timings: dict[str, float] | None = None) -> Prepared:
        """``question`` (already checked) analysed, retrieved, its context chosen, its relevance
        assessed and its passages assembled: what the refusal decision reads (``ask``, and
        ``training.refusal_signals``, which measures those signals whatever the thresholds)."""
        timings = {} if timings is None else timings
        # IDF weights over what this principal may read: restricted documents change nothing it sees.
        query = analyze(question)
        query = query.with_weights(self.store.term_weights(query.terms, flt))
        with Stage(timings, "retrieve"):
            retrieval = self.retriever.retrieve(
                query,
                flt,
                k=self.settings.top_k,
                fusion=self.settings.fusion,
                rrf_k=self.settings.rrf_k,
                alpha=self.settings.alpha,
            )
        context = self.context(retrieval, timings)
        with Stage(timings, "deepen"):
            context = deeper_context(query.slot, context, retrieval.hits)
        relevance = assess(
            query, context, retrieved=retrieval.hits, keyword_only=retrieval.degraded is not None
        )
        with Stage(timings, "assemble"):
            passages = assemble(query.text, context, self.generator.context_tokens, self.count_tokens)
        return Prepared(query, retrieval, context, relevance, passages)

    def context(self, retrieval: Retrieval, timings: dict[str, float]) -> list[Hit]:
        """Rerank the candidates, then choose a diverse top-n for the prompt."""
        hits = retrieval.hits
        if self.reranker is not None and hits:
            with Stage(timings, "rerank"):
                hits = self.reranker.rerank(retrieval.query, hits[: self.settings.rerank_depth])
        n = self.settings.context_passages
        if len(hits) <= 1:
            return hits[:n]
        with Stage(timings, "diversify"):
            by_hash = {h.chunk.id: text_hash(h.chunk.index_text) for h in hits}
            cached = self.store.cached_vectors(by_hash.values())
            if len(cached) < len(set(by_hash.values())):
                return hits[:n]
            vectors = np.stack([cached[by_hash[h.chunk.id]] for h in hits])
            relevance = [float(-i) for i in range(len(hits))]  # rank order is the relevance we trust
            order = mmr(hits, relevance, vectors, n, self.settings.mmr_lambda)
        return [hits[i] for i in order]

    def ask(
        self,
        question: str,
        flt: Filter,
        on_text: Callable[[str], None] | None = None,
        on_sentence: SentenceListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> Answer:
        """Answer ``question``. With ``on_text``, the generator's text is passed on as it streams
        (citation markers are only ever emitted whole and in range); the returned Answer is then
        built from exactly the streamed text (the extractive text streamed after a refused model
        answer, where it replaces it: answer/fallback.py), so streaming and not streaming give the same answer
        from a deterministic generator. ``on_sentence`` hears each sentence once it is checked
        (answer/streaming.py turns that into verified-sentence events); ``on_progress`` hears
        each stage as it is reached."""
        t0 = time.perf_counter()
        question = self.check_question(question)
        timings: dict[str, float] = {}
        progress: ProgressListener = on_progress or (lambda _stage, _data: None)
        prepared = self.prepare(question, flt, timings)
        query, retrieval = prepared.query, prepared.retrieval
        relevance, passages = prepared.relevance, prepared.passages
        progress("retrieved", {"candidates": len(retrieval.hits), "passages": len(passages)})
        trace = Trace(
            id=uuid.uuid4().hex[:16],
            question=question,
            owner=flt.principal.label,
            created_at=time.time(),
            candidates=Candidates(
                tuple(retrieval.lexical),
                tuple(retrieval.dense),
                tuple(TracedHit.of(h) for h in retrieval.hits),
            ),
            expansion=(
                {"queries": list(retrieval.expansion.queries), "passage": retrieval.expansion.passage}
                if retrieval.expansion is not None
                else None
            ),
            context=tuple(TracedHit.of(p.hit, p.number) for p in passages),
            relevance=relevance.to_json(),
            slot=query.slot.to_json(),
            threshold=self.settings.refusal_threshold,
            generator=self.generator.name,
            verifier=self.verifier.name,
            degraded=retrieval.degraded,
        )
        reading = None
        if self.reader is not None and passages:
            with Stage(timings, "read"):
                reading = self.reader.read(query, passages)
            trace = trace.with_(reader=reading_json(reading, self.settings.reader_threshold))
            progress("read", {"best": round(reading.guard, 4)})
        reason = (
            self._refusal_reason(relevance, passages, reading, query.slot)
            or missing_value(query.slot, passages)
            or below_floor(self.floor, query, passages)
        )
        draft: Draft | None = None
        if reason is None:
            progress("generating", {"generator": self.generator.name})
            with Stage(timings, "generate"):
                if on_text is None:
                    draft = self.generator.generate(query, passages)
                else:
                    draft = self._stream(query, passages, on_text)
            trace = trace.with_(
                generator_called=True,
                raw_completion=draft.raw,
                confidence=draft.confidence,
                tokens={"prompt": draft.prompt_tokens, "completion": draft.completion_tokens},
            )
        answer, trace = self._resolve(
            question, passages, draft, relevance, reason, timings, trace, on_sentence, progress
        )
        if self.fallback is not None and falls_back(answer, reading, self.settings.fallback_reader_score):
            with Stage(timings, "fallback"):
                draft = self.fallback.generate(query, passages)
            if on_text is not None:  # what is streamed is what the answer is built from
                on_text("\n\n" + draft.raw)
            trace = trace.with_(fallback=fallback_json(self.generator.name, answer, trace))
            answer, trace = self._resolve(
                question,
                passages,
                draft,
                relevance,
                None,
                timings,
                trace,
                on_sentence,
                progress,
                self.fallback.name,
            )
        timings["total"] = (time.perf_counter() - t0) * 1000
        trace = trace.with_(timings_ms=dict(timings), answer=answer.answer, refused=answer.refused)
        trace_id = self._save_trace(trace)
        return dataclasses.replace(
            answer,
            trace_id=trace_id,
            timings_ms=timings,
            confidence=None if draft is None else draft.confidence,
            reader_score=None if reading is None else reading.guard,
            degraded=retrieval.degraded,
            slot=query.slot.to_json(),
        )

    def _stream(self, question: Query, passages: list[Passage], on_text: Callable[[str], None]) -> Draft:
        markers = StreamingCitationFilter(len(passages))
        pieces: list[str] = []
        for chunk in self.generator.stream(question, passages):
            text = markers.feed(chunk)
            if text:
                pieces.append(text)
                on_text(text)
        tail = markers.flush()
        if tail:
            pieces.append(tail)
            on_text(tail)
        draft = parse_free_text("".join(pieces), len(passages))
        return dataclasses.replace(
            draft, invented_citations=tuple(markers.invented) + draft.invented_citations
        )

    def _refusal_reason(
        self,
        relevance: Relevance,
        passages: Sequence[Passage],
        reading: Reading | None = None,
        slot: Slot | None = None,
    ) -> str | None:
        if not passages:
            return "nothing retrieved"
        if relevance.missing_identifiers:
            return f"not in any retrieved passage: {', '.join(relevance.missing_identifiers)}"
        if relevance.score < self.settings.refusal_threshold:
            return below_threshold("relevance", relevance.score, self.settings.refusal_threshold)
        # the reader's threshold was chosen with the relevance guard in front of it (calibration.py);
        # it scores topic more than answer, so it does not overrule a unit that states the value
        # asked for about the subject (golden dev: "Python >= 3.8.0" at reader 0.09)
        if (
            reading is not None
            and reading.guard < self.settings.reader_threshold
            and not (slot is not None and slot.wants_value and bearing_units(slot, passages))
        ):
            return below_threshold("reader score", reading.guard, self.settings.reader_threshold)
        return None

    def _resolve(
        self,
        question: str,
        passages: list[Passage],
        draft: Draft | None,
        relevance: Relevance,
        reason: str | None,
        timings: dict[str, float],
        trace: Trace,
        on_sentence: SentenceListener | None = None,
        progress: ProgressListener | None = None,
        generator: str | None = None,
    ) -> tuple[Answer, Trace]:
        generator = generator or self.generator.name

        def refusal(
            why: str, sentences: tuple[AnswerSentence, ...] = (), dropped: tuple[int, ...] = ()
        ) -> tuple[Answer, Trace]:
            return Answer(
                question,
                REFUSAL,
                True,
                (),
                sentences,
                dropped,
                generator,
                relevance=relevance.score,
                refusal_reason=why,
            ), trace.with_(refusal_reason=why, verification=tuple(checks), dropped_citations=dropped)

        checks: list[Check] = []
        if draft is None:
            return refusal(reason or "refused")
        if draft.refused or not draft.sentences:
            if draft.confidence is not None and not draft.sentences:
                return refusal(f"no sentence answers the question well enough (best {draft.confidence:.2f})")
            return refusal("the generator found no answer in the sources")
        by_number = {p.number: p for p in passages}
        claims = ClaimChecker(self.verifier, by_number)
        dropped = list(draft.invented_citations)
        sentences: list[AnswerSentence] = []
        # per passage: the span of the unit that best supports a sentence citing it, with its score
        quotes: dict[int, tuple[float, tuple[int, int]]] = {}
        said: set[str] = set()  # small models can loop, writing one sentence again and again
        with Stage(timings, "verify"):
            for k, s in enumerate(draft.sentences, 1):
                if progress is not None:
                    progress("checking", {"sentence": k, "of": len(draft.sentences)})
                text = escape_markers(s.text)  # a document's own "[7]" is text, not a citation
                if near_refusal(text):  # the refusal sentence only ever appears with refused: true
                    sentences.append(AnswerSentence(text, (), False, True, 0.0))
                    checks.append(Check(text, (), False, 0.0, "the refusal sentence is not an answer"))
                    continue
                if (said_key := " ".join(text.lower().split())) in said:
                    sentences.append(AnswerSentence(text, (), False, True, 0.0))
                    checks.append(Check(text, (), False, 0.0, "repeats an earlier sentence of the answer"))
                    continue
                said.add(said_key)
                valid = tuple(n for n in dict.fromkeys(s.citations) if n in by_number)
                dropped += [n for n in s.citations if n not in by_number]
                cited = [as_cited(by_number[n]) for n in valid]
                support = claims.check(text, cited)
                valid, cited, support, recited = claims.recite(text, valid, cited, support)
                keep = support.supported or self.settings.unsupported == "mark"
                # only the citations whose passage supports the sentence (precision.py)
                shown = claims.precise(text, cited, support) if keep else valid
                own = tuple(
                    SentenceQuote(
                        n, *support.quotes.get(n, (by_number[n].chunk.start, by_number[n].chunk.end))
                    )
                    for n in shown
                )
                sentences.append(AnswerSentence(text, shown, support.supported, not keep, support.score, own))
                checks.append(
                    Check(
                        text,
                        valid,
                        support.supported,
                        support.score,
                        recited or support.reason,
                        self.verifier.name,
                        unsupporting=tuple(n for n in valid if n not in shown),
                    )
                )
                if on_sentence is not None:
                    on_sentence(sentences[-1], support, passages)
                if keep:
                    for q in own:
                        if q.n not in quotes or support.score > quotes[q.n][0]:
                            quotes[q.n] = (support.score, (q.quote_start, q.quote_end))
        kept = [s for s in sentences if not s.removed and s.citations]
        if not any(s.supported for s in kept):
            return refusal(
                "no answer sentence is supported by its cited passage", tuple(sentences), tuple(dropped)
            )
        # Renumber by first appearance so the reader sees [1], [2], ... in order.
        order = list(dict.fromkeys(n for s in kept for n in s.citations))
        renumber = {old: new for new, old in enumerate(order, 1)}
        final = [
            dataclasses.replace(
                s,
                citations=tuple(renumber[n] for n in s.citations),
                quotes=tuple(dataclasses.replace(q, n=renumber[q.n]) for q in s.quotes),
            )
            if not s.removed
            else s
            for s in sentences
        ]
        # the claim checks and the context name passages as the answer does ([1], [2], [2])
        checks = [
            dataclasses.replace(c, answer_citations=s.citations) if not s.removed else c
            for c, s in zip(checks, final, strict=True)
        ]
        text = " ".join(
            s.text + "".join(f" [{n}]" for n in s.citations) + ("" if s.supported else " (unverified)")
            for s in final
            if not s.removed and s.citations
        )
        citations = [
            Citation.of(by_number[old], renumber[old], quotes[old][1] if old in quotes else None)
            for old in order
        ]
        trace = trace.with_(
            verification=tuple(checks),
            dropped_citations=tuple(dropped),
            citations=tuple(c.to_json() for c in citations),
            context=tuple(dataclasses.replace(h, cited_as=renumber.get(h.n or 0)) for h in trace.context),
        )
        return Answer(
            question,
            text,
            False,
            tuple(citations),
            tuple(final),
            tuple(dropped),
            generator,
            relevance=relevance.score,
        ), trace

    def _save_trace(self, trace: Trace) -> str | None:
        if not self.settings.trace:
            return None
        try:
            self.store.save_trace(trace)
        except Exception as exc:  # a read-only or locked index must not cost the user the answer
            warnings.warn(
                f"Could not write the trace ({exc}); the answer is returned without one.", stacklevel=2
            )
            return None
        return trace.id
