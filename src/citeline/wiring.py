"""Wiring: the pipeline's components built from one Settings object through the backend registry.

Each component is built on first use (loading a model costs seconds) and shared afterwards.
Components is also the BuildContext handed to every backend factory, so a backend asks for
what it needs (the embedder, the chat model, the store) instead of being handed it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citeline.chat import ChatModel
from citeline.errors import ConfigError, EmbedderMismatchError
from citeline.registry import registry
from citeline.settings import Settings, is_url

if TYPE_CHECKING:
    from citeline.answer.answerer import Answerer
    from citeline.answer.generators.base import Generator
    from citeline.answer.reader import Reader
    from citeline.answer.verify import Verifier
    from citeline.embedding.base import Embedder
    from citeline.index.base import Store
    from citeline.rerank.base import Reranker
    from citeline.retrieval.breaker import CircuitBreaker
    from citeline.retrieval.hybrid import HybridRetriever
    from citeline.retrieval.rewrite import QueryExpander


def store_spec(location: str) -> str:
    """The store backend for an index location: a database URL names its scheme, a folder is SQLite."""
    if is_url(location):
        scheme = location.split("://", 1)[0].split("+", 1)[0].lower()
        return f"{'postgresql' if scheme in ('postgres', 'postgresql') else scheme}:{location}"
    return f"sqlite:{location}"


def open_store(location: str, *, create: bool = True, read_only: bool = False) -> Store:
    store: Store = registry.create("store", store_spec(location), None, create=create, read_only=read_only)
    return store


class Components:
    def __init__(self, settings: Settings, store: Store, *, embedder: Embedder | None = None) -> None:
        self._settings = settings
        self._store = store
        store.configure(settings)
        self._embedder = embedder
        self._fast: dict[str, Embedder] = {}
        self._generator: Generator | None = None
        self._chat_model: ChatModel | None = None
        self._verifier: Verifier | None = None
        self._reranker: Reranker | None = None
        self._expander: QueryExpander | None = None
        self._injected: Generator | None = None
        self._reader: Reader | None = None
        self._breaker: CircuitBreaker | None = None
        self._answerer: Answerer | None = None

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def store(self) -> Store:
        return self._store

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from citeline.embedding import make_embedder

            info = self._store.embedder_info()
            # The index's own embedder wins; asking for another one explicitly is an error.
            requested = self._settings.embedder
            if info is not None and self._settings.origin("embedder") != "default" and requested != info.name:
                raise EmbedderMismatchError(info.name, requested)
            embedder = make_embedder(
                info.name if info is not None else requested, self._settings.embed_threads
            )
            if info is not None or not self._store.read_only:
                self._store.bind_embedder(embedder.name, embedder.version, embedder.dim)
            self._embedder = embedder
        return self._embedder

    @property
    def generator(self) -> Generator:
        if self._generator is None:
            self._generator = registry.create("generator", self._settings.generator, self)
        return self._generator

    def use_generator(self, generator: Generator) -> None:
        """Answer with an already built generator (a loaded local model shared by several indexes)."""
        self._generator = generator
        self._injected = generator
        self._chat_model = None
        self._answerer = None  # it holds the generator it was built with

    def with_settings(self, settings: Settings) -> Components:
        """The same store, embedder and injected generator, other settings (the rest is rebuilt)."""
        wired = Components(settings, self._store, embedder=self._embedder)
        wired._fast = self._fast
        if self._injected is not None:
            wired.use_generator(self._injected)
        return wired

    @property
    def chat_model(self) -> ChatModel:
        """The LLM behind the llm reranker, query expansion and the llm verifier."""
        if self._chat_model is None:
            spec = self._settings.chat_model
            model = self.generator if not spec or spec == self._settings.generator else None
            if model is None:
                model = registry.create("generator", spec, self)
            if not isinstance(model, ChatModel):
                raise ConfigError(
                    f"This needs an LLM, and the generator '{self._settings.generator}' is not one: set "
                    "chat_model (e.g. llamacpp, openai) or use an LLM generator."
                )
            self._chat_model = model
        return self._chat_model

    @property
    def reader(self) -> Reader | None:
        """The trained reader (None when the reader setting is none)."""
        if self._reader is None and self._settings.reader != "none":
            self._reader = registry.create("reader", self._settings.reader, self)
        return self._reader

    @property
    def verifier(self) -> Verifier:
        if self._verifier is None:
            self._verifier = registry.create("verifier", self._settings.verifier, self)
        return self._verifier

    @property
    def reranker(self) -> Reranker | None:
        if self._reranker is None and self._settings.reranker != "none":
            self._reranker = registry.create("reranker", self._settings.reranker, self)
        return self._reranker

    @property
    def query_expander(self) -> QueryExpander | None:
        mode = self._settings.query_expansion
        if mode == "none":
            return None
        if self._expander is None:
            from citeline.retrieval.rewrite import QueryExpander

            self._expander = QueryExpander(self.chat_model, mode)
        return self._expander

    @property
    def breaker(self) -> CircuitBreaker:
        """The dense side's circuit breaker, shared by every retrieval through these components."""
        if self._breaker is None:
            from citeline.retrieval.breaker import CircuitBreaker

            s = self._settings
            self._breaker = CircuitBreaker(s.dense_timeout_ms, s.breaker_failures, s.breaker_cooldown_s)
        return self._breaker

    def retriever(self) -> HybridRetriever:
        from citeline.retrieval.hybrid import HybridRetriever

        return HybridRetriever(
            self._store,
            self.embedder,
            self.query_expander,
            self.breaker,
            fast=self.fast_embedder,
            rescore=self._settings.rescore_pending,
            rescore_budget_ms=self._settings.dense_timeout_ms / 2,  # the rest: the query, the searches
        )

    def fast_embedder(self, name: str | None = None) -> Embedder:
        """The fast embedder of progressive indexing: ``name`` (the one the index's pending chunks
        were embedded with), else the ``fast_embedder`` setting; made once per name."""
        from citeline.embedding import make_embedder

        name = name or self._settings.fast_embedder
        if name not in self._fast:
            self._fast[name] = make_embedder(name)
        return self._fast[name]

    def answerer(self) -> Answerer:
        """The one answerer of these components (it keeps no state between questions)."""
        if self._answerer is None:
            self._answerer = self._build_answerer()
        return self._answerer

    def _build_answerer(self) -> Answerer:
        # Answering embeds the context's units: the embedder may build its optimised model now,
        # in the background, instead of a quick one for the question first (embedding/onnx.py).
        # It and the reader start building (onnxruntime, without the GIL) before the answer
        # modules are imported (~0.1 s holding it), beside them on a second core.
        expect_volume = getattr(self.embedder, "expect_volume", None)
        if expect_volume is not None:
            expect_volume()
        reader = self.reader

        from citeline.answer.answerer import Answerer
        from citeline.answer.extractive import ExtractiveGenerator, extractive_factory

        # An LLM is called only where an extractive answer would not refuse for lack of any unit
        # close to the question (``min_answer_score``); the extractive generator checks it itself.
        llm = not isinstance(self.generator, ExtractiveGenerator)
        floor = ExtractiveGenerator(self.embedder, min_score=self._settings.min_answer_score) if llm else None
        # ... and its answer is refused only where the extractive answer would be too, when the
        # reader says the context answers the question (answer/fallback.py)
        fallback = (
            extractive_factory(self, None) if llm and self._settings.fallback_reader_score <= 1 else None
        )
        # A read-only index answers without writing a trace, rather than failing to write one.
        settings = self._settings.replace(trace=False) if self._store.read_only else self._settings
        return Answerer(
            self._store,
            self.retriever(),
            self.generator,
            self.verifier,
            settings,
            self.reranker,
            # the context's budget in the embedder's tokens, not a guess from its characters
            count_tokens=self.embedder.count_tokens,
            reader=reader,
            floor=floor,
            fallback=fallback,
        )
