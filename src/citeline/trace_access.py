"""A trace as one reader may see it: its shape and timings always, document content only from
documents that reader may read now.

A trace records another principal's answer: the passages it retrieved, their sources and
headings, the generator's completion, the claim checks' sentences and the citations' quotes. An
admin key opens every trace (``GET /v1/traces/ID``) but reads documents through its own ACL like
every key, so a trace must not be a way around that ACL. Whatever came from a document the reader
may not read is left out: candidates keep their scores and ranks but not their chunk, source,
heading or span (``redacted``); citations keep their number only; and the text a generator wrote
after reading such a passage (the completion, the answer, the claim checks' sentences) is left out
too, since it may repeat the passage. The question, timings, scores and verdicts stay.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from citeline.filters import Filter, Principal
from citeline.trace import Candidates, Check, Trace, TracedHit

if TYPE_CHECKING:
    from citeline.index.base import Store

#: the generator that only ever quotes the passage a sentence cites
_QUOTING = "extractive"


def chunk_ids_of(trace: Trace) -> set[str]:
    ids = {c for c, _ in trace.candidates.bm25} | {c for c, _ in trace.candidates.dense}
    ids |= {h.chunk_id for h in trace.candidates.fused} | {h.chunk_id for h in trace.context}
    ids |= {str(c.get("chunk_id", "")) for c in trace.citations}
    ids.discard("")
    return ids


def readable_chunks(store: Store, principal: Principal, chunk_ids: set[str]) -> set[str]:
    """The chunks of ``chunk_ids`` that still exist in a document ``principal`` may read."""
    if not chunk_ids:
        return set()
    found = store.chunks(sorted(chunk_ids))
    documents = tuple(sorted({doc.id for _, doc in found.values()}))
    if not documents:
        return set()
    allowed = {d.id for d in store.documents(Filter(principal=principal, documents=documents))}
    return {cid for cid, (_, doc) in found.items() if doc.id in allowed}


def visible_trace(trace: Trace, store: Store, principal: Principal) -> Trace:
    """``trace`` without what ``principal`` may not read (unchanged for an admin principal)."""
    if principal.admin:
        return trace
    return redact(trace, readable_chunks(store, principal, chunk_ids_of(trace)))


def redact(trace: Trace, readable: set[str]) -> Trace:
    """``trace`` keeping the content of the ``readable`` chunks only (pure: tests give the set)."""

    def hit(h: TracedHit) -> TracedHit:
        if h.chunk_id in readable:
            return h
        return replace(h, chunk_id="", source="", heading="", start=0, end=0, redacted=True)

    hidden = {h.n for h in trace.context if h.chunk_id not in readable and h.n is not None}
    if not hidden and all(c in readable for c in chunk_ids_of(trace)):
        return trace

    def check(c: Check) -> Check:
        # an LLM may carry any passage's words into any sentence; the extractive generator quotes
        # the cited passage only
        if set(c.citations) & hidden or (hidden and trace.generator != _QUOTING):
            return replace(c, text="", reason="", redacted=True)
        return c

    def citation(c: Any) -> Any:
        if str(c.get("chunk_id", "")) in readable:
            return c
        return {"n": c.get("n"), "redacted": True}

    changes: dict[str, Any] = {
        "candidates": Candidates(
            tuple((c, s) if c in readable else ("", s) for c, s in trace.candidates.bm25),
            tuple((c, s) if c in readable else ("", s) for c, s in trace.candidates.dense),
            tuple(hit(h) for h in trace.candidates.fused),
        ),
        "context": tuple(hit(h) for h in trace.context),
        "citations": tuple(citation(c) for c in trace.citations),
        "verification": tuple(check(c) for c in trace.verification),
        "redacted": True,
    }
    if hidden:
        changes["raw_completion"] = None
        if trace.fallback is not None:  # the refused model's sentences: any passage's words
            changes["fallback"] = {
                **trace.fallback,
                "verification": [
                    {**c, "text": "", "reason": "", "redacted": True}
                    for c in trace.fallback.get("verification", [])
                ],
            }
        if not trace.refused:  # the refusal sentence holds nothing from any document
            changes["answer"] = ""
        if trace.reader is not None:
            reader = dict(trace.reader)
            reader["top"] = [
                {**u, "start": 0, "end": 0, "redacted": True} if u.get("n") in hidden else u
                for u in reader.get("top", [])
            ]
            changes["reader"] = reader
    return trace.with_(**changes)
