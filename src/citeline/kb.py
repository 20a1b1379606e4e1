"""The Python API: ``kb = citeline.open(DIR)``; ``kb.add(paths)``; ``kb.search(q, principal)``;
``kb.ask(q, principal)``. A thin facade: wiring lives in wiring.py, ingestion in ingest/,
presentation in the CLI and the server.

Access is explicit: every call that reads documents names who is asking, a ``Principal`` (or a
``Filter``, which carries one). ``Principal.local_admin()`` reads everything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.atomic import write_atomically
from citeline.errors import (
    AccessError,
    DocumentNotFoundError,
    InvalidQuestionError,
)
from citeline.filters import Filter, Principal
from citeline.index.base import EmbedderInfo, Problem, Store
from citeline.jsonable import Jsonable, json_derived
from citeline.page_labels import METADATA_KEY as PAGE_LABELS
from citeline.page_labels import page_label
from citeline.query.analysis import analyze
from citeline.retrieval.hybrid import Retrieval
from citeline.settings import SETTINGS_FILE, Settings, index_location, is_url, load_settings
from citeline.types import DEFAULT_COLLECTION, Answer, Document, Hit, utf8_name
from citeline.wiring import Components, open_store

if TYPE_CHECKING:
    from citeline.access import ApiKeys
    from citeline.answer.answerer import ProgressListener, SentenceListener
    from citeline.answer.generators.base import Generator
    from citeline.ingest.files import Listings
    from citeline.ingest.pipeline import Ingestor, IngestReport, Progress
    from citeline.ingest.readd import StoredFilesMemo
    from citeline.trace import Trace, TraceSummary


def access_filter(principal: Principal | Filter | None, flt: Filter | None) -> Filter:
    """The filter of a read: ``flt`` (which names its principal), else the principal alone."""
    if flt is not None:
        return flt
    if isinstance(principal, Filter):
        return principal
    if principal is None:
        raise AccessError(
            "Say who is asking: pass principal=citeline.Principal(user=..., groups=(...)) (ACLs apply) "
            "or principal=citeline.Principal.local_admin() (reads everything), or a Filter."
        )
    return Filter(principal=principal)


@dataclass(frozen=True)
class CheckReport(Jsonable):
    """What ``KnowledgeBase.check`` found and, after a repair, what is still wrong."""

    problems: list[Problem]
    remaining: list[Problem] | None = None  # None: no repair was asked for

    @property
    @json_derived(after=None)
    def ok(self) -> bool:
        return not (self.problems if self.remaining is None else self.remaining)


class KnowledgeBase:
    """One index and the pipeline around it. Cheap to open; models load on first use."""

    def __init__(self, settings: Settings, store: Store, *, embedder: Any = None) -> None:
        self.components = Components(settings, store, embedder=embedder)
        self._stored_memo: StoredFilesMemo | None = None  # the stored files between adds
        self._listings: Listings | None = None  # the folders listed between adds

    @property
    def settings(self) -> Settings:
        return self.components.settings

    @settings.setter
    def settings(self, settings: Settings) -> None:
        """Change settings for this process (nothing is written): components are rewired."""
        self.components = self.components.with_settings(settings)

    @property
    def store(self) -> Store:
        return self.components.store

    @property
    def embedder(self) -> Any:
        return self.components.embedder

    @property
    def read_only(self) -> bool:
        """Opened without ever writing (answers then carry no trace)."""
        return self.store.read_only

    @property
    def keys(self) -> ApiKeys:
        """The index's API keys (``citeline keys``, the server's and MCP's authentication)."""
        from citeline.access import ApiKeys

        return ApiKeys(self.store)

    def use_generator(self, generator: Generator) -> None:
        self.components.use_generator(generator)

    # -- ingestion -----------------------------------------------------------------------------

    def _ingestor(self, progressive: bool = False) -> Ingestor:
        from citeline.ingest.files import Listings
        from citeline.ingest.pipeline import Ingestor  # parsers and chunking: not needed to search
        from citeline.ingest.readd import StoredFilesMemo

        if self._stored_memo is None:
            self._stored_memo = StoredFilesMemo()
        if self._listings is None:
            self._listings = Listings()
        return Ingestor(
            self.store,
            self.embedder,
            self.settings,
            memo=self._stored_memo,
            listings=self._listings,
            fast=self.components.fast_embedder() if progressive else None,
        )

    def add(
        self,
        paths: Iterable[str | os.PathLike[str]],
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        progress: Progress | None = None,
        *,
        collection: str = DEFAULT_COLLECTION,
        root: str | os.PathLike[str] | None = None,
        workers: str | None = None,
        keep_missing: bool = False,
        prune: bool = False,
        progressive: bool = False,
    ) -> IngestReport:
        """Add or update files and folders; a folder is reconciled (documents whose files are gone
        are removed, see ``Ingestor.add``; ``keep_missing`` keeps them, ``prune`` allows removing
        more than half of a folder's documents). ``workers`` (``ray://HOST:PORT`` or ``local:N``)
        parses and embeds on Ray, writing here in batches (citeline.ingest.distributed).
        ``progressive``: embed with the fast embedder (``fast_embedder``) only, so documents are
        searchable at once; ``embed()`` adds the index's embedder's vectors later."""
        if workers:
            from citeline.ingest.distributed import add_distributed

            return add_distributed(
                self._ingestor(progressive),
                [str(p) for p in paths],
                workers,
                tags,
                acl,
                progress,
                collection,
                root,
                keep_missing=keep_missing,
                prune=prune,
            )
        return self._ingestor(progressive).add(
            [str(p) for p in paths],
            tags=tags,
            acl=acl,
            progress=progress,
            collection=collection,
            root=root,
            keep_missing=keep_missing,
            prune=prune,
        )

    def add_bytes(
        self,
        name: str,
        data: bytes,
        *,
        collection: str = DEFAULT_COLLECTION,
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        metadata: Mapping[str, object] | None = None,
    ) -> IngestReport:
        """Add one document from bytes (an upload); ``name`` is its source within ``collection``."""
        return self._ingestor().add_bytes(
            name, data, collection=collection, tags=tags, acl=acl, metadata=metadata
        )

    def remove_document(self, document: Document) -> None:
        self.store.remove_document(document.id)

    def remove(self, paths: Iterable[str | os.PathLike[str]]) -> IngestReport:
        return self._ingestor().remove([str(p) for p in paths])

    def embed(
        self, progress: Progress | None = None, stop: Callable[[], bool] | None = None
    ) -> dict[str, Any]:
        """The background pass of progressive indexing (resumable, safe to kill): the index's
        embedder's vectors for the chunks that have only the fast embedder's."""
        from citeline.ingest.embed import embed_pending

        s = self.settings
        return embed_pending(self.store, self.embedder, progress, retries=s.embed_retries, stop=stop)

    def reindex(
        self, embedder_name: str, progress: Progress | None = None, *, swap: bool = True
    ) -> dict[str, Any]:
        """Embed every chunk with another embedder side by side, then swap atomically (``swap``).

        Without ``swap`` the new vectors stay beside the old ones, unused: a later call embeds
        only what was added meanwhile (``citeline.eval.shadow.compared_reindex`` compares first).
        """
        from citeline.embedding import make_embedder
        from citeline.ingest.embed import reembed

        new = make_embedder(embedder_name)
        result = reembed(self.store, new, progress, swap=swap)
        if swap:
            self.components = Components(self.settings, self.store, embedder=new)
        return result

    # -- search and answers --------------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        principal: Principal | Filter | None = None,
        *,
        flt: Filter | None = None,
        k: int | None = None,
        fusion: str | None = None,
        alpha: float | None = None,
    ) -> Retrieval:
        s = self.settings
        return self.components.retriever().retrieve(
            analyze(query),
            access_filter(principal, flt),
            k=k or s.top_k,
            fusion=fusion or s.fusion,
            rrf_k=s.rrf_k,
            alpha=s.alpha if alpha is None else alpha,
        )

    def search(
        self,
        query: str,
        principal: Principal | Filter | None = None,
        *,
        flt: Filter | None = None,
        k: int | None = None,
        fusion: str | None = None,
        alpha: float | None = None,
    ) -> list[Hit]:
        if not query.strip():
            raise InvalidQuestionError("The query is empty.")
        # Each stage retrieves generously; k only limits what is returned.
        retrieval = self.retrieve(
            query, principal, flt=flt, k=max(k or 0, self.settings.top_k), fusion=fusion, alpha=alpha
        )
        hits = retrieval.hits
        reranker = self.components.reranker
        if reranker is not None:
            hits = reranker.rerank(retrieval.query, hits[: self.settings.rerank_depth])
        return hits[: k or self.settings.top_k]

    def ask(
        self,
        question: str,
        principal: Principal | Filter | None = None,
        *,
        flt: Filter | None = None,
        on_text: Callable[[str], None] | None = None,
        on_sentence: SentenceListener | None = None,
        on_progress: ProgressListener | None = None,
    ) -> Answer:
        """Answer with citations, or refuse. ``on_text`` receives the answer text as it streams;
        ``on_sentence`` each sentence once checked, ``on_progress`` each stage as it is reached
        (see citeline.answer.streaming)."""
        answer = self.components.answerer().ask(
            question,
            access_filter(principal, flt),
            on_text=on_text,
            on_sentence=on_sentence,
            on_progress=on_progress,
        )
        return self._with_page_labels(answer)

    def _with_page_labels(self, answer: Answer) -> Answer:
        """The answer with each cited page's printed label, where its document has labels."""
        paged = {c.document_id for c in answer.citations if c.page is not None}
        if not paged:
            return answer
        docs = self.store.get_documents(sorted(paged))
        cited = []
        for c in answer.citations:
            doc = docs.get(c.document_id)
            if doc is None or c.page is None or PAGE_LABELS not in doc.metadata:
                cited.append(c)
                continue
            cited.append(
                replace(
                    c,
                    page_label=page_label(doc.metadata, c.page),
                    page_end_label=page_label(doc.metadata, c.page_end),
                )
            )
        return replace(answer, citations=tuple(cited))

    # -- documents -----------------------------------------------------------------------------

    def documents(
        self,
        principal: Principal | Filter | None = None,
        *,
        flt: Filter | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[Document]:
        return self.store.documents(access_filter(principal, flt), limit=limit, offset=offset)

    def document(self, source_or_id: str, principal: Principal | None = None) -> Document:
        """A document by id, source or file path, if the principal may read it."""
        flt = access_filter(principal, None)
        if not utf8_name(source_or_id):
            raise DocumentNotFoundError(source_or_id)  # a name that is not UTF-8 is never a source
        doc = (
            self.store.get_document(source_or_id)
            or self.store.find_document(Path(source_or_id).as_posix())
            or self.store.find_document(os.path.abspath(source_or_id))
        )
        if doc is None or not self._readable(doc, flt):
            raise DocumentNotFoundError(source_or_id)
        return doc

    def readable_document(self, document_id: str, principal: Principal) -> Document | None:
        """The document with this id (never a source or path), if ``principal`` may read it."""
        doc = self.store.get_document(document_id)
        return doc if doc is not None and self._readable(doc, Filter(principal=principal)) else None

    def find_document(self, source: str, collection: str = DEFAULT_COLLECTION) -> Document | None:
        """The document of ``source`` in ``collection``, whoever may read it (writers: after an add)."""
        return self.store.find_document(source, collection)

    def count_documents(
        self, principal: Principal | Filter | None = None, *, flt: Filter | None = None
    ) -> int:
        return self.store.count_documents(access_filter(principal, flt))

    def chunk_count(self, document: Document) -> int:
        return len(self.store.document_chunks(document.id))

    def _readable(self, doc: Document, flt: Filter) -> bool:
        return (
            flt.principal.admin
            or self.store.count_documents(Filter(principal=flt.principal, documents=(doc.id,))) == 1
        )

    def text(self, document: Document) -> str:
        return self.store.document_text(document.id)

    def page_starts(self, document: Document) -> list[int]:
        return self.store.page_starts(document.id)

    def original(self, document: Document) -> bytes | None:
        return self.store.original(document.id)

    # -- inspection ----------------------------------------------------------------------------

    def check(self, repair: bool = False) -> CheckReport:
        """The store's consistency check (``citeline check``). ``repair`` rebuilds derived indexes,
        drops orphans and embeds again the chunks left without a vector; the store is then
        checked again (``remaining``)."""
        problems = self.store.check(repair=repair)
        if not repair:
            return CheckReport(problems)
        if any(p.kind == "vectors" and not p.repaired for p in problems):
            self._embed_missing()
        remaining = self.store.check()
        if not remaining:
            problems = [replace(p, repaired=True) for p in problems]
        return CheckReport(problems, remaining)

    def _embed_missing(self) -> int:
        from citeline.ingest.embed import embed_batches

        embedder = self.embedder
        pending = self.store.all_text_hashes()
        have = self.store.cached_vectors([h for h, _ in pending])
        todo = [(h, t) for h, t in pending if h not in have]
        for hashes, vectors in embed_batches(embedder, todo, retries=self.settings.embed_retries):
            self.store.add_vectors(embedder.name, dict(zip(hashes, vectors, strict=True)))
        return len(todo)

    def stats(self) -> dict[str, Any]:
        """The store's counts and sizes (documents, chunks, vectors, ...)."""
        return self.store.stats()

    def embedder_info(self) -> EmbedderInfo | None:
        """The index's embedder as recorded, or None before the first add (a cheap store query)."""
        return self.store.embedder_info()

    def status(self) -> dict[str, Any]:
        return {
            **self.store.stats(),
            "settings": {"generator": self.settings.generator, "reranker": self.settings.reranker},
        }

    def trace(
        self, trace_id: str, principal: Principal | None = None, *, any_owner: bool = False
    ) -> Trace | None:
        """A stored trace, if ``principal`` (default: the local admin) asked it or is an admin, or
        ``any_owner`` (the server's admin keys open every trace). Whatever came from a document
        ``principal`` may not read is left out, for every role (trace_access.py)."""
        who = principal or Principal.local_admin()
        trace = self.store.get_trace(trace_id)
        if trace is None or not (who.admin or any_owner or trace.owner == who.label):
            return None
        from citeline.trace_access import visible_trace

        return visible_trace(trace, self.store, who)

    def traces(
        self, principal: Principal | None = None, failed_only: bool = False, limit: int = 20
    ) -> list[TraceSummary]:
        who = principal or Principal.local_admin()
        return self.store.list_traces(None if who.admin else who.label, failed_only, limit)

    def save_settings(self, values: Mapping[str, Any], remove: Iterable[str] = ()) -> Settings:
        """Keep settings in the index itself (checked first); returns the new effective settings."""
        merged = {**self.store.stored_settings(), **values}
        for key in remove:
            merged.pop(key, None)
        load_settings(self.settings.index, stored=merged)  # validate before writing
        self.store.save_settings(values, remove)
        self.settings = load_settings(self.settings.index, stored=self.store.stored_settings())
        return self.settings

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_kb(
    index: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    read_only: bool = False,
    **overrides: Any,
) -> KnowledgeBase:
    """Open (or create) the index at ``index``: a folder (default ``./.citeline`` or
    ``$CITELINE_INDEX``) or a database URL. ``overrides`` are settings (None = not given).

    ``read_only`` opens an existing index without ever writing to it (answers then carry no trace).
    """
    location = index_location(index)
    store = open_store(location, create=create and not read_only, read_only=read_only)
    try:
        settings = load_settings(location, stored=store.stored_settings(), **overrides)
    except BaseException:
        store.close()
        raise
    if not is_url(location) and not store.read_only and not (Path(location) / SETTINGS_FILE).exists():
        _write_template(Path(location) / SETTINGS_FILE, settings.to_toml())
    return KnowledgeBase(settings, store)


def _write_template(path: Path, text: str) -> None:
    """Write the commented settings template atomically (a concurrent reader never sees half of
    it); a full disk only costs the template, never the command."""
    with contextlib.suppress(OSError):
        write_atomically(path, text, ".citeline-toml-")
