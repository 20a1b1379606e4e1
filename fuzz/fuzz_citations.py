"""atheris: the citation parser, the streaming filter and the LLM reply parsers on any text."""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["citeline"]):
    from citeline.answer.citations import (
        StreamingCitationFilter,
        escape_markers,
        filter_citations,
        parse_citations,
        split_cited_sentences,
    )
    from citeline.answer.prompt import near_refusal, parse_free_text, parse_structured


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    k = fdp.ConsumeIntInRange(0, 12)
    cut = fdp.ConsumeIntInRange(0, 64)
    text = fdp.ConsumeUnicodeNoSurrogates(4096)
    for m in parse_citations(text):
        assert 0 <= m.span[0] < m.span[1] <= len(text)
    assert parse_citations(escape_markers(text)) == []
    streamed = StreamingCitationFilter(k)
    out = streamed.feed(text[:cut]) + streamed.feed(text[cut:]) + streamed.flush()
    assert out == filter_citations(text, k)
    sentences, _invented = split_cited_sentences(text, k)
    assert all(1 <= n <= k for s in sentences for n in s.citations)
    for parse in (parse_structured, parse_free_text):
        draft = parse(text, k)
        assert all(1 <= n <= k for s in draft.sentences for n in s.citations)
    near_refusal(text)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
