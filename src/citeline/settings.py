"""The one source of configuration: typed, validated settings and where each value came from.

Layers, later wins: defaults < settings stored in the index (``citeline config set``) < the index
folder's ``citeline.toml`` < ``CITELINE_*`` environment variables < explicit overrides (command-line
flags, API arguments). An unknown key or a bad value in any layer is a ConfigError naming the key,
the layer and the accepted values. Provider API keys (OPENAI_API_KEY, ANTHROPIC_API_KEY) are not
settings: the provider SDKs read them as usual and citeline never prints them.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from citeline.errors import ConfigError, ConvexWithExpansionError

SETTINGS_FILE = "citeline.toml"
DEFAULT_INDEX = ".citeline"
ENV_PREFIX = "CITELINE_"
#: variables of the test suite and benchmarks (not settings): CITELINE_TEST_*
TEST_PREFIX = "CITELINE_TEST_"

UNSTRUCTURED_MODES = ("lexical", "semantic", "windows")
EXPANSION_MODES = ("none", "multi", "hyde", "multi+hyde")


def _opt(default: Any, help: str, **rules: Any) -> Any:
    """A setting with its help text and validation rules (choices, min, max, backend, path)."""
    return field(default=default, metadata={"help": help, **rules})


@dataclass(frozen=True)
class Settings:
    index: str = _opt(DEFAULT_INDEX, "index location: a folder (embedded) or a database URL")
    # ingestion
    embedder: str = _opt("minilm-int8", "embedding model (registry spec)", backend="embedder")
    chunk_tokens: int = _opt(200, "target chunk size in tokens, heading trail included", min=16)
    overlap_tokens: int = _opt(40, "overlap of sentence windows in tokens", min=0)
    chunk_unstructured: str = _opt(
        "lexical",
        "PDFs and text files with no headings: cut where the topic shifts, comparing the words "
        "(lexical) or the embeddings (semantic) of the sentences on each side, or sentence windows "
        "(benchmarks/bench_semantic_chunking.py chose lexical: as good as semantic, a third of its CPU)",
        choices=UNSTRUCTURED_MODES,
    )
    max_file_mb: float = _opt(64.0, "largest file read, in MB", min=0.001)
    max_text_chars: int = _opt(5_000_000, "most characters of text one document may hold", min=1)
    embed_threads: int = _opt(
        0,
        "onnxruntime threads of the embedder (minilm-int8, onnx:) (0 = every CPU this process may use)",
        min=0,
        max=256,
    )
    fast_embedder: str = _opt(
        "minilm-static",
        "progressive indexing (add --background): the embedder that makes chunks searchable at once, "
        "until `citeline embed` adds the index's embedder's vectors",
        backend="embedder",
    )
    embed_retries: int = _opt(
        2, "tries again (with exponential backoff) when the embedder fails on a batch", min=0, max=10
    )
    trust_mtime: bool = _opt(
        True,
        "re-adding: a file whose size and modification time match its document (and was not modified "
        "within 2 s of being indexed) is unchanged without being read; false: read and hash every file",
    )
    lock_timeout_s: float = _opt(
        30.0, "seconds a writer waits for another writer's transaction before failing (exit code 4)", min=0.0
    )
    # retrieval
    top_k: int = _opt(30, "candidates per retrieval stage", min=1)
    fusion: str = _opt("rrf", "how BM25 and dense lists merge", choices=("rrf", "convex"))
    rrf_k: int = _opt(60, "reciprocal rank fusion constant", min=1)
    alpha: float = _opt(0.5, "convex fusion: weight of the dense side", min=0.0, max=1.0)
    reranker: str = _opt(
        # none: "relevance" (rerank/learned.py) helped golden dev (answers naming the gold 0.673 ->
        # 0.694) but, with extractive_picks = both, the held-out golden test fell (0.633 -> 0.571)
        "none",
        "reranker (registry spec) or none",
        backend="reranker",
        none_ok=True,
    )
    rerank_depth: int = _opt(30, "candidates the reranker reorders", min=1)
    rescore_pending: int = _opt(
        30,
        "progressive indexing: the fused top candidates (BM25 and the pending chunks' fast list) "
        "missing from the dense list, scored with the index's embedder at query time (0 = rank "
        "fusion of the fast list instead; retrieval/progressive.py)",
        min=0,
    )
    query_expansion: str = _opt("none", "LLM query expansion", choices=EXPANSION_MODES)
    # 1.0: the context keeps the fused order and skips only near-duplicates (cosine >= 0.95). At 0.7
    # diversity pushed a page's second matching chunk out for another page's (golden dev, dev-extra,
    # samples and a ConditionalQA train slice chose 1.0; README "Evaluation" has the figures)
    mmr_lambda: float = _opt(
        1.0, "diversity of the context: 1 = relevance only, near-duplicates skipped", min=0.0, max=1.0
    )
    context_passages: int = _opt(5, "passages given to the generator", min=1)
    dense_timeout_ms: int = _opt(
        5000,
        "latency budget of the dense side (query embedding + vector search) per query; slower or "
        "failing, retrieval falls back to keyword only (0 = no budget)",
        min=0,
    )
    breaker_failures: int = _opt(
        3, "consecutive dense failures or overruns after which the dense side is not tried for a while", min=1
    )
    breaker_cooldown_s: float = _opt(
        30.0, "seconds the dense side stays off after breaker_failures, then one query tries it", min=0.0
    )
    # answering
    generator: str = _opt("extractive", "answer generator (registry spec)", backend="generator")
    generator_model: str = _opt(
        "", "llamacpp: 0.5b, 1.5b or a .gguf path; openai/anthropic: the model name ('' = default)"
    )
    generator_base_url: str = _opt("", "openai: any OpenAI-compatible endpoint URL ('' = OpenAI)")
    generator_timeout_s: float = _opt(120.0, "openai/anthropic: seconds to wait for one reply", min=0.1)
    generator_retries: int = _opt(
        2,
        "openai/anthropic: retries (exponential backoff) after a connection error, 429 or 5xx",
        min=0,
        max=10,
    )
    chat_model: str = _opt(
        "",
        "LLM for the llm reranker, query expansion and the llm verifier ('' = the generator, "
        "when it is an LLM)",
        backend="generator",
        empty_ok=True,
    )
    llm_threads: int = _opt(0, "CPU threads of a local LLM (0 = every CPU this process may use)", min=0)
    cache: str = _opt("", "folder for caches: models, evaluation indexes, data ('' = ~/.cache/citeline)")
    model_cache: str = _opt("", "folder for assembled local model files ('' = CACHE/models)")
    reader: str = _opt(
        "citeline",
        "reader that scores answer units (registry spec, 'citeline' = our trained model) or none",
        backend="reader",
        none_ok=True,
    )
    reader_units: int = _opt(
        # 12 (was 20): the reader's model is ~half of an answer's CPU, and on golden dev pooled (451
        # questions) 12 named the gold in 0.705 of answers against 0.699, refusal recall the same
        # (docs/performance.md, "Answering in one process")
        12,
        "units the reader scores per question (cheaply pre-ranked)",
        min=1,
    )
    reader_span_weight: float = _opt(
        # 0 (off): the span head reads units better on manuals it never saw (P@1 0.621 -> 0.707 at 0.5,
        # each golden dev manual held out in turn), but through the pipeline its picks named the gold in
        # 182 of 275 golden test answers against 188 without it (training/README.md, "The span head
        # manual by manual"); the units' order is mostly decided by the asked slot's rules
        0.0,
        "weight of the reader's span head (does the unit state a value, not only the topic) in its score; "
        "0 = the pair classifier alone",
        min=0.0,
    )
    reader_threshold: float = _opt(
        # chosen on evalsets/postfix/dev.jsonl + tests/data/questions.jsonl pooled (citeline calibrate
        # on each; the highest refusal recall + answered share, README "Refusal thresholds"); chosen
        # again with the document title in the reader's context: still 0.12
        0.12,
        "refuse when the reader's best unit scores below this (with a reader)",
        min=0.0,
        max=1.0,
    )
    verifier: str = _opt(
        "checker", "claim checker (registry spec): checker (trained), heuristic, llm", backend="verifier"
    )
    checker_threshold: float = _opt(
        0.5, "checker verifier: a sentence is supported at this entailment probability", min=0.0, max=1.0
    )
    refusal_threshold: float = _opt(0.46, "relevance below which the generator is never called")
    min_answer_score: float = _opt(
        0.35,
        "the best unit of the context by similarity and term overlap must score at least this, or the "
        "answer is a refusal (with an LLM generator: before the LLM is called)",
    )
    max_answer_sentences: int = _opt(3, "extractive: most sentences in an answer", min=1)
    fallback_reader_score: float = _opt(
        # chosen on a golden dev sample (8 answerable + 4 unanswerable questions each of borg, gnuplot,
        # postfix; packaged 1.5B): 0.4-0.6 gave the same outcome (false refusals 7 -> 0 of 24, one
        # unanswerable answered as without it), 0.3 and lower answered unanswerable ones, 0.7 and
        # higher refused answerable ones; docs/evaluation.md "With a local LLM"
        0.5,
        "with an LLM generator: when the model finds no answer or the claim checks remove every sentence "
        "it wrote, the extractive answer on the same passages is given instead if the reader's best score "
        "reaches this (above 1: never)",
        min=0.0,
    )
    extractive_picks: str = _opt(
        # blend: answers named the gold in 2 more of golden dev + dev-extra's 109 answerable
        # questions and 4 more of a ConditionalQA train slice's 240 (extractive.READER_WEIGHT).
        # The reader's picks alone lost on golden dev (0.694 -> 0.653: it misreads option lines
        # such as "-M: Show ..."); "both" gained on dev with the relevance reranker, but the
        # golden test fell with them (README, Reranking)
        "blend",
        "extractive: units quoted are the best by similarity and term overlap plus the reader's "
        "score (blend), by similarity and overlap alone (overlap), the reader's best (reader), or "
        "overlap's led by the reader's best unit when it is sure (both)",
        choices=("blend", "overlap", "reader", "both"),
    )
    max_question_chars: int = _opt(2000, "longest question accepted", min=1)
    unsupported: str = _opt(
        "remove", "what happens to a sentence the check rejects", choices=("remove", "mark")
    )
    trace: bool = _opt(True, "store a trace of every answer")
    # server (citeline serve, citeline mcp)
    server_max_upload_mb: float = _opt(20.0, "server: largest upload accepted, in MB", min=0.001)
    server_max_body_kb: int = _opt(64, "server: largest JSON request body, in KB", min=1)
    server_async_upload_kb: int = _opt(
        256, "server: uploads above this size are indexed as a background job (202 + job id)", min=0
    )
    server_rate_limit: int = _opt(120, "server: requests per minute per API key (0 = no limit)", min=0)
    server_key_failures: int = _opt(
        10, "server: wrong API keys a client address may send per minute; then 429 (0 = no limit)", min=0
    )
    server_workers: int = _opt(4, "server: threads that answer, search and index", min=1, max=64)
    server_cors_origins: str = _opt("", "server: comma-separated origins allowed by CORS ('' = CORS off)")
    server_allow_anonymous: bool = _opt(
        False, "server: answer requests without a key (read-only, documents marked public only)"
    )
    # embedded store: derived engines for large indexes (index/sqlite/engines.py)
    engine_min_chunks: int = _opt(
        20_000,
        "embedded store: from this many chunks, search with tantivy (BM25) and faiss (IVF) instead of "
        "FTS5 and the exact matrix (0 = always): hybrid p50 2.8 against 29 ms CPU at 20k chunks, 6.5 "
        "against 113 ms at 100k (benchmarks/results/bench_engines*.md)",
        min=0,
    )
    engine_exact_rows: int = _opt(
        20_000,
        "embedded store with engines: a dense search whose filter lets through at most this many "
        "chunks is exact over them (no IVF)",
        min=0,
    )
    engine_nprobe: int = _opt(
        32,
        "embedded store with engines: IVF lists probed per query, divided by the share of chunks a "
        "filter lets through (benchmarks/results/bench_engines.md)",
        min=1,
    )
    # PostgreSQL store (index = postgresql://...)
    pg_pool_size: int = _opt(8, "PostgreSQL: most connections one process keeps open", min=1, max=1000)
    pg_connect_timeout_s: float = _opt(
        30.0,
        "PostgreSQL: seconds a command waits for a connection (a server restarting, every pooled one "
        "busy) before failing (exit code 4)",
        min=1.0,
    )
    pg_exact_scan_rows: int = _opt(
        20_000,
        "PostgreSQL: a dense search whose filter lets through at most this many chunks is exact (no HNSW)",
        min=0,
    )
    pg_exact_scan_fraction: float = _opt(
        0.5,
        "PostgreSQL, pgvector < 0.8: ... or at most this share of all chunks (HNSW filters after its "
        "candidate list; benchmarks/results/bench_pg.md)",
        min=0.0,
        max=1.0,
    )
    pg_hnsw_ef_search: int = _opt(
        100, "PostgreSQL: HNSW candidate list (raised for filtered searches, at most 1000)", min=1, max=1000
    )
    # evaluation and development
    eval_cache: str = _opt("", "folder for evaluation indexes ('' = CACHE/eval)")
    datasets: str = _opt("", "folder of benchmark datasets ('' = ../shared/datasets if present)")
    debug: bool = _opt(False, "print tracebacks of internal errors")
    #: where each value came from: "default", "index", a toml path, "env CITELINE_X" or "flag"
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def replace(self, **changes: Any) -> Settings:
        clean = {k: v for k, v in changes.items() if v is not None}
        values = {k: _coerce(k, v, "override") for k, v in clean.items()}
        out = dataclasses.replace(self, **values, origins={**self.origins, **dict.fromkeys(values, "flag")})
        _validate(out, "override")
        return out

    def origin(self, name: str) -> str:
        return self.origins.get(name, "default")

    def to_toml(self) -> str:
        """A commented template: defaults stay defaults (and can improve) until a line is uncommented."""
        lines = [
            "# citeline settings for this index. Uncomment a line to change it;",
            "# CITELINE_* environment variables and command-line flags override this file.",
        ]
        for f in setting_fields():
            if f.name == "index":
                continue
            lines.append(f"# {f.metadata['help']}")
            lines.append(f"# {f.name} = {toml_value(getattr(self, f.name))}")
        return "\n".join(lines) + "\n"

    def effective(self) -> list[dict[str, Any]]:
        """Every setting with its value and origin (what `citeline config` prints)."""
        return [
            {"key": f.name, "value": getattr(self, f.name), "origin": self.origin(f.name)}
            for f in setting_fields()
        ]


def setting_fields() -> list[dataclasses.Field[Any]]:
    return [f for f in fields(Settings) if f.name != "origins"]


_TYPES: dict[str, type] = {
    f.name: {"int": int, "float": float, "bool": bool, "str": str}[str(f.type)] for f in setting_fields()
}
_META: dict[str, Mapping[str, Any]] = {f.name: f.metadata for f in setting_fields()}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def accepted(name: str) -> str:
    """A phrase naming what ``name`` accepts, for error messages."""
    meta, kind = _META[name], _TYPES[name]
    if "choices" in meta:
        return "one of " + ", ".join(meta["choices"])
    if "backend" in meta:
        from citeline.registry import registry

        extra = (["none"] if meta.get("none_ok") else []) + (['""'] if meta.get("empty_ok") else [])
        return "one of " + ", ".join([*extra, *registry.specs(meta["backend"])])
    label = {int: "a whole number", float: "a number", bool: "true or false", str: "text"}[kind]
    bounds = [f">= {meta['min']}" if "min" in meta else "", f"<= {meta['max']}" if "max" in meta else ""]
    bounds = [b for b in bounds if b]
    return label + (f" ({', '.join(bounds)})" if bounds else "")


def _coerce(name: str, raw: Any, where: str) -> Any:
    if name not in _TYPES or name == "origins":
        known = ", ".join(f.name for f in setting_fields())
        raise ConfigError(f"Unknown setting '{name}' ({where}). Known settings: {known}.")
    kind = _TYPES[name]
    bad = ConfigError(f"Setting '{name}' ({where}) must be {accepted(name)}; got {raw!r}.")
    if kind is bool:
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in _TRUE + _FALSE:
            return raw.strip().lower() in _TRUE
        raise bad
    if kind is str:
        if not isinstance(raw, str):
            raise bad
        return raw.strip()
    if isinstance(raw, bool):
        raise bad
    try:
        if kind is int:
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(raw.strip() if isinstance(raw, str) else raw)
        return float(raw.strip() if isinstance(raw, str) else raw)
    except (TypeError, ValueError):
        raise bad from None


def _check_value(name: str, value: Any, where: str) -> None:
    meta = _META[name]
    ok = True
    if "choices" in meta:
        ok = value in meta["choices"]
    elif "backend" in meta:
        if (meta.get("none_ok") and value == "none") or (meta.get("empty_ok") and value == ""):
            return
        from citeline.errors import UnknownBackendError
        from citeline.registry import registry

        try:
            registry.check(meta["backend"], value)
        except UnknownBackendError:
            ok = False
        except ConfigError as exc:
            raise ConfigError(f"Setting '{name}' ({where}): {exc}") from None
    else:
        ok = ("min" not in meta or value >= meta["min"]) and ("max" not in meta or value <= meta["max"])
    if not ok:
        raise ConfigError(f"Setting '{name}' ({where}) must be {accepted(name)}; got {value!r}.")


def _validate(settings: Settings, where: str = "") -> None:
    for f in setting_fields():
        origin = where or settings.origin(f.name)
        _check_value(f.name, getattr(settings, f.name), origin)
    if settings.fusion == "convex" and settings.query_expansion != "none":
        where = (
            where
            or f"fusion: {settings.origin('fusion')}, query_expansion: {settings.origin('query_expansion')}"
        )
        raise ConvexWithExpansionError(where)


def index_location(index: str | os.PathLike[str] | None = None) -> str:
    """The index as given (flag or argument), else $CITELINE_INDEX, else ./.citeline."""
    return str(index) if index not in (None, "") else os.environ.get(f"{ENV_PREFIX}INDEX") or DEFAULT_INDEX


def is_url(location: str) -> bool:
    return "://" in location


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc}). Fix or delete the file.") from exc
    if "index" in data:
        raise ConfigError(f"{path}: 'index' cannot be set inside the index; use --index or CITELINE_INDEX.")
    return data


def environment_layer(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CITELINE_* variables that are settings; other CITELINE_ names are an error."""
    env = os.environ if environ is None else environ
    layer: dict[str, str] = {}
    for key, raw in env.items():
        if not key.startswith(ENV_PREFIX) or key == f"{ENV_PREFIX}INDEX" or key.startswith(TEST_PREFIX):
            continue
        name = key[len(ENV_PREFIX) :].lower()
        if name not in _TYPES:
            known = ", ".join(ENV_PREFIX + f.name.upper() for f in setting_fields() if f.name != "index")
            raise ConfigError(f"Unknown environment variable {key}. Settings are: {known}.")
        layer[name] = raw
    return layer


def load_settings(
    index: str | os.PathLike[str] | None = None,
    *,
    stored: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Resolve settings for an index. ``stored`` are the settings kept in the index itself;
    ``overrides`` are command-line flags or API arguments (None means "not given")."""
    location = index_location(index)
    values: dict[str, Any] = {"index": location}
    origins: dict[str, str] = {}
    if index not in (None, ""):
        origins["index"] = "flag"
    elif os.environ.get(f"{ENV_PREFIX}INDEX"):
        origins["index"] = f"env {ENV_PREFIX}INDEX"
    layers: list[tuple[str, Mapping[str, Any]]] = [("index", dict(stored or {}))]
    toml_path = Path(location) / SETTINGS_FILE
    if not is_url(location) and toml_path.is_file():
        layers.append((str(toml_path), read_toml(toml_path)))
    env_layer = environment_layer(environ)
    layers += [(f"env {ENV_PREFIX}{k.upper()}", {k: v}) for k, v in env_layer.items()]
    layers.append(("flag", {k: v for k, v in overrides.items() if v is not None}))
    for where, layer in layers:
        for key, raw in layer.items():
            if key == "index" and where != "flag":
                raise ConfigError(f"'index' cannot be set in {where}.")
            values[key] = _coerce(key, raw, where)
            _check_value(key, values[key], where)
            origins[key] = where
    settings = Settings(**values, origins=origins)
    _validate(settings)
    return settings


def cache_root(settings: Settings | None = None) -> Path:
    """The cache folder: the ``cache`` setting, else $XDG_CACHE_HOME/citeline, else ~/.cache/citeline."""
    if settings is not None and settings.cache:
        return Path(settings.cache).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "citeline"


def process_cache_root() -> Path:
    """The cache folder for what a process caches with no index's settings at hand (the English
    word list, optimised ONNX graphs): CITELINE_CACHE, else as cache_root()."""
    configured = os.environ.get(f"{ENV_PREFIX}CACHE")
    return Path(configured).expanduser() if configured else cache_root()


def debug_enabled() -> bool:
    """CITELINE_DEBUG, read without loading an index (the CLI's error handler asks)."""
    raw = os.environ.get(f"{ENV_PREFIX}DEBUG", "")
    return raw.strip().lower() in _TRUE
