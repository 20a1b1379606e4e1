"""Generators by name: ``make_generator("llamacpp", model="1.5b")``.

Each factory imports its backend only when called, so a missing optional client raises
MissingExtraError (with the pip command) for that backend alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from citeline.answer.generators.base import Generator
from citeline.errors import UnknownBackendError


def _extractive(**options: Any) -> Generator:
    from citeline.answer.extractive import ExtractiveGenerator

    return ExtractiveGenerator(**options)


def _openai(**options: Any) -> Generator:
    from citeline.answer.generators.openai_gen import OpenAIGenerator

    return OpenAIGenerator(**options)


def _anthropic(**options: Any) -> Generator:
    from citeline.answer.generators.anthropic_gen import AnthropicGenerator

    return AnthropicGenerator(**options)


def _llamacpp(**options: Any) -> Generator:
    from citeline.answer.generators.llamacpp_gen import LlamaCppGenerator

    return LlamaCppGenerator(**options)


# ---------------------------------------------------------------------------------------------
# GENERATORS: the registry's entry point. Add a backend by adding a name -> factory entry here
# ---------------------------------------------------------------------------------------------
GENERATORS: dict[str, Callable[..., Generator]] = {
    "extractive": _extractive,
    "openai": _openai,
    "anthropic": _anthropic,
    "llamacpp": _llamacpp,
}


def make_generator(name: str, **options: Any) -> Generator:
    """A generator by registry name; ``options`` go to its constructor."""
    try:
        factory = GENERATORS[name]
    except KeyError:
        raise UnknownBackendError("generator", name, list(GENERATORS)) from None
    return factory(**options)
