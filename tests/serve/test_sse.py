"""/v1/ask as Server-Sent Events: each sentence only after its claim check, removed sentences never
as answer text, then the final answer object and the trace id, in that order.

The scripted generator stands in for an LLM that writes one supported and one unsupported
sentence; retrieval, the claim check and the server are the real ones.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx

from citeline.query.analysis import Query
from citeline.types import Draft, DraftSentence, Passage

from .conftest import Corpus, bearer
from .live import serving, variant

INVENTED = "The gateway token was first rotated by hand in 1887 aboard a steamship."


class HalfTrueGenerator:
    """An 'LLM' that quotes passage [1] and then invents a claim citing it."""

    name = "half-true"
    context_tokens = 4000

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        first = passages[0].chunk.text.split(". ")[0].strip().rstrip(".") + "."
        return Draft((DraftSentence(first, (1,)), DraftSentence(INVENTED, (1,))), raw=first + " " + INVENTED)

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        yield self.generate(question, passages).raw


def events(
    url: str, key: str, question: str, times: list[float] | None = None, **body: Any
) -> list[tuple[str, dict[str, Any]]]:
    """The stream's events in order; ``times`` gets when each one arrived (time.monotonic())."""
    out: list[tuple[str, dict[str, Any]]] = []
    with (
        httpx.Client(base_url=url, headers=bearer(key), timeout=120) as c,
        c.stream(
            "POST", "/v1/ask", json={"question": question, **body}, headers={"Accept": "text/event-stream"}
        ) as r,
    ):
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in r.iter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                assert name is not None
                out.append((name, json.loads(line[5:])))
                if times is not None:
                    times.append(time.monotonic())
                name = None
    return out


def test_stream_order_and_removed_sentence_never_shown(corpus: Corpus) -> None:
    kb = variant(corpus.kb)
    kb.use_generator(HalfTrueGenerator())
    with serving(kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "How often does the gateway token rotate?")
    kinds = [k for k, _ in got if k != "progress"]
    assert kinds == ["sentence", "removed", "answer", "trace", "done"], kinds
    sentence, removed, answer, trace = (d for k, d in got[:-1] if k != "progress")
    assert INVENTED not in json.dumps(sentence)
    assert removed["text"] == INVENTED and removed["reason"]
    assert INVENTED not in answer["answer"]
    assert [s["removed"] for s in answer["sentences"]] == [False, True]
    assert sentence["citations"] == [1] and sentence["sources"][0]["n"] == 1
    assert sentence["sources"][0]["source"] == answer["citations"][0]["source"]
    assert trace["trace_id"] == answer["trace_id"] and answer["trace_id"]
    kb.close()


def test_stream_matches_the_json_answer(corpus: Corpus) -> None:
    with serving(corpus.kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "What does error LDG-4012 mean?", stream=True)
        with httpx.Client(base_url=url, headers=bearer(corpus.reader_key), timeout=120) as c:
            plain = c.post("/v1/ask", json={"question": "What does error LDG-4012 mean?"}).json()
    sentences = [d for k, d in got if k == "sentence"]
    answer = next(d for k, d in got if k == "answer")
    assert sentences and [k for k, _ in got][-3:] == ["answer", "trace", "done"]
    kept = [s for s in answer["sentences"] if not s["removed"]]
    assert [s["text"] for s in sentences] == [s["text"] for s in kept]
    assert [s["citations"] for s in sentences] == [s["citations"] for s in kept]
    assert answer["answer"] == plain["answer"] and answer["citations"] == plain["citations"]


def test_refusal_streams_no_sentence(corpus: Corpus) -> None:
    with serving(corpus.kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "Who won the 1974 chess olympiad in Nice?", stream=True)
    assert [k for k, _ in got if k != "progress"] == ["answer", "trace", "done"]
    assert next(d for k, d in got if k == "answer")["refused"] is True


def test_stream_errors_are_events(corpus: Corpus) -> None:
    with serving(corpus.kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "?" * 2500, stream=True)
    assert got[0][0] == "error" and "max_question_chars" in got[0][1]["error"]["message"]


class TwoQuotesGenerator:
    """An 'LLM' that writes two sentences from passage [1], both citing every passage."""

    name = "two-quotes"
    context_tokens = 4000

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        first, second = (p.strip().rstrip(".") + "." for p in passages[0].chunk.text.split(". ")[:2])
        every = tuple(p.number for p in passages)
        return Draft((DraftSentence(first, every), DraftSentence(second, every)), raw=f"{first} {second}")

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        yield self.generate(question, passages).raw


def test_progress_then_each_sentence_as_soon_as_it_is_checked(corpus: Corpus) -> None:
    kb = variant(corpus.kb)
    kb.use_generator(TwoQuotesGenerator())
    arrived: list[float] = []
    with serving(kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "How often does the gateway token rotate?", arrived)
    kb.close()
    stages = [(d["stage"], d.get("sentence")) for k, d in got if k == "progress"]
    # sent as they happen, not gathered at the end: what came after the first progress event
    # (reading, generating, checking) took this long between it and the answer
    answer = next(d for k, d in got if k == "answer")
    after = sum(answer["timings_ms"].get(k, 0.0) for k in ("read", "generate", "verify")) / 1000
    assert arrived[-3] - arrived[0] >= 0.5 * after, (arrived[-3] - arrived[0], answer["timings_ms"])
    assert stages[0] == ("retrieved", None) and ("generating", None) in stages
    order = [k if k != "progress" else f"{d['stage']}{d.get('sentence') or ''}" for k, d in got]
    start = order.index("checking1")
    assert order[start:] == ["checking1", "sentence", "checking2", "sentence", "answer", "trace", "done"]
    progress = [d for k, d in got if k == "progress"]
    assert all(d["message"] for d in progress)
    assert next(d for d in progress if d["stage"] == "checking")["message"] == "Checking sentence 1 of 2…"


def test_stream_sentences_cite_only_support_and_carry_their_own_quotes(corpus: Corpus) -> None:
    kb = variant(corpus.kb)
    kb.use_generator(TwoQuotesGenerator())
    with serving(kb, mcp=False) as url:
        got = events(url, corpus.reader_key, "How often does the gateway token rotate?")
    kb.close()
    sentences = [d for k, d in got if k == "sentence"]
    answer = next(d for k, d in got if k == "answer")
    assert [s["citations"] for s in sentences] == [[1], [1]]  # not every passage the 'LLM' cited
    assert answer["answer"].count("[") == 2 and "[2]" not in answer["answer"]
    spans = [(s["sources"][0]["quote_start"], s["sources"][0]["quote_end"]) for s in sentences]
    assert spans[0] != spans[1]
    assert [(s["quotes"][0]["quote_start"], s["quotes"][0]["quote_end"]) for s in sentences] == spans
    final = [(q["quote_start"], q["quote_end"]) for s in answer["sentences"] for q in s["quotes"]]
    assert final == spans
