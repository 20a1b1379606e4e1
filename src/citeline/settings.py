"""One typed settings object: defaults < the index's citeline.toml < CITELINE_* env < explicit overrides."""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from citeline.chunking import UNSTRUCTURED_MODES
from citeline.errors import ConfigError
from citeline.retrieval.rewrite import MODES as EXPANSION_MODES

SETTINGS_FILE = "citeline.toml"
DEFAULT_INDEX = ".citeline"


@dataclass(frozen=True)
class Settings:
    # where the index lives
    index: str = DEFAULT_INDEX
    # ingestion
    embedder: str = "minilm-int8"
    chunk_tokens: int = 200
    overlap_tokens: int = 40
    # PDFs and text files with no headings at all: "semantic" (cut where the topic shifts) or
    # "windows" (sentence windows); benchmarks/bench_semantic_chunking.py chose semantic
    chunk_unstructured: str = "semantic"
    max_file_mb: float = 64.0
    max_text_chars: int = 5_000_000
    # retrieval
    top_k: int = 30
    fusion: str = "rrf"  # "rrf" or "convex"
    rrf_k: int = 60
    alpha: float = 0.5  # convex combination weight of the dense side
    reranker: str = "none"
    # LLM query expansion: "none", "multi" (rewrites), "hyde" (vague questions only) or "multi+hyde"
    query_expansion: str = "none"
    rerank_depth: int = 30
    mmr_lambda: float = 0.7
    context_passages: int = 5
    # answering
    generator: str = "extractive"
    # llamacpp: a packaged model name ("0.5b", "1.5b") or a path to a .gguf file;
    # openai/anthropic: the model name (else CITELINE_OPENAI_MODEL or the backend default)
    generator_model: str = ""
    generator_base_url: str = ""  # openai: any OpenAI-compatible endpoint (else CITELINE_OPENAI_BASE_URL)
    verifier: str = (
        "heuristic"  # "heuristic", "nli:DIR" (a local NLI cross-encoder) or "llm" (the generator judges)
    )
    refusal_threshold: float = 0.46
    min_answer_score: float = 0.35  # extractive: the best sentence must score at least this
    max_answer_sentences: int = 3
    max_question_chars: int = 2000
    unsupported: str = "remove"  # "remove" or "mark"
    trace: bool = True

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_toml(self) -> str:
        """A commented template: defaults stay defaults (and can improve) until a line is uncommented."""
        lines = [
            "# citeline settings for this index. Uncomment a line to change it;",
            "# CITELINE_* environment variables and command-line flags override this file.",
        ]
        for f in fields(self):
            if f.name == "index":
                continue
            value = getattr(self, f.name)
            if isinstance(value, bool):
                lines.append(f"# {f.name} = {'true' if value else 'false'}")
            elif isinstance(value, int | float):
                lines.append(f"# {f.name} = {value}")
            else:
                lines.append(f'# {f.name} = "{value}"')
        return "\n".join(lines) + "\n"


def _coerce(name: str, raw: Any, kind: type) -> Any:
    try:
        if kind is bool:
            if isinstance(raw, bool):
                return raw
            return str(raw).strip().lower() in ("1", "true", "yes", "on")
        return kind(raw)
    except (TypeError, ValueError) as exc:
        label = {"int": "whole number", "float": "number", "bool": "true or false"}.get(
            kind.__name__, "string"
        )
        raise ConfigError(f"Setting '{name}' must be a {label}, got {raw!r}.") from exc


_TYPES: dict[str, type] = {
    f.name: {"int": int, "float": float, "bool": bool, "str": str}[str(f.type)] for f in fields(Settings)
}


def load_settings(index: str | os.PathLike[str] | None = None, **overrides: Any) -> Settings:
    """Resolve settings for an index folder. ``overrides`` are CLI flags or API arguments (None = unset)."""
    env = os.environ
    folder = Path(index or env.get("CITELINE_INDEX") or DEFAULT_INDEX)
    values: dict[str, Any] = {"index": str(folder)}
    toml_path = folder / SETTINGS_FILE
    if toml_path.is_file():
        try:
            data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{toml_path}: invalid TOML ({exc}). Fix or delete the file.") from exc
        for key, raw in data.items():
            if key in _TYPES and key != "index":
                values[key] = _coerce(key, raw, _TYPES[key])
    for key, kind in _TYPES.items():
        raw = env.get(f"CITELINE_{key.upper()}")
        if raw is not None and key != "index":
            values[key] = _coerce(key, raw, kind)
    for key, raw in overrides.items():
        if raw is None:
            continue
        if key not in _TYPES:
            raise ConfigError(f"Unknown setting '{key}'.")
        values[key] = _coerce(key, raw, _TYPES[key])
    settings = Settings(**values)
    _validate(settings)
    return settings


def _validate(s: Settings) -> None:
    if s.fusion not in ("rrf", "convex"):
        raise ConfigError(f"fusion must be 'rrf' or 'convex', got '{s.fusion}'.")
    if s.unsupported not in ("remove", "mark"):
        raise ConfigError(f"unsupported must be 'remove' or 'mark', got '{s.unsupported}'.")
    if not 0 <= s.alpha <= 1:
        raise ConfigError(f"alpha must be within [0, 1], got {s.alpha}.")
    if s.top_k < 1 or s.context_passages < 1 or s.chunk_tokens < 16:
        raise ConfigError("top_k and context_passages must be at least 1, chunk_tokens at least 16.")
    if s.query_expansion not in EXPANSION_MODES:
        raise ConfigError(f"query_expansion must be one of {', '.join(EXPANSION_MODES)}.")
    if s.chunk_unstructured not in UNSTRUCTURED_MODES:
        raise ConfigError(f"chunk_unstructured must be one of {', '.join(UNSTRUCTURED_MODES)}.")
