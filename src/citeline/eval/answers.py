"""Answer quality on a golden set: retrieval, correctness, citations, refusals, faithfulness, cost.

Golden-set format
-----------------
A golden set is a JSONL file, one question per line::

    {"id": "q1",
     "question": "How long is the one-time token valid?",
     "answerable": true,
     "answers": ["45 minutes"],              # expected answer strings (any one may match) ...
     "reference": "It is valid for 45 minutes.",   # ... or one reference answer instead
     "evidence": [{"source": "guides/install.md", "page": null, "quote": "valid for 45 minutes"}],
     "scope": "q019",                        # optional: ask over the documents under this folder only
     "meta": {...}}                          # optional, free-form, copied to the report

* ``answerable`` says whether the documents hold the answer. For ``false`` the expected output is
  exactly the refusal ("I could not find this in the available documents."); ``answers``,
  ``reference`` and ``evidence`` may then be empty or absent.
* ``evidence`` is the gold evidence. ``source`` is a document path: as it was added to the index,
  relative to the documents folder (``docs_root``), or absolute. ``quote`` is text copied from the
  document; it is located in the *stored* document text (exactly, else ignoring case and runs of
  whitespace) to get its character span, searched on ``page`` first when a page is given. With no
  quote the gold span is the whole page (with ``page``) or the whole document. Every occurrence of
  the quote counts. **Chunk ids are not accepted**: they change whenever chunking does, so gold
  evidence is matched by span overlap, never by chunk identity.
* ``scope`` (optional) is a folder relative to the documents folder: the question is asked with a
  source-prefix filter so that only the documents under it are searched (a per-question context,
  as in RGB's protocol, inside one shared index).

Metric definitions (all in [0, 1] unless noted; ``None`` when the denominator is empty)
-------------------------------------------------------------------------------------
Over *answerable* questions whose evidence resolved to an indexed document:

* ``hit_rate@k``: share of questions with a gold document among the top k *documents* of the
  retriever's fused ranking (chunks collapsed to their document's best rank).
* ``recall@k``: mean share of a question's gold documents found in that top k.
* ``context_hit_rate``: share of questions where a gold evidence span overlaps a passage the
  generator was given (after reranking and diversification; the pipeline's own context).

Over answerable questions with ``answers`` (``token_f1`` also with ``reference``); the prediction
is the answer text without citation markers, and a refusal predicts the empty string:

* ``exact_match`` (SQuAD-normalised), ``token_f1`` (SQuAD bag-of-tokens F1, best gold answer),
  ``answer_contains`` (a gold answer occurs in the answer as whole normalised tokens).

Citations, by span overlap in the same document. A citation's span is its quoted span
``[quote_start, quote_end)`` (``[start, end)`` if that is empty):

* ``citation_precision``: citations overlapping a gold evidence span / all citations, pooled
  over answered, answerable questions with resolved evidence.
* ``citation_recall``: gold evidence items overlapped by at least one citation / all resolved gold
  evidence items, pooled over answerable questions (a refusal cites nothing, so it misses all).
* ``citation_f1``: harmonic mean of the two.

Refusals, with "refused" as the positive class:

* ``refusal_precision``: refused unanswerable / all refused.
* ``refusal_recall``: refused unanswerable / all unanswerable.
* ``refusal_f1``; ``false_refusal_rate``: refused answerable / all answerable (lower is better).

Faithfulness and judge:

* ``faithfulness``: share of the generator's sentences (including ones the pipeline then removed)
  that the pipeline's verifier marked ``supported``, pooled over answered questions.
* ``judge_support``: share of the *shown* answer sentences that an independent judge finds
  supported by their cited passages. Reported only when a judge other than the pipeline's own
  verifier is given; otherwise ``None`` with the reason.

Latency is the wall-clock time of ``kb.ask`` per question (p50/p95 in ms); cost is the prompt and
completion tokens recorded in each trace (``tokens``; zero for the extractive generator).

Failure stage of a question (the first stage, in pipeline order, that went wrong):
``not_retrieved`` (no gold evidence span overlaps any retrieved chunk), ``not_in_context``
(retrieved, but no gold span reached the generator's passages), ``refused_wrongly`` (the gold was
in the context and the pipeline refused), ``cited_wrongly`` (answered, but no citation overlaps a
gold span), ``answered_should_refuse`` (an unanswerable question got an answer); ``None`` = fine.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.errors import CitelineError
from citeline.eval.metrics import (
    contains_any,
    exact_match,
    hit_rate_at_k,
    percentile,
    precision_recall_f1,
    recall_at_k,
    span_overlap,
    token_f1,
)
from citeline.models import REFUSAL, Answer
from citeline.retrieval.filters import Filter

if TYPE_CHECKING:
    from citeline.answer.verify import Verifier
    from citeline.kb import KnowledgeBase

FORMAT = "citeline-answers/1"

STAGES: dict[str, str] = {
    "not_retrieved": "not retrieved",
    "not_in_context": "retrieved but not in the context",
    "refused_wrongly": "refused wrongly",
    "cited_wrongly": "cited wrongly",
    "answered_should_refuse": "answered when it should refuse",
    "error": "error while asking",
}

# Tracked metrics and whether higher is better (used by the baseline check and `compare`).
# Names with a cutoff are tracked by their base: "hit_rate@5" -> "hit_rate".
TRACKED: dict[str, bool] = {
    "hit_rate": True,
    "recall": True,
    "context_hit_rate": True,
    "exact_match": True,
    "token_f1": True,
    "answer_contains": True,
    "citation_precision": True,
    "citation_recall": True,
    "citation_f1": True,
    "refusal_precision": True,
    "refusal_recall": True,
    "refusal_f1": True,
    "false_refusal_rate": False,
    "faithfulness": True,
    "judge_support": True,
}

NO_JUDGE = "no independent judge configured"
SAME_JUDGE = "the judge is the pipeline's own verifier"

_MARKER = re.compile(r"\s*\[\d+\]|\s*\(unverified\)")


class GoldenFormatError(CitelineError):
    """A golden-set row is malformed; the message names the row and what to fix."""


# --------------------------------------------------------------------------------------------
# Golden rows
# --------------------------------------------------------------------------------------------


def validate_row(row: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Check one golden row and return it with defaults filled in; raises GoldenFormatError."""
    label = where or f"row {row.get('id', '?')!r}"
    if not isinstance(row, Mapping):
        raise GoldenFormatError(f"{label}: expected a JSON object.")
    for key in ("id", "question", "answerable"):
        if key not in row:
            raise GoldenFormatError(f"{label}: missing '{key}'.")
    if not isinstance(row["question"], str) or not row["question"].strip():
        raise GoldenFormatError(f"{label}: 'question' must be a non-empty string.")
    if not isinstance(row["answerable"], bool):
        raise GoldenFormatError(f"{label}: 'answerable' must be true or false.")
    answers = row.get("answers")
    if answers is not None and (
        not isinstance(answers, list) or not all(isinstance(a, str) for a in answers)
    ):
        raise GoldenFormatError(f"{label}: 'answers' must be a list of strings.")
    reference = row.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise GoldenFormatError(f"{label}: 'reference' must be a string.")
    scope = row.get("scope")
    if scope is not None and (not isinstance(scope, str) or not scope.strip("/\\ ")):
        raise GoldenFormatError(f"{label}: 'scope' must be a folder path (relative to the documents folder).")
    evidence = row.get("evidence") or []
    if not isinstance(evidence, list):
        raise GoldenFormatError(f"{label}: 'evidence' must be a list.")
    clean: list[dict[str, Any]] = []
    for i, ev in enumerate(evidence):
        if not isinstance(ev, Mapping):
            raise GoldenFormatError(f"{label}: evidence[{i}] must be an object.")
        if "chunk_id" in ev or "chunk" in ev:
            raise GoldenFormatError(
                f"{label}: evidence[{i}] names a chunk; chunk ids are not accepted (they change with "
                "chunking). Give the document 'source' and the 'quote' text instead."
            )
        source = ev.get("source")
        if not isinstance(source, str) or not source:
            raise GoldenFormatError(f"{label}: evidence[{i}] needs a 'source' (document path).")
        page = ev.get("page")
        if page is not None and (isinstance(page, bool) or not isinstance(page, int) or page < 1):
            raise GoldenFormatError(f"{label}: evidence[{i}].page must be a positive integer or null.")
        quote = ev.get("quote")
        if quote is not None and (not isinstance(quote, str) or not quote.strip()):
            raise GoldenFormatError(f"{label}: evidence[{i}].quote must be non-empty text or null.")
        clean.append({"source": source, "page": page, "quote": quote})
    return {
        **row,
        "id": str(row["id"]),
        "answers": list(answers) if answers is not None else None,
        "reference": reference,
        "evidence": clean,
    }


def load_golden(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a golden JSONL file."""
    import json

    rows: list[dict[str, Any]] = []
    p = Path(path)
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise GoldenFormatError(f"{p}:{n}: not valid JSON ({exc.msg}).") from exc
        rows.append(validate_row(data, f"{p}:{n}"))
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise GoldenFormatError(f"{p}: id {dup!r} appears more than once.")
    return rows


def write_golden(rows: Iterable[Mapping[str, Any]], path: str | Path) -> None:
    import json

    Path(path).write_text(
        "".join(json.dumps(dict(r), ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )


# --------------------------------------------------------------------------------------------
# Locating gold evidence in the stored text
# --------------------------------------------------------------------------------------------


def _folded(text: str, lo: int, hi: int) -> tuple[str, list[int]]:
    """text[lo:hi] lowercased with whitespace runs squeezed to one space, and each char's origin."""
    out: list[str] = []
    origin: list[int] = []
    in_space = False
    for i in range(lo, hi):
        ch = text[i]
        if ch.isspace():
            if not in_space and out:
                out.append(" ")
                origin.append(i)
            in_space = True
            continue
        in_space = False
        for c in ch.lower():
            out.append(c)
            origin.append(i)
    return "".join(out), origin


def locate_quote(text: str, quote: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
    """Every span of `quote` in text[lo:hi]: exact matches, else matches ignoring case and whitespace."""
    hi = len(text) if hi is None else hi
    needle = quote.strip()
    if not needle:
        return []
    spans: list[tuple[int, int]] = []
    at = text.find(needle, lo, hi)
    while at != -1:
        spans.append((at, at + len(needle)))
        at = text.find(needle, at + 1, hi)
    if spans:
        return spans
    hay, origin = _folded(text, lo, hi)
    folded_needle, _ = _folded(needle, 0, len(needle))
    folded_needle = folded_needle.strip()
    if not folded_needle:
        return []
    at = hay.find(folded_needle)
    while at != -1:
        end = at + len(folded_needle) - 1
        spans.append((origin[at], origin[end] + 1))
        at = hay.find(folded_needle, at + 1)
    return spans


@dataclass(frozen=True)
class GoldEvidence:
    """One gold evidence item resolved against the index.

    ``document_id`` is None when the source is not an indexed document; ``spans`` is empty when
    the quote was not found in it (both are reported as warnings and left out of span metrics).
    """

    source: str
    page: int | None
    quote: str | None
    document_id: str | None
    spans: tuple[tuple[int, int], ...] = ()
    note: str = ""

    @property
    def resolved(self) -> bool:
        return self.document_id is not None and bool(self.spans)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "page": self.page,
            "quote": self.quote,
            "document_id": self.document_id,
            "spans": [list(s) for s in self.spans],
            "resolved": self.resolved,
            "note": self.note,
        }


class DocumentResolver:
    """Maps a golden ``source`` to the stored document (exact source, resolved path, or path suffix)."""

    def __init__(self, kb: KnowledgeBase, docs_root: str | Path | None = None) -> None:
        self.kb = kb
        self.docs_root = Path(docs_root).resolve() if docs_root is not None else None
        self.docs = kb.store.documents()
        self.by_source = {d.source: d for d in self.docs}
        self.by_path = {str(d.metadata.get("path", "")): d for d in self.docs}
        self._texts: dict[str, str] = {}

    def text(self, document_id: str) -> str:
        if document_id not in self._texts:
            self._texts[document_id] = self.kb.store.document_text(document_id)
        return self._texts[document_id]

    def document_id(self, source: str) -> str | None:
        if source in self.by_source:
            return self.by_source[source].id
        candidates = []
        if self.docs_root is not None:
            candidates.append(str((self.docs_root / source).resolve()))
        candidates.append(str(Path(source).resolve()))
        for c in candidates:
            if c in self.by_path:
                return self.by_path[c].id
        wanted = "/" + source.replace("\\", "/").lstrip("./")
        matches = [d for d in self.docs if d.source.replace("\\", "/").endswith(wanted)]
        return matches[0].id if len(matches) == 1 else None

    def scope_filter(self, scope: str | None) -> tuple[Filter | None, str]:
        """A source-prefix filter for the documents under folder `scope`, and a note if none is there."""
        if scope is None:
            return None, ""
        base = self.docs_root if self.docs_root is not None else Path.cwd()
        folder = (base / scope).resolve()
        for d in self.docs:
            path = Path(str(d.metadata.get("path", "")))
            if folder in path.parents:
                rel = str(path.relative_to(folder))
                if d.source.endswith(rel):
                    prefix = d.source[: len(d.source) - len(rel)]
                    return Filter(source_prefix=prefix), ""
        # Nothing indexed there: the folder's own prefix matches no document, so the question sees nothing.
        return Filter(source_prefix=str(folder) + os.sep), f"scope {scope!r} holds no indexed document"

    def resolve(self, evidence: Mapping[str, Any]) -> GoldEvidence:
        source, page, quote = evidence["source"], evidence.get("page"), evidence.get("quote")
        doc_id = self.document_id(source)
        if doc_id is None:
            return GoldEvidence(source, page, quote, None, (), "document not in the index")
        text = self.text(doc_id)
        lo, hi = 0, len(text)
        note = ""
        if page is not None:
            starts = self.kb.store.page_starts(doc_id)
            if starts and 1 <= page <= len(starts):
                lo, hi = starts[page - 1], starts[page] if page < len(starts) else len(text)
            else:
                note = f"page {page} not in the document; searched all of it"
        if quote is None:
            return GoldEvidence(source, page, quote, doc_id, ((lo, hi),), note)
        spans = locate_quote(text, quote, lo, hi)
        if not spans and (lo, hi) != (0, len(text)):
            spans = locate_quote(text, quote)
            note = f"quote not on page {page}; found elsewhere" if spans else note
        if not spans:
            note = "quote not found in the stored document text"
        return GoldEvidence(source, page, quote, doc_id, tuple(spans), note)


# --------------------------------------------------------------------------------------------
# Scoring one question (pure: tests build the inputs by hand)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Retrieved:
    """A retrieved chunk as the trace records it: its document and span."""

    document_id: str
    source: str
    start: int
    end: int


@dataclass
class Observation:
    """Everything measured for one question, before aggregation."""

    golden: Mapping[str, Any]
    answer: Answer | None
    gold: Sequence[GoldEvidence] = ()
    candidates: Sequence[Retrieved] = ()
    context: Sequence[Retrieved] = ()
    latency_ms: float = 0.0
    tokens: Mapping[str, int] | None = None
    quote_text: Callable[[str, int, int], str] | None = None
    judge_supported: tuple[int, int] | None = None  # (supported, judged) shown sentences
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def answer_text(answer: Answer) -> str:
    """The answer without [n] markers and '(unverified)' tags; '' for a refusal."""
    if answer.refused:
        return ""
    return " ".join(_MARKER.sub("", answer.answer).split())


def citation_span(c: Any) -> tuple[int, int]:
    if c.quote_end > c.quote_start:
        return int(c.quote_start), int(c.quote_end)
    return int(c.start), int(c.end)


def _overlaps(doc: str, span: tuple[int, int], gold: Sequence[GoldEvidence]) -> list[int]:
    """Indexes of the gold items with a span overlapping `span` in document `doc`."""
    return [
        i
        for i, g in enumerate(gold)
        if g.document_id == doc and any(span_overlap(span[0], span[1], a, b) for a, b in g.spans)
    ]


def _ranked_documents(hits: Sequence[Retrieved]) -> list[str]:
    return list(dict.fromkeys(h.document_id for h in hits))


def score_question(obs: Observation, k: int = 5) -> dict[str, Any]:
    """One per-question report row: outcomes, per-question metrics and the failure stage."""
    g = obs.golden
    answerable = bool(g["answerable"])
    gold = [e for e in obs.gold if e.resolved]
    gold_docs = {e.document_id for e in obs.gold if e.document_id is not None}
    row: dict[str, Any] = {
        "id": str(g["id"]),
        "question": g["question"],
        "answerable": answerable,
        "expected": list(g.get("answers") or []) or g.get("reference"),
        "gold_evidence": [e.to_json() for e in obs.gold],
        "meta": g.get("meta"),
        "latency_ms": round(obs.latency_ms, 2),
        "tokens": dict(obs.tokens) if obs.tokens is not None else None,
        **obs.extra,
    }
    if obs.answer is None:
        row.update(
            refused=None,
            answer=None,
            stage="error",
            error=obs.error or "no answer",
            citations=[],
            retrieval=None,
            correctness=None,
            citation_counts=None,
            sentences=None,
        )
        return row
    a = obs.answer
    row.update(
        refused=a.refused,
        answer=a.answer,
        refusal_reason=a.refusal_reason,
        refusal_text_ok=(a.answer == REFUSAL and not a.citations) if a.refused else a.answer != REFUSAL,
        error=None,
    )

    # Retrieval: documents for hit/recall, spans for the failure stage.
    retrieval: dict[str, Any] | None = None
    if answerable and gold_docs:
        ranked = _ranked_documents(obs.candidates)
        judgments = {d: 1 for d in gold_docs if d is not None}
        retrieval = {
            "hit@k": hit_rate_at_k(ranked, judgments, k),
            "recall@k": recall_at_k(ranked, judgments, k),
            "top_documents": [
                next((h.source for h in obs.candidates if h.document_id == d), d) for d in ranked[:k]
            ],
            "document_retrieved": bool(gold_docs & set(ranked)),
            "document_in_context": bool(gold_docs & {h.document_id for h in obs.context}),
            "evidence_retrieved": None,
            "evidence_in_context": None,
        }
        if gold:
            retrieval["evidence_retrieved"] = any(
                _overlaps(h.document_id, (h.start, h.end), gold) for h in obs.candidates
            )
            retrieval["evidence_in_context"] = any(
                _overlaps(h.document_id, (h.start, h.end), gold) for h in obs.context
            )
    row["retrieval"] = retrieval

    # Correctness.
    prediction = answer_text(a)
    answers = g.get("answers") or []
    reference = g.get("reference")
    correctness: dict[str, Any] | None = None
    if answerable and (answers or reference):
        golds = answers or [reference]
        correctness = {
            "exact_match": exact_match(prediction, answers) if answers else None,
            "token_f1": token_f1(prediction, golds),
            "contains": (1.0 if contains_any(prediction, answers) else 0.0) if answers else None,
        }
    row["correctness"] = correctness

    # Citations by span overlap.
    covered: set[int] = set()
    cited: list[dict[str, Any]] = []
    correct_citations = 0
    for c in a.citations:
        span = citation_span(c)
        hits = _overlaps(c.document_id, span, gold)
        covered.update(hits)
        correct_citations += bool(hits)
        if obs.quote_text is not None:
            quote = obs.quote_text(c.document_id, *span)
        else:  # Citation.quote is the passage text, which starts at c.start
            quote = c.quote[max(0, span[0] - c.start) : max(0, span[1] - c.start)]
        cited.append(
            {
                "n": c.n,
                "source": c.source,
                "page": c.page,
                "span": list(span),
                "quote": quote,
                "correct": bool(hits) if answerable and gold else None,
            }
        )
    row["citations"] = cited
    counts: dict[str, int] | None = None
    if answerable and gold:
        counts = {
            "citations": len(a.citations) if not a.refused else 0,
            "correct_citations": correct_citations if not a.refused else 0,
            "evidence": len(gold),
            "covered_evidence": len(covered) if not a.refused else 0,
        }
    row["citation_counts"] = counts
    row["citation_precision"] = (
        counts["correct_citations"] / counts["citations"] if counts and counts["citations"] else None
    )
    row["citation_recall"] = counts["covered_evidence"] / counts["evidence"] if counts else None

    # Faithfulness (the pipeline verifier's view) and the judge's view.
    row["sentences"] = {
        "total": len(a.sentences),
        "supported": sum(1 for s in a.sentences if s.supported),
        "removed": sum(1 for s in a.sentences if s.removed),
    }
    row["judge"] = (
        {"supported": obs.judge_supported[0], "judged": obs.judge_supported[1]}
        if obs.judge_supported is not None
        else None
    )
    row["stage"] = failure_stage(row)
    return row


def failure_stage(row: Mapping[str, Any]) -> str | None:
    """The first stage that failed, in pipeline order (see the module docstring)."""
    if row.get("error"):
        return "error"
    if not row["answerable"]:
        return None if row["refused"] else "answered_should_refuse"
    r = row.get("retrieval")
    if r is not None:
        # Span level when the gold quotes were located, else document level.
        spans = r.get("evidence_retrieved") is not None
        retrieved = r["evidence_retrieved"] if spans else r["document_retrieved"]
        in_context = r["evidence_in_context"] if spans else r["document_in_context"]
        if not retrieved:
            return "not_retrieved"
        if not in_context:
            return "not_in_context"
    if row["refused"]:
        return "refused_wrongly"
    counts = row.get("citation_counts")
    if counts is not None and counts["correct_citations"] == 0:
        return "cited_wrongly"
    return None


# --------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def summarize(
    rows: Sequence[Mapping[str, Any]],
    k: int = 5,
    *,
    judge_name: str | None = None,
    pipeline_verifier: str | None = None,
) -> dict[str, Any]:
    """Aggregate metrics over scored rows: {"metrics", "n", "counts", "latency_ms", "cost", ...}."""
    ok = [r for r in rows if r.get("error") is None]
    answerable = [r for r in ok if r["answerable"]]
    unanswerable = [r for r in ok if not r["answerable"]]
    refused = [r for r in ok if r["refused"]]
    answered = [r for r in ok if not r["refused"]]
    metrics: dict[str, float | None] = {}
    n: dict[str, int] = {}

    with_docs = [r for r in answerable if r.get("retrieval")]
    metrics[f"hit_rate@{k}"] = _mean([r["retrieval"]["hit@k"] for r in with_docs])
    metrics[f"recall@{k}"] = _mean([r["retrieval"]["recall@k"] for r in with_docs])
    n[f"hit_rate@{k}"] = n[f"recall@{k}"] = len(with_docs)
    in_ctx = [r for r in with_docs if r["retrieval"]["evidence_in_context"] is not None]
    metrics["context_hit_rate"] = _mean([float(r["retrieval"]["evidence_in_context"]) for r in in_ctx])
    n["context_hit_rate"] = len(in_ctx)

    for key, name in (
        ("exact_match", "exact_match"),
        ("token_f1", "token_f1"),
        ("contains", "answer_contains"),
    ):
        vals = [
            float(r["correctness"][key])
            for r in answerable
            if r.get("correctness") and r["correctness"][key] is not None
        ]
        metrics[name] = _mean(vals)
        n[name] = len(vals)

    counted = [r["citation_counts"] for r in answerable if r.get("citation_counts")]
    cits = sum(c["citations"] for c in counted)
    ev = sum(c["evidence"] for c in counted)
    cp = _ratio(sum(c["correct_citations"] for c in counted), cits)
    cr = _ratio(sum(c["covered_evidence"] for c in counted), ev)
    metrics["citation_precision"], metrics["citation_recall"] = cp, cr
    metrics["citation_f1"] = (
        (2 * cp * cr / (cp + cr) if cp + cr else 0.0) if cp is not None and cr is not None else None
    )
    n["citation_precision"], n["citation_recall"], n["citation_f1"] = cits, ev, len(counted)

    tp = sum(1 for r in refused if not r["answerable"])
    fp = len(refused) - tp
    fn = sum(1 for r in unanswerable if not r["refused"])
    p, rec, f1 = precision_recall_f1(tp, fp, fn)
    metrics["refusal_precision"] = p if refused else None
    metrics["refusal_recall"] = rec if unanswerable else None
    metrics["refusal_f1"] = f1 if refused and unanswerable else None
    metrics["false_refusal_rate"] = _ratio(fp, len(answerable))
    n["refusal_precision"], n["refusal_recall"] = len(refused), len(unanswerable)
    n["refusal_f1"], n["false_refusal_rate"] = len(ok), len(answerable)

    sentences = [r["sentences"] for r in answered if r.get("sentences")]
    total = sum(s["total"] for s in sentences)
    metrics["faithfulness"] = _ratio(sum(s["supported"] for s in sentences), total)
    n["faithfulness"] = total

    judge: dict[str, Any] = {"judge": judge_name, "pipeline_verifier": pipeline_verifier, "reason": None}
    judged = [r["judge"] for r in answered if r.get("judge")]
    if judge_name is None:
        metrics["judge_support"], judge["reason"] = None, NO_JUDGE
    elif judge_name == pipeline_verifier:
        metrics["judge_support"], judge["reason"] = None, SAME_JUDGE
    else:
        metrics["judge_support"] = _ratio(
            sum(j["supported"] for j in judged), sum(j["judged"] for j in judged)
        )
    n["judge_support"] = sum(j["judged"] for j in judged)
    judge["value"] = metrics["judge_support"]

    latencies = [float(r["latency_ms"]) for r in ok]
    latency = (
        {
            "p50": percentile(latencies, 50),
            "p95": percentile(latencies, 95),
            "mean": math.fsum(latencies) / len(latencies),
            "max": max(latencies),
        }
        if latencies
        else {"p50": None, "p95": None, "mean": None, "max": None}
    )
    tokens = [r["tokens"] for r in ok if r.get("tokens") is not None]
    prompt = sum(int(t.get("prompt", 0)) for t in tokens)
    completion = sum(int(t.get("completion", 0)) for t in tokens)
    cost = {
        "prompt_tokens": prompt if tokens else None,
        "completion_tokens": completion if tokens else None,
        "prompt_tokens_per_question": prompt / len(ok) if tokens and ok else None,
        "completion_tokens_per_question": completion / len(ok) if tokens and ok else None,
        "questions_with_token_counts": len(tokens),
    }
    stages: dict[str, int] = {s: 0 for s in STAGES}
    for r in rows:
        if r.get("stage"):
            stages[r["stage"]] = stages.get(r["stage"], 0) + 1
    return {
        "metrics": metrics,
        "n": n,
        "counts": {
            "questions": len(rows),
            "answerable": sum(1 for r in rows if r["answerable"]),
            "unanswerable": sum(1 for r in rows if not r["answerable"]),
            "answered": len(answered),
            "refused": len(refused),
            "errors": len(rows) - len(ok),
            "failures": sum(stages.values()),
            "refusal_text_errors": sum(1 for r in ok if r.get("refusal_text_ok") is False),
            "unresolved_evidence": sum(1 for r in rows for e in r["gold_evidence"] if not e["resolved"]),
        },
        "failures": stages,
        "judge": judge,
        "latency_ms": latency,
        "cost": cost,
    }


# --------------------------------------------------------------------------------------------
# Running a golden set through a knowledge base
# --------------------------------------------------------------------------------------------


def _retrieved(
    kb: KnowledgeBase, items: Iterable[Mapping[str, Any]], ids: Mapping[str, str]
) -> list[Retrieved]:
    out = []
    for h in items:
        doc_id = ids.get(h["source"])
        if doc_id is None:
            doc = kb.store.get_document(h["source"])
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
        cited = [(n, by_n[n].quote, by_n[n].start) for n in s.citations if n in by_n]
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
) -> dict[str, Any]:
    """Ask every golden question with ``kb.ask`` and measure it (see the module docstring).

    Candidates and context come from the answer's stored trace; with tracing off they are
    recomputed with the same retriever and the Answerer's own context selection.
    """
    rows_in = [validate_row(r) for r in golden_rows]
    resolver = DocumentResolver(kb, docs_root)
    ids = {d.source: d.id for d in resolver.docs}
    verifier_name = str(getattr(kb.verifier, "name", type(kb.verifier).__name__))
    judge_name = None if judge is None else str(getattr(judge, "name", type(judge).__name__))
    scored: list[dict[str, Any]] = []
    scope_warnings: list[str] = []
    generator_name: str | None = None
    for i, g in enumerate(rows_in):
        gold = [resolver.resolve(e) for e in g["evidence"]]
        flt, scope_note = resolver.scope_filter(g.get("scope"))
        if scope_note:
            scope_warnings.append(f"{g['id']}: {scope_note}")
        started = time.perf_counter()
        try:
            answer = kb.ask(g["question"], flt)
        except CitelineError as exc:
            latency = (time.perf_counter() - started) * 1000
            scored.append(score_question(Observation(g, None, gold, latency_ms=latency, error=str(exc)), k))
            continue
        latency = (time.perf_counter() - started) * 1000
        generator_name = answer.generator
        trace = kb.trace(answer.trace_id) if answer.trace_id else None
        if trace is not None:
            candidates = _retrieved(kb, trace["candidates"]["fused"], ids)
            context = _retrieved(kb, trace["context"], ids)
            tokens = trace.get("tokens")
            generator_name = trace.get("generator", generator_name)
        else:
            answerer = kb.answerer()
            question = answerer.check_question(g["question"])
            retrieval = kb.retrieve(question, flt)
            candidates = _hits(retrieval.hits)
            context = _hits(answerer.context(retrieval, {}))
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
            extra={"trace_id": answer.trace_id},
        )
        scored.append(score_question(obs, k))
        if progress:
            progress(i + 1, len(rows_in))
    summary = summarize(scored, k, judge_name=judge_name, pipeline_verifier=verifier_name)
    s = kb.settings
    warnings = scope_warnings + [
        f"{r['id']}: evidence in {e['source']}: {e['note']}"
        for r in scored
        for e in r["gold_evidence"]
        if not e["resolved"]
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
        },
        "documents": len(resolver.docs),
        **summary,
        "warnings": warnings,
        "rows": scored,
    }


# --------------------------------------------------------------------------------------------
# Baselines
# --------------------------------------------------------------------------------------------


def higher_is_better(name: str) -> bool | None:
    """True/False for a tracked metric (by its base name before '@'), None if untracked."""
    return TRACKED.get(name.split("@", 1)[0])


def regressions(
    current: Mapping[str, Any], baseline: Mapping[str, Any], max_drop: float = 0.02
) -> list[dict[str, Any]]:
    """Tracked metrics that got worse by more than max_drop (absolute) against the baseline.

    A metric missing or None on either side is not compared (see `deltas` for the full picture).
    """
    out = []
    for name, new in current["metrics"].items():
        higher = higher_is_better(name)
        old = baseline.get("metrics", {}).get(name)
        if higher is None or new is None or old is None:
            continue
        drop = (old - new) if higher else (new - old)
        if drop > max_drop + 1e-12:
            out.append({"metric": name, "baseline": old, "current": new, "drop": drop})
    return out


def deltas(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Metric-by-metric comparison of two reports (b - a), with whether the change is better."""
    out = []
    ma, mb = a.get("metrics", {}), b.get("metrics", {})
    for name in list(dict.fromkeys([*ma, *mb])):
        x, y = ma.get(name), mb.get(name)
        delta = None if x is None or y is None else y - x
        higher = higher_is_better(name) is not False
        better = None if delta is None or abs(delta) < 1e-12 else (delta > 0) == higher
        out.append({"metric": name, "a": x, "b": y, "delta": delta, "better": better})
    for name in ("p50", "p95"):
        x, y = a.get("latency_ms", {}).get(name), b.get("latency_ms", {}).get(name)
        delta = None if x is None or y is None else y - x
        better = None if delta is None or abs(delta) < 1e-9 else delta < 0
        out.append({"metric": f"latency_{name}_ms", "a": x, "b": y, "delta": delta, "better": better})
    return out
