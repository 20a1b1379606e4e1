"""Running a golden set through a knowledge base: ask every question, score it, build the report."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.answer.verify import Cited
from citeline.errors import CitelineError
from citeline.eval.answers.evidence import DocumentResolver
from citeline.eval.answers.golden import validate_row
from citeline.eval.answers.row import QuestionRow
from citeline.eval.answers.scoring import Observation, Retrieved, score_question
from citeline.eval.answers.summary import summarize
from citeline.filters import Filter, Principal
from citeline.types import Answer

if TYPE_CHECKING:
    from citeline.answer.verify import Verifier
    from citeline.kb import KnowledgeBase

FORMAT = "citeline-answers/1"


def _retrieved(
    kb: KnowledgeBase, items: Iterable[Mapping[str, Any]], ids: Mapping[str, str]
) -> list[Retrieved]:
    out = []
    for h in items:
        doc_id = ids.get(h["source"])
        if doc_id is None:
            doc = kb.store.find_document(h["source"])
            doc_id = doc.id if doc else h["source"]
        out.append(Retrieved(doc_id, h["source"], int(h["start"]), int(h["end"])))
    return out


def _hits(hits: Iterable[Any]) -> list[Retrieved]:
    return [Retrieved(h.chunk.document_id, h.source, h.chunk.start, h.chunk.end) for h in hits]


def _judge(judge: Verifier, answer: Answer) -> tuple[int, int]:
    """(supported, judged) over the shown sentences with citations, by an independent judge."""
    by_n = {c.n: c for c in answer.citations}
    supported = judged = 0
    for s in answer.sentences:
        if s.removed or not s.citations:
            continue
        cited = [
            Cited(n, c.quote, c.start, " > ".join((c.heading or "").split(" > ")[-2:]))
            for n in s.citations
            if n in by_n
            for c in (by_n[n],)
        ]
        judged += 1
        supported += bool(judge.check(s.text, cited).supported)
    return supported, judged


def evaluate_answers(
    kb: KnowledgeBase,
    golden_rows: Sequence[Mapping[str, Any]],
    k: int = 5,
    *,
    docs_root: str | Path | None = None,
    judge: Verifier | None = None,
    dataset: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    principal: Principal | None = None,
) -> dict[str, Any]:
    """Ask every golden question with ``kb.ask`` and measure it (see the package docstring).

    ``principal`` (default: the local administrator) is whose view is evaluated: its ACLs apply
    to every question, and documents it may not read count as not indexed.

    Candidates and context come from the answer's stored trace; with tracing off they are
    recomputed with the same retriever and the Answerer's own context selection.
    """
    rows_in = [validate_row(r) for r in golden_rows]
    resolver = DocumentResolver(kb, docs_root, principal)
    everything = Filter(principal=resolver.principal)
    ids = {d.source: d.id for d in resolver.docs}
    verifier = kb.components.verifier
    verifier_name = str(getattr(verifier, "name", type(verifier).__name__))
    judge_name = None if judge is None else str(getattr(judge, "name", type(judge).__name__))
    scored: list[QuestionRow] = []
    scope_warnings: list[str] = []
    generator_name: str | None = None
    for i, g in enumerate(rows_in):
        gold = [resolver.resolve(e) for e in g["evidence"]]
        flt, scope_note = resolver.scope_filter(g.get("scope"))
        if scope_note:
            scope_warnings.append(f"{g['id']}: {scope_note}")
        started = time.perf_counter()
        try:
            answer = kb.ask(g["question"], flt=flt or everything)
        except CitelineError as exc:
            latency = (time.perf_counter() - started) * 1000
            scored.append(score_question(Observation(g, None, gold, latency_ms=latency, error=str(exc)), k))
            continue
        latency = (time.perf_counter() - started) * 1000
        generator_name = answer.generator
        trace = kb.trace(answer.trace_id) if answer.trace_id else None
        if trace is not None:
            candidates = _retrieved(kb, [h.to_json() for h in trace.candidates.fused], ids)
            context = _retrieved(kb, [h.to_json() for h in trace.context], ids)
            tokens = dict(trace.tokens) or None
            generator_name = trace.generator or generator_name
        else:
            answerer = kb.components.answerer()
            prepared = answerer.prepare(answerer.check_question(g["question"]), flt or everything)
            candidates = _hits(prepared.retrieval.hits)
            context = _hits(prepared.context)
            tokens = None
        judged = _judge(judge, answer) if judge is not None and judge_name != verifier_name else None
        obs = Observation(
            g,
            answer,
            gold,
            candidates,
            context,
            latency,
            tokens,
            quote_text=lambda d, s, e: resolver.text(d)[s:e],
            judge_supported=judged,
            extra={
                "trace_id": answer.trace_id,
                "reader_score": answer.reader_score,
                "relevance": answer.relevance,
                # differs from the report's generator where an LLM's refused answer gave way (fallback.py)
                "generator": answer.generator,
            },
        )
        scored.append(score_question(obs, k))
        if progress:
            progress(i + 1, len(rows_in))
    summary = summarize(scored, k, judge_name=judge_name, pipeline_verifier=verifier_name)
    s = kb.settings
    warnings = scope_warnings + [
        f"{r.id}: evidence in {e.source}: {e.note}" for r in scored for e in r.gold_evidence if not e.resolved
    ]
    return {
        "format": FORMAT,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dataset": dataset,
        "k": k,
        "generator": generator_name or s.generator,
        "pipeline_verifier": verifier_name,
        "judge_name": judge_name,
        "settings": {
            "embedder": kb.embedder.name,
            "generator": s.generator,
            "reranker": s.reranker,
            "top_k": s.top_k,
            "context_passages": s.context_passages,
            "refusal_threshold": s.refusal_threshold,
            "min_answer_score": s.min_answer_score,
            "fusion": s.fusion,
            "reader": s.reader,
            "reader_threshold": s.reader_threshold,
            "extractive_picks": s.extractive_picks,
            "verifier": s.verifier,
            "checker_threshold": s.checker_threshold,
        },
        "documents": len(resolver.docs),
        **summary,
        "warnings": warnings,
        "rows": [r.to_json() for r in scored],
    }
