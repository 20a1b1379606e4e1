"""The Python API: ``kb = citeline.open(DIR)``; ``kb.add(paths)``; ``kb.search(q)``; ``kb.ask(q)``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from citeline.answer.answerer import Answerer
from citeline.answer.generators.base import Generator
from citeline.answer.verify import HeuristicVerifier, JudgeVerifier, NliVerifier, Verifier
from citeline.embedding import make_embedder
from citeline.embedding.base import Embedder
from citeline.errors import (
    CitelineError,
    ConfigError,
    DocumentNotFoundError,
    EmbedderMismatchError,
    UnknownBackendError,
)
from citeline.index.sqlite import SqliteStore
from citeline.ingest.pipeline import Ingestor, IngestReport, Progress
from citeline.models import Answer, Hit
from citeline.rerank.base import Reranker
from citeline.retrieval.filters import Filter
from citeline.retrieval.hybrid import HybridRetriever, Retrieval
from citeline.retrieval.rewrite import QueryExpander
from citeline.settings import SETTINGS_FILE, Settings, load_settings


class KnowledgeBase:
    """One index folder and the pipeline around it. Cheap to open; models load on first use."""

    def __init__(
        self,
        settings: Settings,
        *,
        create: bool = True,
        read_only: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.folder = Path(settings.index)
        self.store = SqliteStore(self.folder, create=create and not read_only, read_only=read_only)
        if not self.store.read_only and not (self.folder / SETTINGS_FILE).exists():
            (self.folder / SETTINGS_FILE).write_text(settings.to_toml(), encoding="utf-8")
        self._embedder = embedder
        self._generator: Generator | None = None
        self._verifier: Verifier | None = None
        self._reranker: Reranker | None = None

    # -- components (lazy) --------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            info = self.store.embedder_info()
            # The index's own embedder wins; asking for another one explicitly is an error.
            requested = os.environ.get("CITELINE_EMBEDDER")
            if info and requested and requested != info["name"]:
                raise EmbedderMismatchError(info["name"], requested)
            embedder = make_embedder(info["name"] if info else self.settings.embedder)
            if info is not None or not self.store.read_only:
                self.store.bind_embedder(embedder.name, embedder.version, embedder.dim)
            self._embedder = embedder
        return self._embedder

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            from citeline.answer.generators.registry import make_generator

            s = self.settings
            options: dict[str, Any] = {}
            if s.generator == "extractive":
                options = {
                    "embedder": self.embedder,
                    "max_sentences": s.max_answer_sentences,
                    "min_score": s.min_answer_score,
                    "term_weights": self.store.term_weights,
                }
            elif s.generator == "llamacpp" and s.generator_model:
                key = "model_path" if s.generator_model.endswith(".gguf") else "model"
                options[key] = s.generator_model
            elif s.generator in ("openai", "anthropic"):
                options = {"model": s.generator_model or None}
                if s.generator == "openai" and s.generator_base_url:
                    options["base_url"] = s.generator_base_url
            self._generator = make_generator(s.generator, **options)
        return self._generator

    @property
    def verifier(self) -> Verifier:
        if self._verifier is None:
            name = self.settings.verifier
            heuristic = HeuristicVerifier(self.embedder)
            if name == "heuristic":
                self._verifier = heuristic
            elif name.startswith("nli:"):
                self._verifier = NliVerifier(name[len("nli:") :])
            elif name == "llm":
                complete = getattr(self.generator, "complete", None)
                if complete is None:
                    raise ConfigError(
                        f"verifier 'llm' needs an LLM generator, not '{self.settings.generator}'."
                    )
                self._verifier = JudgeVerifier(complete, heuristic)
            else:
                raise UnknownBackendError("verifier", name, ["heuristic", "nli:DIR", "llm"])
        return self._verifier

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is None and self.settings.reranker != "none":
            from citeline.rerank import make_reranker

            self._reranker = make_reranker(
                self.settings.reranker, embedder=self.embedder, settings=self.settings
            )
        return self._reranker

    def use_generator(self, generator: Generator) -> None:
        self._generator = generator

    # -- ingestion -----------------------------------------------------------------------------

    def add(
        self,
        paths: Iterable[str | os.PathLike[str]],
        tags: dict[str, str] | None = None,
        acl: Iterable[str] = (),
        progress: Progress | None = None,
    ) -> IngestReport:
        return Ingestor(self.store, self.embedder, self.settings).add(
            [str(p) for p in paths], tags=tags, acl=acl, progress=progress
        )

    def remove(self, paths: Iterable[str | os.PathLike[str]]) -> IngestReport:
        return Ingestor(self.store, self.embedder, self.settings).remove([str(p) for p in paths])

    def reindex(self, embedder_name: str, progress: Progress | None = None) -> dict[str, Any]:
        """Embed every chunk with another embedder side by side, then swap atomically."""
        new = make_embedder(embedder_name)
        pending = self.store.all_text_hashes()
        have = self.store.cached_vectors([h for h, _ in pending], embedder=new.name)
        todo = [(h, t) for h, t in pending if h not in have]
        limit = new.max_tokens
        for lo in range(0, len(todo), 64):
            part = todo[lo : lo + 64]
            if max(new.count_tokens([t for _, t in part]), default=0) > limit:
                raise CitelineError(
                    f"Some chunks are longer than '{new.name}' accepts ({limit} tokens); re-add the documents "
                    f"with that embedder in a fresh index instead."
                )
            vectors = new.embed([t for _, t in part])
            self.store.add_vectors(new.name, {h: v for (h, _), v in zip(part, vectors, strict=True)})
            if progress:
                progress("chunks", len(part))
        self.store.swap_embedder(new.name, new.version, new.dim)
        self._embedder = new
        return {"embedder": new.name, "chunks": len(pending), "embedded": len(todo)}

    # -- search and answers --------------------------------------------------------------------

    def retriever(self) -> HybridRetriever:
        return HybridRetriever(self.store, self.embedder, self.query_expander)

    @property
    def query_expander(self) -> QueryExpander | None:
        mode = self.settings.query_expansion
        if mode == "none":
            return None
        complete = getattr(self.generator, "complete", None)
        if complete is None:
            raise ConfigError(
                f"query_expansion '{mode}' needs an LLM generator, not '{self.settings.generator}'."
            )
        return QueryExpander(complete, mode)

    def retrieve(
        self, query: str, flt: Filter | None = None, k: int | None = None, **options: Any
    ) -> Retrieval:
        s = self.settings
        return self.retriever().retrieve(
            query,
            flt,
            k=k or s.top_k,
            fusion=options.get("fusion", s.fusion),
            rrf_k=s.rrf_k,
            alpha=options.get("alpha", s.alpha),
        )

    def search(
        self, query: str, k: int | None = None, flt: Filter | None = None, **options: Any
    ) -> list[Hit]:
        if not query.strip():
            from citeline.errors import InvalidQuestionError

            raise InvalidQuestionError("The query is empty.")
        # Each stage retrieves generously; k only limits what is returned.
        retrieval = self.retrieve(query, flt, max(k or 0, self.settings.top_k), **options)
        hits = retrieval.hits
        if self.reranker is not None:
            hits = self.reranker.rerank(query, hits[: self.settings.rerank_depth])
        return hits[: k or self.settings.top_k]

    def answerer(self) -> Answerer:
        return Answerer(
            self.store, self.retriever(), self.generator, self.verifier, self.settings, self.reranker
        )

    def ask(
        self, question: str, flt: Filter | None = None, on_text: Callable[[str], None] | None = None
    ) -> Answer:
        """Answer with citations, or refuse. ``on_text`` receives the answer text as it streams."""
        return self.answerer().ask(question, flt, on_text=on_text)

    # -- inspection ----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            **self.store.stats(),
            "settings": {"generator": self.settings.generator, "reranker": self.settings.reranker},
        }

    def show(
        self, source: str, start: int | None = None, end: int | None = None, page: int | None = None
    ) -> dict[str, Any]:
        doc = self.store.get_document(source) or next(
            (d for d in self.store.documents() if d.metadata.get("path") == str(Path(source).resolve())), None
        )
        if doc is None:
            raise DocumentNotFoundError(source)
        text = self.store.document_text(doc.id)
        lo, hi = 0, len(text)
        if page is not None:
            starts = self.store.page_starts(doc.id)
            if not starts:
                raise CitelineError(f"{source} has no pages (only PDFs do); use --span START:END.")
            if not 1 <= page <= len(starts):
                raise CitelineError(f"{source} has {len(starts)} pages; page {page} does not exist.")
            lo, hi = starts[page - 1], starts[page] if page < len(starts) else len(text)
        if start is not None and end is not None:
            if not 0 <= start <= end <= len(text):
                raise CitelineError(f"Span {start}:{end} is outside {source} (0:{len(text)}).")
            if page is None:
                lo, hi = max(0, start - 300), min(len(text), end + 300)
        return {
            "document": doc,
            "text": text,
            "window": (lo, hi),
            "span": (start, end) if start is not None else None,
        }

    def trace(self, trace_id: str) -> dict[str, Any] | None:
        return self.store.get_trace(trace_id)

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
    """Open (or create) the index at ``index`` (default ``./.citeline`` or ``$CITELINE_INDEX``).

    ``read_only`` opens an existing index without ever writing to it (answers then carry no trace).
    """
    return KnowledgeBase(load_settings(index, **overrides), create=create, read_only=read_only)
