"""Structure-first chunking: sections and blocks first, size second.

Blocks under the same heading trail (and on the same page) are packed into a chunk up
to a token target that *includes* the context prefix "Title > Heading > Subheading".
Tables and code blocks stay whole unless they exceed the embedder's maximum input;
then tables are cut between rows (each piece repeats the header row in its indexed
text) and code between lines. Long paragraphs become sentence windows with a
sentence-aligned overlap. Every chunk is an exact span of the document text.

A PDF or text file with no usable structure (no headings at all: a flat export, a text
dump) is cut where the topic shifts instead: its paragraphs are cut at the sentence gaps
whose similarity is among the lowest 10% of the document's gaps (both sides keeping 48
tokens), then at their least similar gaps until every piece fits. A gap compares the two
sentences before it with the two after it:

- ``unstructured="lexical"`` (the product's default): TF-IDF cosine of the two sides' words,
  idf from the document's own sentences; no embedding, linear in the text;
- ``unstructured="semantic"``: each two-sentence side embedded (every sentence about twice
  more before the final chunks are embedded once);
- ``unstructured="windows"``: no topic cuts, sentence windows as for any long paragraph.

``benchmarks/bench_semantic_chunking.py --queries 300 --distractors 100`` (flat PDFs of 383
SciFact abstracts, 300 test claims; "flow" = one running paragraph per PDF, "paragraphs" = one
per abstract), nDCG@10 and ingest CPU seconds:

    layout      windows       lexical       semantic       semantic/sentences  semantic/heads
    flow        0.836  61 s   0.869  62 s   0.873  170 s   0.877  127 s        0.879   92 s
    paragraphs  0.873  67 s   0.867  63 s   0.868  175 s   0.871  129 s        0.869   95 s

Lexical is within noise of semantic for the CPU of sentence windows: paired over the 300
claims, lexical - semantic nDCG@10 = -0.003 (95% bootstrap interval -0.015..+0.009) on flow,
-0.000 (-0.011..+0.010) on paragraphs; coverage@5 and purity@5 within 0.01 too. "sentences"
(each sentence embedded once, a side the normalised sum of its two sentences' vectors) and
"heads" (only each sentence's first 12 words embedded) are ``ChunkingOptions.similarity``
variants the benchmark also compares: within noise of semantic too, for more CPU than lexical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np

from citeline.chunking.topic_cuts import (
    lexical_gap_similarities,
    semantic_cuts,
    sentence_head,
    vector_gap_similarities,
)
from citeline.settings import UNSTRUCTURED_MODES, Settings
from citeline.text.sentences import sentence_spans
from citeline.types import Block, BlockKind, Chunk, ParsedDocument

TokenCounter = Callable[[Sequence[str]], list[int]]
EmbedFn = Callable[[Sequence[str]], "np.ndarray"]
UnstructuredMode = Literal["windows", "lexical", "semantic"]
GapSimilarity = Literal["pairs", "sentences", "heads", "lexical"]
GAP_SIMILARITIES: tuple[GapSimilarity, ...] = ("pairs", "sentences", "heads", "lexical")
# Where "no headings" means "no usable structure" (measured on flat PDFs); a Markdown or HTML
# page without headings is usually short and already cut into paragraphs by its author.
UNSTRUCTURED_FORMATS = ("pdf", "text")

# The defaults are the settings' defaults: one source of configuration.
_DEFAULTS = Settings()
DEFAULT_TARGET_TOKENS = _DEFAULTS.chunk_tokens
DEFAULT_OVERLAP_TOKENS = _DEFAULTS.overlap_tokens
DEFAULT_UNSTRUCTURED: UnstructuredMode = cast(UnstructuredMode, _DEFAULTS.chunk_unstructured)


@dataclass(frozen=True)
class ChunkingOptions:
    target_tokens: int = DEFAULT_TARGET_TOKENS
    max_tokens: int = 256  # the embedder's maximum input, special tokens included
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS
    # documents without headings: sentence windows, or cuts where the topic shifts (lexical,
    # semantic: the two differ in how they compare the sentences on each side of a gap)
    unstructured: UnstructuredMode = DEFAULT_UNSTRUCTURED
    # lexical, semantic: gaps below this percentile of the document's similarities always cut ...
    semantic_percentile: float = 10.0
    # ... unless a side would be shorter than this many tokens
    semantic_min_tokens: int = 48
    # how the two sides of a gap are compared; None: the mode's own (lexical: "lexical",
    # semantic: "pairs"); the others are measured by benchmarks/bench_semantic_chunking.py
    similarity: GapSimilarity | None = None
    head_words: int = 12  # "heads": the words of each sentence embedded

    def __post_init__(self) -> None:
        if self.target_tokens > self.max_tokens:
            object.__setattr__(self, "target_tokens", self.max_tokens)
        if self.unstructured not in UNSTRUCTURED_MODES:
            raise ValueError(f"unstructured must be one of {UNSTRUCTURED_MODES}, not {self.unstructured!r}")
        if self.similarity is not None and self.similarity not in GAP_SIMILARITIES:
            raise ValueError(f"similarity must be one of {GAP_SIMILARITIES}, not {self.similarity!r}")


@dataclass(frozen=True)
class _Unit:
    """A span that must not be split further, plus optional extra indexed text (a table header)."""

    start: int
    end: int
    block: Block
    tokens: int
    header: str = ""
    standalone: bool = False  # a piece of a split block: never packed with neighbours


def context_prefix(title: str, trail: Sequence[str]) -> str:
    parts = [title] if title else []
    for i, heading in enumerate(trail):
        if i == 0 and heading == title:
            continue  # a leading "# Title" heading repeats the title
        parts.append(heading)
    return " > ".join(parts)


# A table's caption is the short paragraph right above it ("Table A.1. PostgreSQL Error Codes")
CAPTION_WORDS = 20


def table_caption(text: str, before: Block, table: Block) -> str:
    """The paragraph just above ``table`` when it is short enough to be its caption or title."""
    if before.kind != "paragraph" or before.heading_trail != table.heading_trail:
        return ""
    caption = " ".join(text[before.start : before.end].split())
    return caption if 0 < len(caption.split()) <= CAPTION_WORDS else ""


def has_structure(doc: ParsedDocument) -> bool:
    """Whether the parser found any heading (a flat PDF or text dump has none)."""
    return any(b.kind == "heading" or b.heading_trail for b in doc.blocks)


class Chunker:
    def __init__(
        self,
        count_tokens: TokenCounter,
        options: ChunkingOptions | None = None,
        embed: EmbedFn | None = None,
    ) -> None:
        self.count = count_tokens
        self.options = options or ChunkingOptions()
        if self.options.unstructured != "windows" and self.gap_similarity != "lexical" and embed is None:
            raise ValueError(f"{self.gap_similarity!r} gap similarities need an embed function")
        self.embed = embed

    @property
    def gap_similarity(self) -> GapSimilarity:
        """How a document without structure compares the two sides of a sentence gap."""
        if self.options.similarity is not None:
            return self.options.similarity
        return "lexical" if self.options.unstructured == "lexical" else "pairs"

    def chunk(self, doc: ParsedDocument, document_id: str) -> list[Chunk]:
        text, title = doc.text, doc.title
        semantic = (
            self.options.unstructured != "windows"
            and doc.format in UNSTRUCTURED_FORMATS
            and not has_structure(doc)
        )
        content = [b for b in doc.blocks if b.kind != "heading" and b.end > b.start]
        prefixes = {b.heading_trail: context_prefix(title, b.heading_trail) for b in content}
        prefix_tokens = dict(zip(prefixes, self.count([p + "\n\n" for p in prefixes.values()]), strict=True))
        block_tokens = self.count([text[b.start : b.end] for b in content])
        # Token counts add up minus the two special tokens each count includes.
        budgets = [self.options.target_tokens - prefix_tokens[b.heading_trail] + 2 for b in content]
        planned = self._semantic_plan(text, content, block_tokens, budgets) if semantic else {}
        units: list[_Unit] = []
        for i, (block, tokens, budget) in enumerate(zip(content, block_tokens, budgets, strict=True)):
            if i in planned:
                units.extend(planned[i])
                continue
            # A margin of a few tokens: counts of parts can differ by one from the count of the whole.
            limit = self.options.max_tokens - prefix_tokens[block.heading_trail] - 4
            caption = table_caption(text, content[i - 1], block) if i and block.kind == "table" else ""
            units.extend(self._units(text, block, tokens, budget, limit, caption))
        return self._pack(text, title, document_id, units, prefixes, prefix_tokens)

    # -- splitting ---------------------------------------------------------------------------

    def _units(
        self, text: str, block: Block, tokens: int, budget: int, limit: int, caption: str = ""
    ) -> list[_Unit]:
        if tokens <= budget or (block.kind in ("table", "code") and tokens <= limit):
            return [_Unit(block.start, block.end, block, tokens)]
        if block.kind == "table":
            return self._split_table(text, block, budget, caption)
        if block.kind == "code":
            return self._split_lines(text, block, budget)
        return self._sentence_windows(text, block, budget)

    def _line_spans(self, text: str, block: Block) -> list[tuple[int, int]]:
        spans, pos = [], block.start
        for line in text[block.start : block.end].split("\n"):
            if line.strip():
                spans.append((pos, pos + len(line)))
            pos += len(line) + 1
        return spans

    def _split_table(self, text: str, block: Block, budget: int, caption: str = "") -> list[_Unit]:
        """Pieces of a table cut between rows; each later piece repeats the table's caption and
        header rows in its indexed text, so a row found by its code ("40P01") is read under
        "Table A.1. Error Codes" and its column names."""
        rows = self._line_spans(text, block)
        head_n = 2 if len(rows) > 1 and set(text[rows[1][0] : rows[1][1]]) <= set("|-: +") else 1
        # the header row without its padding and its | --- | rule: a wide table's padded header
        # alone could use up a piece's budget (and then every row was cut word by word)
        cells = [" ".join(c.split()) for c in text[rows[0][0] : rows[0][1]].strip().strip("|").split("|")]
        header = "\n".join([caption] * bool(caption) + ["| " + " | ".join(cells) + " |"])
        header_tokens = self.count([header])[0] - 2
        if header_tokens > budget // 2:  # still too wide to repeat: each piece stands alone
            header, header_tokens = "", 0
        body = rows[head_n:] or rows
        groups = self._group(text, body, budget - header_tokens, block)
        units = []
        for i, (start, end, tokens) in enumerate(groups):
            # The first piece holds the real header in its span; later pieces repeat it in the index.
            if i == 0 and head_n and body is not rows:
                start = rows[0][0]
                units.append(_Unit(start, end, block, tokens + header_tokens, standalone=True))
            else:
                units.append(_Unit(start, end, block, tokens + header_tokens, header=header, standalone=True))
        return units

    def _split_lines(self, text: str, block: Block, budget: int) -> list[_Unit]:
        return [
            _Unit(a, b, block, t, standalone=True)
            for a, b, t in self._group(text, self._line_spans(text, block), budget, block)
        ]

    def _group(
        self, text: str, spans: list[tuple[int, int]], budget: int, block: Block
    ) -> list[tuple[int, int, int]]:
        """Greedy contiguous groups of spans up to budget tokens; an oversized span is hard-split."""
        counts = self.count([text[a:b] for a, b in spans])
        groups: list[tuple[int, int, int]] = []
        cur: list[tuple[int, int, int]] = []
        for (a, b), t in zip(spans, counts, strict=True):
            t -= 2
            if t > budget:
                if cur:
                    groups.append((cur[0][0], cur[-1][1], sum(x[2] for x in cur)))
                    cur = []
                groups.extend(self._hard_split(text, a, b, budget))
                continue
            if cur and sum(x[2] for x in cur) + t > budget:
                groups.append((cur[0][0], cur[-1][1], sum(x[2] for x in cur)))
                cur = []
            cur.append((a, b, t))
        if cur:
            groups.append((cur[0][0], cur[-1][1], sum(x[2] for x in cur)))
        return groups

    def _hard_split(self, text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
        """Last resort for one sentence or line longer than the budget: cut between words."""
        words: list[tuple[int, int]] = []
        pos = start
        for part in text[start:end].split(" "):
            if part.strip():
                words.append((pos, pos + len(part)))
            pos += len(part) + 1
        pieces: list[tuple[int, int, int]] = []
        lo = 0
        while lo < len(words):
            # Largest hi with words[lo:hi] within budget: exponential then binary search.
            good, step = lo + 1, 1
            while (
                good + step <= len(words)
                and self._tokens(text, words[lo][0], words[good + step - 1][1]) <= budget
            ):
                good += step
                step *= 2
            bad = min(good + step, len(words) + 1)
            while bad - good > 1:
                mid = (good + bad) // 2
                if self._tokens(text, words[lo][0], words[mid - 1][1]) <= budget:
                    good = mid
                else:
                    bad = mid
            a, b = words[lo][0], words[good - 1][1]
            if good == lo + 1 and self._tokens(text, a, b) > budget:
                pieces.extend(self._char_split(text, a, b, budget))
            else:
                pieces.append((a, b, self._tokens(text, a, b)))
            lo = good
        return pieces

    def _char_split(self, text: str, start: int, end: int, budget: int) -> list[tuple[int, int, int]]:
        """A single 'word' over budget (a base64 blob, a URL): cut by characters."""
        pieces = []
        step = max(1, budget)  # a token is at least one character
        for a in range(start, end, step):
            b = min(end, a + step)
            pieces.append((a, b, self._tokens(text, a, b)))
        return pieces

    def _tokens(self, text: str, start: int, end: int) -> int:
        return self.count([text[start:end]])[0] - 2

    def _sentence_pieces(self, text: str, block: Block, budget: int) -> list[tuple[int, int, int]]:
        sentences = sentence_spans(text, block.start, block.end)
        counts = [c - 2 for c in self.count([text[a:b] for a, b in sentences])]
        pieces: list[tuple[int, int, int]] = []
        for (a, b), t in zip(sentences, counts, strict=True):
            pieces.extend(self._hard_split(text, a, b, budget) if t > budget else [(a, b, t)])
        return pieces

    def _semantic_plan(
        self, text: str, blocks: list[Block], tokens: list[int], budgets: list[int]
    ) -> dict[int, list[_Unit]]:
        """Topic-shift segments for the paragraphs of a document without structure.

        The cut threshold is a percentile of the whole document's gap similarities, so a
        paragraph on one topic is not cut just because it is long. A paragraph with no cut
        and within budget is left out of the plan (it packs with its neighbours as usual).
        """
        plans: list[tuple[int, list[tuple[int, int, int]]]] = []
        for i, block in enumerate(blocks):
            if block.kind != "paragraph":
                continue
            pieces = self._sentence_pieces(text, block, budgets[i])
            if len(pieces) >= 2:
                plans.append((i, pieces))
        if not plans:
            return {}
        sims = self._gap_similarities(text, [pieces for _, pieces in plans])
        flat = np.asarray([x for s in sims for x in s])
        threshold = float(np.percentile(flat, self.options.semantic_percentile))
        if self.gap_similarity == "lexical":
            # Lexical similarities tie (0.0 wherever two sides share no word): cut at or below
            # the percentile, unless so many gaps tie there that the ties say nothing (a log or
            # a list, whose lines share no word): then only the budget cuts.
            at_or_below = float(np.nextafter(threshold, np.inf))
            if np.mean(flat < at_or_below) <= 2 * self.options.semantic_percentile / 100:
                threshold = at_or_below
        out: dict[int, list[_Unit]] = {}
        for (i, pieces), gaps in zip(plans, sims, strict=True):
            sizes = [t + 1 for _, _, t in pieces]  # + 1: the space joining sentences
            cuts = semantic_cuts(gaps, sizes, budgets[i], threshold, self.options.semantic_min_tokens)
            if not cuts and tokens[i] <= budgets[i]:
                continue
            block = blocks[i]
            out[i] = [
                _Unit(pieces[lo][0], pieces[hi - 1][1], block, sum(sizes[lo:hi]), standalone=True)
                for lo, hi in zip([0, *cuts], [*cuts, len(pieces)], strict=True)
            ]
        return out

    def _gap_similarities(self, text: str, plans: list[list[tuple[int, int, int]]]) -> list[list[float]]:
        """Per paragraph, the similarity of the two sentences before each gap with the two after."""
        how = self.gap_similarity
        if how == "lexical":
            return lexical_gap_similarities([[text[a:b] for a, b, _ in pieces] for pieces in plans])
        assert self.embed is not None
        if how == "pairs":
            # Each side of a gap is two sentences, embedded as one text: pairs[j] covers pieces
            # j and j+1 (the last one alone); then piece 0 alone.
            texts: list[str] = []
            for pieces in plans:
                n = len(pieces)
                texts += [text[pieces[j][0] : pieces[min(j + 1, n - 1)][1]] for j in range(n)]
                texts.append(text[pieces[0][0] : pieces[0][1]])
            vectors = np.asarray(self.embed(texts), dtype=np.float32)
            sims, base = [], 0
            for pieces in plans:
                n = len(pieces)
                v = vectors[base : base + n + 1]
                sims.append([float(v[gap - 2 if gap >= 2 else n] @ v[gap]) for gap in range(1, n)])
                base += n + 1
            return sims
        # "sentences": each sentence embedded once (its first words only with "heads"), each side
        # of a gap the normalised sum of its two sentences' vectors
        words = self.options.head_words if how == "heads" else 0
        texts = [sentence_head(text[a:b], words) for pieces in plans for a, b, _ in pieces]
        vectors = np.asarray(self.embed(texts), dtype=np.float32)
        sims, base = [], 0
        for pieces in plans:
            sims.append(vector_gap_similarities(vectors[base : base + len(pieces)]))
            base += len(pieces)
        return sims

    def _sentence_windows(self, text: str, block: Block, budget: int) -> list[_Unit]:
        pieces = self._sentence_pieces(text, block, budget)
        units: list[_Unit] = []
        i = 0
        while i < len(pieces):
            j, total = i, 0
            while j < len(pieces) and (j == i or total + pieces[j][2] + 1 <= budget):
                total += pieces[j][2] + 1
                j += 1
            units.append(_Unit(pieces[i][0], pieces[j - 1][1], block, total, standalone=True))
            if j >= len(pieces):
                break
            # Next window starts with trailing sentences of this one, up to the overlap budget.
            back, overlap = j, 0
            while back - 1 > i and overlap + pieces[back - 1][2] <= self.options.overlap_tokens:
                back -= 1
                overlap += pieces[back][2]
            i = back
        return units

    # -- packing -----------------------------------------------------------------------------

    def _pack(
        self,
        text: str,
        title: str,
        document_id: str,
        units: list[_Unit],
        prefixes: dict[tuple[str, ...], str],
        prefix_tokens: dict[tuple[str, ...], int],
    ) -> list[Chunk]:
        groups: list[list[_Unit]] = []
        for unit in units:
            if groups and not unit.standalone and self._fits(groups[-1], unit, prefix_tokens):
                groups[-1].append(unit)
            else:
                groups.append([unit])
        chunks = []
        for ordinal, group in enumerate(groups):
            first, last = group[0], group[-1]
            trail = first.block.heading_trail
            body = text[first.start : last.end]
            indexed = f"{first.header}\n{body}" if first.header else body
            prefix = prefixes[trail]
            index_text = f"{prefix}\n\n{indexed}" if prefix else indexed
            pages = [p for u in group for p in (u.block.page, u.block.page_end) if p is not None]
            kind: BlockKind = first.block.kind if len(group) == 1 else "paragraph"
            digest = hashlib.sha256(f"{first.start}:{last.end}:{index_text}".encode()).hexdigest()
            chunks.append(
                Chunk(
                    id=f"{document_id[:12]}-{digest[:12]}",
                    document_id=document_id,
                    ordinal=ordinal,
                    start=first.start,
                    end=last.end,
                    text=body,
                    index_text=index_text,
                    heading_trail=trail,
                    kind=kind,
                    page=min(pages) if pages else None,
                    page_end=max(pages) if pages else None,
                    token_count=prefix_tokens[trail] + sum(u.tokens for u in group) - 2 + len(group),
                )
            )
        return chunks

    def _fits(self, group: list[_Unit], unit: _Unit, prefix_tokens: dict[tuple[str, ...], int]) -> bool:
        head = group[0]
        if head.standalone or head.block.heading_trail != unit.block.heading_trail:
            return False
        if head.block.page != unit.block.page:
            return False  # a chunk never spans two pages unless one paragraph does
        total = (
            prefix_tokens[head.block.heading_trail] + sum(u.tokens for u in group) + unit.tokens + len(group)
        )
        return total <= self.options.target_tokens
