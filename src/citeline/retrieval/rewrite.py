"""Query expansion with the configured LLM: multi-query rewrites and HyDE (gated to vague questions).

Multi-query asks the model for a few differently worded search queries; each runs through
BM25 and dense search and every list joins the original two in reciprocal rank fusion.
HyDE asks for a short passage that would answer the question and searches with its
embedding; it is only used for vague questions (no identifiers, few content terms),
because a made-up passage drowns the exact tokens of a precise lookup.

Both are off unless ``query_expansion`` names them and the generator is an LLM; measured
in ``benchmarks/bench_query_expansion.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citeline.chat import ChatModel, user
from citeline.errors import ConfigError
from citeline.settings import EXPANSION_MODES as MODES
from citeline.text.terms import is_identifier, query_terms

MULTI_PROMPT = """Write {n} different search queries that would find documents answering the question below.
Use other words and synonyms than the question does; spell out abbreviations. One query per line, no numbering.

Question: {question}"""

HYDE_PROMPT = """Write one short factual paragraph (3 sentences) that answers the question below, as a \
passage in a reference document would. Do not mention the question.

Question: {question}"""

_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)]|query\s*\d*:)\s*", re.IGNORECASE)
_QUOTED = re.compile(r"[\"“”'‘’`][^\"“”'‘’`]{2,}[\"“”'‘’`]")
VAGUE_MAX_TERMS = 5


def parse_rewrites(text: str, question: str, n: int) -> list[str]:
    """Up to n distinct rewrites from the model's lines (list marks and quotes stripped)."""
    seen = {" ".join(question.lower().split())}
    out: list[str] = []
    for line in text.splitlines():
        q = _LIST_MARK.sub("", line).strip().strip("\"'“”").strip()
        key = " ".join(q.lower().split())
        if len(q) < 3 or len(q) > 300 or key in seen or q.endswith(":"):
            continue
        seen.add(key)
        out.append(q)
        if len(out) == n:
            break
    return out


def is_vague(question: str) -> bool:
    """No exact tokens to keep (codes, numbers, quoted strings) and only a few content terms."""
    terms = query_terms(question)
    if _QUOTED.search(question) or any(is_identifier(t) for t in terms):
        return False
    return 0 < len(terms) <= VAGUE_MAX_TERMS


@dataclass(frozen=True)
class Expansion:
    """What the model added to one question (recorded in the trace)."""

    queries: tuple[str, ...] = ()
    passage: str = ""

    @property
    def is_empty(self) -> bool:
        return not self.queries and not self.passage


class QueryExpander:
    def __init__(self, model: ChatModel, mode: str, n_queries: int = 3, passage_tokens: int = 160) -> None:
        if mode not in MODES:
            raise ConfigError(f"query_expansion must be one of {', '.join(MODES)}, not '{mode}'.")
        self.model = model
        self.mode = mode
        self.n_queries = n_queries
        self.passage_tokens = passage_tokens

    def expand(self, question: str) -> Expansion:
        queries: list[str] = []
        passage = ""
        if "multi" in self.mode:
            prompt = MULTI_PROMPT.format(n=self.n_queries, question=question)
            reply = self.model.complete(user(prompt), max_tokens=40 * self.n_queries)
            queries = parse_rewrites(reply, question, self.n_queries)
        if "hyde" in self.mode and is_vague(question):
            prompt = HYDE_PROMPT.format(question=question)
            reply = self.model.complete(user(prompt), max_tokens=self.passage_tokens)
            passage = " ".join(reply.split())
        return Expansion(tuple(queries), passage)
