"""Locating gold evidence in the stored document text, by span (never by chunk id)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.filters import Filter, Principal
from citeline.jsonable import Jsonable, json_derived

if TYPE_CHECKING:
    from citeline.kb import KnowledgeBase


def _folded(text: str, lo: int, hi: int, drop: str = "") -> tuple[str, list[int]]:
    """text[lo:hi] lowercased with whitespace runs squeezed to one space, without the characters
    in ``drop``, and each char's origin."""
    out: list[str] = []
    origin: list[int] = []
    in_space = False
    for i in range(lo, hi):
        ch = text[i]
        if ch in drop:
            continue
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
    """Every span of `quote` in text[lo:hi]: exact matches, else matches ignoring case and
    whitespace, else also ignoring colons. The parsers write a definition list's entry as "term:
    description" ("-n: Show only ...", "version (default: 2): Specifies ..."), where a quote copied
    from the page reads "-n Show only ..."."""
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
    for drop in ("", ":"):
        hay, origin = _folded(text, lo, hi, drop)
        folded_needle = _folded(needle, 0, len(needle), drop)[0].strip()
        if not folded_needle:
            return []
        at = hay.find(folded_needle)
        while at != -1:
            end = at + len(folded_needle) - 1
            spans.append((origin[at], origin[end] + 1))
            at = hay.find(folded_needle, at + 1)
        if spans:
            return spans
    return spans


@dataclass(frozen=True)
class GoldEvidence(Jsonable):
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
    @json_derived(after="spans")
    def resolved(self) -> bool:
        return self.document_id is not None and bool(self.spans)


class DocumentResolver:
    """Maps a golden ``source`` to the stored document (exact source, resolved path, or path suffix)."""

    def __init__(
        self, kb: KnowledgeBase, docs_root: str | Path | None = None, principal: Principal | None = None
    ) -> None:
        self.kb = kb
        self.docs_root = Path(docs_root).resolve() if docs_root is not None else None
        #: whose view is evaluated: documents it may not read are "not in the index" for it
        self.principal = principal or Principal.local_admin()
        self.docs = kb.store.documents(Filter(principal=self.principal))
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
                    return Filter(principal=self.principal, source_prefix=prefix), ""
        # Nothing indexed there: the folder's own prefix matches no document, so the question sees nothing.
        return Filter(
            principal=self.principal, source_prefix=str(folder) + os.sep
        ), f"scope {scope!r} holds no indexed document"

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
