"""One registry for every kind of backend: embedders, parsers, rerankers, generators, verifiers, stores.

A backend is named by a spec, ``name`` or ``name:argument`` (``onnx:/models/e5``,
``cross-encoder:/models/ms-marco``, ``llamacpp:1.5b``). Registering records only a dotted path to
the backend's factory, so nothing is imported until a backend is built: a missing optional
dependency raises MissingExtraError (with the pip command) for that backend alone.

Every factory has the same shape, ``factory(context, argument) -> backend``: it reads what it
needs from ``context.settings`` and asks the context for the components it depends on
(``context.embedder``, ``context.chat_model``, ``context.store``). Third-party packages add
backends through the ``citeline.backends`` entry-point group: each entry point names a callable
``register(registry)`` that calls ``registry.register(...)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from citeline.errors import ConfigError, MissingExtraError, UnknownBackendError

KINDS = ("embedder", "parser", "reranker", "reader", "generator", "verifier", "store")
ENTRY_POINT_GROUP = "citeline.backends"


# (context: citeline.build_context.BuildContext | None, argument: str | None, **options) -> backend
Factory = Callable[..., Any]


@dataclass(frozen=True)
class Backend:
    kind: str
    name: str
    #: "package.module:callable", imported on first use (or the callable itself)
    target: str | Factory
    #: the pip extra that installs its dependencies ("citeline[EXTRA]"), None for core ones
    extra: str | None = None
    #: what may follow "name:" ("DIR", "MODEL"); None: the backend takes no argument
    argument: str | None = None
    #: True when the argument must be given
    argument_required: bool = False
    summary: str = ""
    #: parsers: the file extensions they read, lower-case with the dot
    extensions: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        if self.argument is None:
            return self.name
        return f"{self.name}:{self.argument}" if self.argument_required else f"{self.name}[:{self.argument}]"

    def factory(self) -> Factory:
        if callable(self.target):
            return self.target
        module_name, _, attr = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            missing = getattr(exc, "name", None) or ""
            if self.extra and not (missing == "citeline" or missing.startswith("citeline.")):
                raise MissingExtraError(
                    f"The {self.kind} '{self.name}'", missing or self.extra, self.extra
                ) from exc
            raise
        factory: Factory = getattr(module, attr)
        return factory


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"name:arg"`` -> ("name", "arg"); ``"name"`` -> ("name", None)."""
    name, sep, argument = spec.strip().partition(":")
    return name, (argument if sep else None)


class Registry:
    def __init__(self) -> None:
        self._backends: dict[str, dict[str, Backend]] = {kind: {} for kind in KINDS}
        self._entry_points_loaded = False

    # -- registering --------------------------------------------------------------------------

    def register(
        self,
        kind: str,
        name: str,
        target: str | Factory,
        *,
        extra: str | None = None,
        argument: str | None = None,
        argument_required: bool = False,
        summary: str = "",
        extensions: tuple[str, ...] = (),
    ) -> Backend:
        if kind not in self._backends:
            raise ValueError(f"Unknown backend kind '{kind}'; kinds: {', '.join(KINDS)}.")
        if not name or ":" in name:
            raise ValueError(f"Backend name {name!r} must be non-empty and contain no ':'.")
        backend = Backend(
            kind,
            name,
            target,
            extra,
            argument,
            argument_required,
            summary,
            tuple(e.lower() for e in extensions),
        )
        self._backends[kind][name] = backend
        return backend

    def load_entry_points(self, force: bool = False) -> None:
        """Let installed packages register their backends (once per process, unless ``force``)."""
        if self._entry_points_loaded and not force:
            return
        self._entry_points_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                hook = ep.load()
                hook(self)
            except Exception as exc:  # one broken plugin must not break the product
                import warnings

                warnings.warn(f"citeline plugin '{ep.name}' ({ep.value}) failed to load: {exc}", stacklevel=2)

    # -- looking up ---------------------------------------------------------------------------

    def backends(self, kind: str) -> list[Backend]:
        self.load_entry_points()
        return sorted(self._backends[kind].values(), key=lambda b: b.name)

    def names(self, kind: str) -> list[str]:
        return [b.name for b in self.backends(kind)]

    def specs(self, kind: str) -> list[str]:
        return [b.spec for b in self.backends(kind)]

    def backend(self, kind: str, spec: str) -> tuple[Backend, str | None]:
        """The backend a spec names and its argument; UnknownBackendError lists what exists."""
        name, argument = split_spec(spec)
        found = self._backends[kind].get(name)
        if found is None:
            self.load_entry_points()
            found = self._backends[kind].get(name)
        if found is None:
            raise UnknownBackendError(kind, spec, self.specs(kind))
        if argument is not None and found.argument is None:
            raise ConfigError(f"The {kind} '{name}' takes no argument, got '{spec}'.")
        if found.argument_required and not argument:
            raise ConfigError(f"The {kind} '{name}' needs an argument: '{name}:{found.argument}'.")
        return found, argument

    def check(self, kind: str, spec: str) -> None:
        """Validate a spec without importing anything."""
        self.backend(kind, spec)

    def create(self, kind: str, spec: str, context: Any = None, **options: Any) -> Any:
        """Build a backend: ``factory(context, argument, **options)`` (options: stores' open mode);
        ``context`` is a BuildContext (build_context.py), which sits above the stages' contracts."""
        backend, argument = self.backend(kind, spec)
        return backend.factory()(context, argument, **options)

    def parser_backend(self, extension: str) -> Backend | None:
        extension = extension.lower()
        for backend in self.backends("parser"):
            if extension in backend.extensions:
                return backend
        return None

    def extensions(self) -> tuple[str, ...]:
        return tuple(sorted(e for b in self.backends("parser") for e in b.extensions))

    def __iter__(self) -> Iterator[Backend]:
        for kind in KINDS:
            yield from self.backends(kind)


def _builtins(r: Registry) -> None:
    # embedders
    r.register(
        "embedder",
        "minilm-int8",
        "citeline.embedding.onnx:minilm_factory",
        summary="all-MiniLM-L6-v2 int8 ONNX (packaged, offline; the default)",
    )
    r.register(
        "embedder",
        "minilm-static",
        "citeline.embedding.static:minilm_static_factory",
        summary="static token vectors distilled from MiniLM: numpy only, tens of times faster, weaker",
    )
    r.register(
        "embedder",
        "onnx",
        "citeline.embedding.onnx:onnx_dir_factory",
        argument="DIR",
        argument_required=True,
        summary="any local folder with model.onnx and tokenizer.json",
    )
    r.register(
        "embedder",
        "hashing",
        "citeline.embedding.hashing:hashing_factory",
        summary="feature hashing: no model, weak on meaning (tests, fallback)",
    )
    # parsers
    r.register(
        "parser",
        "markdown",
        "citeline.ingest.formats.markdown:MarkdownParser",
        extensions=(".md", ".markdown"),
    )
    r.register(
        "parser", "text", "citeline.ingest.formats.text:TextParser", extensions=(".txt", ".text", ".rst")
    )
    r.register("parser", "html", "citeline.ingest.formats.html:HtmlParser", extensions=(".html", ".htm"))
    r.register("parser", "pdf", "citeline.ingest.formats.pdf:PdfParser", extensions=(".pdf",))
    r.register("parser", "docx", "citeline.ingest.formats.docx:DocxParser", extensions=(".docx",))
    # rerankers
    r.register(
        "reranker",
        "relevance",
        "citeline.rerank.learned:relevance_factory",
        summary="the fused rank plus the refusal guard's dense cosine and term coverage",
    )
    r.register(
        "reranker",
        "learned",
        "citeline.rerank.learned:learned_factory",
        summary="linear model over retrieval features, fitted on SciFact train",
    )
    r.register(
        "reranker",
        "late-interaction",
        "citeline.rerank.learned:late_interaction_factory",
        summary="learned features plus MaxSim over the embedder's token vectors",
    )
    r.register(
        "reranker",
        "cross-encoder",
        "citeline.rerank.cross_encoder:cross_encoder_factory",
        argument="MODEL",
        argument_required=True,
        summary="a cross-encoder: folder with model.onnx + tokenizer.json, or a hub name",
    )
    r.register(
        "reranker",
        "llm",
        "citeline.rerank.llm:llm_reranker_factory",
        summary="listwise ranking by the chat model (chat_model or an LLM generator)",
    )
    r.register(
        "reranker",
        "reader",
        "citeline.answer.reader:reader_reranker_factory",
        argument="DIR",
        summary="our trained reader scoring each passage (see answer/reader.py)",
    )
    # readers
    r.register(
        "reader",
        "citeline",
        "citeline.answer.reader:reader_factory",
        argument="DIR",
        summary="our trained cross-encoder, packaged (or another export of it in DIR)",
    )
    # generators
    r.register(
        "generator",
        "extractive",
        "citeline.answer.extractive:extractive_factory",
        summary="offline: quotes the passage units that best answer the question",
    )
    r.register(
        "generator",
        "llamacpp",
        "citeline.answer.generators.llamacpp_gen:llamacpp_factory",
        extra="llamacpp",
        argument="MODEL",
        summary="in-process GGUF model (0.5b, 1.5b or a path)",
    )
    r.register(
        "generator",
        "openai",
        "citeline.answer.generators.openai_gen:openai_factory",
        extra="openai",
        argument="MODEL",
        summary="any OpenAI-compatible endpoint",
    )
    r.register(
        "generator",
        "anthropic",
        "citeline.answer.generators.anthropic_gen:anthropic_factory",
        extra="anthropic",
        argument="MODEL",
        summary="Anthropic's Messages API",
    )
    # verifiers
    r.register(
        "verifier",
        "heuristic",
        "citeline.answer.verify:heuristic_factory",
        summary="numbers, salient terms and embedding similarity (says it is a heuristic)",
    )
    r.register(
        "verifier",
        "nli",
        "citeline.answer.verify:nli_factory",
        argument="DIR",
        argument_required=True,
        summary="an NLI cross-encoder exported to ONNX",
    )
    r.register(
        "verifier",
        "checker",
        "citeline.answer.checker:checker_factory",
        argument="DIR",
        summary="our trained claim checker (the packaged cross-encoder, or another export in DIR)",
    )
    r.register(
        "verifier",
        "llm",
        "citeline.answer.verify:judge_factory",
        summary="the chat model judges each sentence against its passage",
    )
    # stores
    r.register(
        "store",
        "sqlite",
        "citeline.index.sqlite.store:sqlite_factory",
        argument="DIR",
        summary="the embedded default: one folder, SQLite + FTS5 + exact vectors",
    )
    r.register(
        "store",
        "postgresql",
        "citeline.index.postgres.store:postgres_factory",
        extra="postgres",
        argument="URL",
        argument_required=True,
        summary="shared: PostgreSQL + pgvector (HNSW) + full-text BM25, Citus-ready (postgresql://...)",
    )


registry = Registry()
_builtins(registry)
