"""The data that flows through the pipeline, as frozen dataclasses.

Spans everywhere are 0-based, end-exclusive Unicode code-point offsets into the
whole stored text of a document (``Document.text``), so ``text[start:end]`` is
always the exact quoted passage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from citeline.jsonable import Jsonable, json_spec

BlockKind = Literal["paragraph", "table", "code", "list", "heading"]

REFUSAL = "I could not find this in the available documents."


@dataclass(frozen=True)
class Block:
    """One structural unit of a parsed document: a paragraph, table, code block...

    ``heading_trail`` is the chain of headings above the block (not including the
    document title). ``page``/``page_end`` are 1-based physical pages (None for
    formats without pages).
    """

    kind: BlockKind
    start: int
    end: int
    heading_trail: tuple[str, ...] = ()
    page: int | None = None
    page_end: int | None = None


@dataclass(frozen=True)
class ParsedDocument:
    """What a parser returns: the whole text and its ordered blocks."""

    text: str
    blocks: tuple[Block, ...]
    title: str
    format: str
    page_count: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Where each page starts in ``text`` (PDF only): page i (1-based) starts at page_starts[i-1].
    page_starts: tuple[int, ...] = ()


DEFAULT_COLLECTION = "default"


def utf8_name(name: str) -> bool:
    """Whether a name (a source, a file name) is valid UTF-8. Python decodes each byte of a file
    name that is not as a lone surrogate (U+DC80..U+DCFF), which no UTF-8 text or database holds."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_hash(index_text: str) -> str:
    """The key of a chunk's vector: the hash of the text it was embedded from."""
    return hashlib.sha256(index_text.encode("utf-8")).hexdigest()


def document_id_for(collection: str, source: str) -> str:
    """A document's id: its collection and its source path relative to the collection's root.

    Independent of the machine that added it, so two writers to one shared store (or ingestion
    workers on other hosts) agree on it.
    """
    return hashlib.sha256(f"{collection}\0{source}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Document:
    """A stored document and its metadata.

    ``source`` is the path relative to the root it was added from (POSIX separators), or an
    absolute path for a file outside that root; with ``collection`` it identifies the document.
    """

    id: str
    source: str
    title: str
    format: str
    content_hash: str
    size: int
    mtime: float
    page_count: int | None
    tags: dict[str, str] = field(default_factory=dict)
    acl: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    added_at: float = 0.0
    updated_at: float = 0.0
    collection: str = DEFAULT_COLLECTION


@dataclass(frozen=True)
class Chunk:
    """A retrievable passage: an exact span of its document plus the text that is indexed.

    ``text == document_text[start:end]``; ``index_text`` is what is embedded and
    keyword-indexed: the context prefix "Title > Heading > Subheading" followed by the
    chunk's content (a split table repeats its header row there).
    """

    id: str
    document_id: str
    ordinal: int
    start: int
    end: int
    text: str
    index_text: str
    heading_trail: tuple[str, ...]
    kind: BlockKind
    page: int | None = None
    page_end: int | None = None
    token_count: int = 0

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_trail)


@dataclass(frozen=True)
class StageScore:
    """A hit's score and 1-based rank in one retrieval stage."""

    score: float
    rank: int


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with the scores each stage gave it."""

    chunk: Chunk
    source: str
    title: str
    score: float
    stages: dict[str, StageScore] = field(default_factory=dict)

    # Hand-written: a search result flattens its chunk's fields into its own object.
    def to_json(self) -> dict[str, Any]:
        """A search result as ``citeline search --json`` and ``POST /v1/search`` show it."""
        c = self.chunk
        return {
            "chunk_id": c.id,
            "document_id": c.document_id,
            "source": self.source,
            "title": self.title,
            "heading": c.heading,
            "page": c.page,
            "page_end": c.page_end,
            "start": c.start,
            "end": c.end,
            "text": c.text,
            "score": self.score,
            "stages": {k: {"score": v.score, "rank": v.rank} for k, v in self.stages.items()},
        }


@dataclass(frozen=True)
class Passage:
    """A numbered passage in the answer context ([n] refers to ``number``)."""

    number: int
    hit: Hit
    text: str  # the (possibly compressed) text shown to the generator

    @property
    def chunk(self) -> Chunk:
        return self.hit.chunk


@dataclass(frozen=True)
class DraftSentence:
    """A sentence as a generator produced it, with the passage numbers it cited."""

    text: str
    citations: tuple[int, ...]


@dataclass(frozen=True)
class Draft:
    """A generator's raw output, before citation resolution and verification."""

    sentences: tuple[DraftSentence, ...]
    refused: bool = False
    raw: str = ""
    invented_citations: tuple[int, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # how sure the generator is that the draft answers the question (None if it cannot say)
    confidence: float | None = None


@dataclass(frozen=True)
class Citation(Jsonable):
    """A numbered source that resolves to a place a user can open."""

    n: int
    document_id: str
    source: str
    title: str
    page: int | None
    page_end: int | None
    #: the labels printed on ``page`` and ``page_end`` (a PDF's /PageLabels: "ix", "9"), when the
    #: document has them (citeline.page_labels); ``page`` is always the page's place in the file.
    #: Keyword-only: declared here for the JSON's key order, they are last in ``__init__``.
    page_label: str | None = field(default=None, kw_only=True)
    page_end_label: str | None = field(default=None, kw_only=True)
    heading: str
    start: int
    end: int
    quote: str
    chunk_id: str
    quote_start: int
    quote_end: int

    @classmethod
    def of(cls, passage: Passage, n: int, quote: tuple[int, int] | None = None) -> Citation:
        """``passage`` cited as [n]; ``quote``: the document span supporting the answer (default:
        the whole passage)."""
        chunk = passage.chunk
        quote_start, quote_end = quote if quote is not None else (chunk.start, chunk.end)
        return cls(
            n=n,
            document_id=chunk.document_id,
            source=passage.hit.source,
            title=passage.hit.title,
            page=chunk.page,
            page_end=chunk.page_end,
            heading=chunk.heading,
            start=chunk.start,
            end=chunk.end,
            quote=chunk.text,
            chunk_id=chunk.id,
            quote_start=quote_start,
            quote_end=quote_end,
        )


@dataclass(frozen=True)
class SentenceQuote(Jsonable):
    """Where citation ``n`` supports one sentence: document offsets of the supporting unit. Two
    sentences citing the same passage each have their own (``Citation.quote_start`` is the best
    over the whole answer)."""

    n: int
    quote_start: int
    quote_end: int


@dataclass(frozen=True)
class AnswerSentence(Jsonable):
    text: str
    citations: tuple[int, ...]
    supported: bool
    removed: bool
    support_score: float = field(default=0.0, metadata=json_spec(digits=4))
    #: one per citation, in the same order: the span of that passage supporting this sentence
    quotes: tuple[SentenceQuote, ...] = ()


@dataclass(frozen=True)
class Answer(Jsonable):
    question: str
    answer: str
    refused: bool
    citations: tuple[Citation, ...]
    sentences: tuple[AnswerSentence, ...] = ()
    dropped_citations: tuple[int, ...] = ()
    generator: str = "extractive"
    trace_id: str | None = None
    timings_ms: dict[str, float] = field(default_factory=dict, metadata=json_spec(digits=2))
    relevance: float = field(default=0.0, metadata=json_spec(digits=4))
    refusal_reason: str | None = None
    confidence: float | None = field(default=None, metadata=json_spec(digits=4))
    #: the trained reader's best score over the context (None without a reader)
    reader_score: float | None = field(default=None, metadata=json_spec(digits=4))
    #: why retrieval was keyword-only for this answer (dense side failed or too slow), else None
    degraded: str | None = None
    #: what the question asks for: {"attribute", "kind", "subject"} (query/slot.py)
    slot: Mapping[str, Any] | None = None
