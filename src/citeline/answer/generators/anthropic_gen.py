"""Generator using Anthropic's Messages API through the official ``anthropic`` client.

The model writes free text with ``[n]`` markers, parsed by :mod:`citeline.answer.citations`
(invented numbers are dropped and recorded). Configuration: the ``generator_model`` setting (or
``anthropic:MODEL``), ``generator_base_url`` for a compatible endpoint; the SDK reads
``ANTHROPIC_API_KEY`` itself. ``temperature`` is sent only when
given (recent Messages API versions no longer take it for every model).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from citeline.answer import prompt as contract
from citeline.answer.citations import StreamingCitationFilter
from citeline.chat import Message
from citeline.errors import GeneratorError, MissingExtraError
from citeline.query.analysis import Query
from citeline.settings import Settings
from citeline.types import REFUSAL, Draft, Passage

if TYPE_CHECKING:
    from citeline.build_context import BuildContext

DEFAULT_MODEL = "claude-haiku-4-5"


def _import_anthropic() -> Any:
    try:
        import anthropic
    except ImportError as exc:
        raise MissingExtraError("The anthropic generator", "anthropic", "anthropic") from exc
    return anthropic


class AnthropicGenerator:
    """Answers with a Claude model; free text with citation markers."""

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 1024,
        temperature: float | None = None,
        context_tokens: int = 32000,
        timeout: float = 120.0,
        max_retries: int = 2,
        client: Any = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = base_url or None
        self.max_tokens = max_tokens
        self.temperature = temperature
        #: prompt budget in tokens
        self.context_tokens = context_tokens
        if client is not None:
            self._client = client
            return
        anthropic = _import_anthropic()
        self._client = anthropic.Anthropic(  # the SDK reads ANTHROPIC_API_KEY when no key is passed
            api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=max_retries
        )
        if (
            getattr(self._client, "api_key", None) is None
            and getattr(self._client, "auth_token", None) is None
        ):
            raise GeneratorError("The anthropic generator needs an API key: set ANTHROPIC_API_KEY.")

    def _kwargs(self, question: Query | str, passages: Sequence[Passage]) -> dict[str, Any]:
        system, user = contract.build_messages(question, passages, structured=False)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system["content"],
            "messages": [{"role": "user", "content": user["content"]}],
        }
        if self.temperature is not None:
            kwargs["extra_body"] = {"temperature": self.temperature}
        return kwargs

    def _fail(self, exc: Exception) -> GeneratorError:
        return GeneratorError(f"The anthropic generator failed (model {self.model}): {exc}")

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        if not passages:
            return Draft(sentences=(), refused=True, raw="")
        anthropic = _import_anthropic()
        try:
            message = self._client.messages.create(**self._kwargs(question, passages))
        except anthropic.AnthropicError as exc:
            raise self._fail(exc) from exc
        text = "".join(
            getattr(block, "text", "")
            for block in getattr(message, "content", None) or []
            if getattr(block, "type", None) == "text"
        )
        usage = getattr(message, "usage", None)
        return contract.parse_free_text(
            text,
            len(passages),
            prompt_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        )

    def complete(self, messages: Sequence[Message], max_tokens: int = 256) -> str:
        """ChatModel: a plain completion (the LLM judge, the LLM reranker, query expansion)."""
        anthropic = _import_anthropic()
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [
                {"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"
            ],
        }
        if system:
            kwargs["system"] = system
        try:
            message = self._client.messages.create(**kwargs)
        except anthropic.AnthropicError as exc:
            raise self._fail(exc) from exc
        return "".join(
            getattr(block, "text", "")
            for block in getattr(message, "content", None) or []
            if getattr(block, "type", None) == "text"
        )

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield answer text as it arrives; never half a ``[n]`` marker, never an invalid number."""
        if not passages:
            yield REFUSAL
            return
        anthropic = _import_anthropic()
        filt = StreamingCitationFilter(len(passages))
        try:
            with self._client.messages.stream(**self._kwargs(question, passages)) as events:
                for delta in events.text_stream:
                    out = filt.feed(delta)
                    if out:
                        yield out
        except anthropic.AnthropicError as exc:
            raise self._fail(exc) from exc
        rest = filt.flush()
        if rest:
            yield rest


def anthropic_factory(context: BuildContext | None, argument: str | None) -> AnthropicGenerator:
    """``anthropic`` or ``anthropic:MODEL``."""
    settings = context.settings if context is not None else Settings()
    return AnthropicGenerator(
        argument or settings.generator_model or None,
        base_url=settings.generator_base_url or None,
        timeout=settings.generator_timeout_s,
        max_retries=settings.generator_retries,
    )
