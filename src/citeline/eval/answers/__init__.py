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
  ``answer_contains`` (a gold answer occurs in the answer as whole normalised tokens),
  ``first_sentence_contains`` (the same for the answer's first sentence alone: does the answer
  lead with what was asked, or bury it after a sentence that restates the question).

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
Report rows
-----------
Each question becomes one :class:`QuestionRow` (``score_question``); a report holds them as JSON
(``QuestionRow.to_json``) under ``"rows"``, and ``QuestionRow.from_json`` reads them back, so the
report format (``citeline-answers/1``) stays plain JSON.

Modules
-------
``golden`` (golden rows), ``evidence`` (locating gold evidence in the stored text), ``row`` (the
typed per-question row), ``scoring`` (scoring one question), ``summary`` (aggregation),
``runner`` (a golden set through a knowledge base), ``baseline`` (regressions and comparisons).
Every public name is importable from ``citeline.eval.answers``.
"""

from __future__ import annotations

from citeline.eval.answers.baseline import TRACKED, deltas, higher_is_better, regressions
from citeline.eval.answers.evidence import DocumentResolver, GoldEvidence, locate_quote
from citeline.eval.answers.golden import GoldenFormatError, load_golden, validate_row, write_golden
from citeline.eval.answers.row import (
    CitationCounts,
    CitedQuote,
    Correctness,
    JudgeCounts,
    QuestionRow,
    RetrievalOutcome,
    SentenceCounts,
)
from citeline.eval.answers.runner import FORMAT, evaluate_answers
from citeline.eval.answers.scoring import (
    STAGES,
    Observation,
    Retrieved,
    answer_text,
    citation_span,
    failure_stage,
    score_question,
)
from citeline.eval.answers.summary import NO_JUDGE, SAME_JUDGE, summarize

__all__ = [
    "FORMAT",
    "NO_JUDGE",
    "SAME_JUDGE",
    "STAGES",
    "TRACKED",
    "CitationCounts",
    "CitedQuote",
    "Correctness",
    "DocumentResolver",
    "GoldEvidence",
    "GoldenFormatError",
    "JudgeCounts",
    "Observation",
    "QuestionRow",
    "RetrievalOutcome",
    "Retrieved",
    "SentenceCounts",
    "answer_text",
    "citation_span",
    "deltas",
    "evaluate_answers",
    "failure_stage",
    "higher_is_better",
    "load_golden",
    "locate_quote",
    "regressions",
    "score_question",
    "summarize",
    "validate_row",
    "write_golden",
]
