"""Generator for any OpenAI-compatible chat completions endpoint (OpenAI, vLLM, llama.cpp server...).

Configuration comes from the settings ``generator_base_url`` (default: OpenAI's API) and
``generator_model``; the SDK reads ``OPENAI_API_KEY`` itself. With ``structured=True`` (the
default) the reply is constrained by ``response_format={"type": "json_schema", ...}`` to
:func:`~citeline.answer.prompt.answer_schema`; otherwise the model writes free text with ``[n]``
markers. Sampling uses temperature 0 and a fixed seed.
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

DEFAULT_MODEL = "gpt-4o-mini"


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise MissingExtraError("The openai generator", "openai", "openai") from exc
    return openai


class OpenAIGenerator:
    """Answers through an OpenAI-compatible ``/chat/completions`` endpoint."""

    name = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        structured: bool = True,
        temperature: float = 0.0,
        seed: int | None = 42,
        max_tokens: int = 1024,
        context_tokens: int = 16000,
        timeout: float = 120.0,
        max_retries: int = 2,
        extra_body: dict[str, Any] | None = None,
        client: Any = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self.base_url = base_url or None
        self.structured = structured
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        #: prompt budget in tokens
        self.context_tokens = context_tokens
        self.extra_body = dict(extra_body or {})
        if client is not None:
            self._client = client
            return
        openai = _import_openai()
        try:  # the SDK reads OPENAI_API_KEY itself when no key is passed
            self._client = openai.OpenAI(
                api_key=api_key, base_url=self.base_url, timeout=timeout, max_retries=max_retries
            )
        except openai.OpenAIError as exc:
            where = f" at {self.base_url}" if self.base_url else ""
            raise GeneratorError(
                f"The openai generator needs an API key for the endpoint{where}: set OPENAI_API_KEY "
                "(any non-empty value for a local server that does not check keys)."
            ) from exc

    def _kwargs(self, question: Query | str, passages: Sequence[Passage], stream: bool) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": contract.build_messages(question, passages, structured=self.structured),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.structured:
            kwargs["response_format"] = contract.response_format(len(passages))
        if stream:
            kwargs["stream"] = True
            kwargs["stream_options"] = {"include_usage": True}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def _fail(self, exc: Exception) -> GeneratorError:
        where = self.base_url or "the OpenAI API"
        return GeneratorError(f"The openai generator failed calling {where} (model {self.model}): {exc}")

    def _garbage(self, exc: Exception) -> GeneratorError:
        where = self.base_url or "the OpenAI API"
        return GeneratorError(
            f"The openai generator got a reply it cannot read from {where} (model {self.model}): "
            f"{type(exc).__name__}: {str(exc)[:300]}"
        )

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        if not passages:
            return Draft(sentences=(), refused=True, raw="")
        openai = _import_openai()
        try:
            response = self._client.chat.completions.create(**self._kwargs(question, passages, False))
        except openai.OpenAIError as exc:
            raise self._fail(exc) from exc
        except Exception as exc:  # a reply the SDK could not read (not JSON, cut off)
            raise self._garbage(exc) from exc
        try:
            content = response.choices[0].message.content or ""
            if not isinstance(content, str):
                raise TypeError(f"message content is {type(content).__name__}, not text")
        except (AttributeError, IndexError, TypeError) as exc:
            raise GeneratorError(
                f"The openai generator got an unexpected reply from {self.base_url or 'OpenAI'}: "
                f"{response!r:.300}"
            ) from exc
        usage = getattr(response, "usage", None)
        tokens = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        if self.structured:
            return contract.parse_structured(content, len(passages), **tokens)
        return contract.parse_free_text(content, len(passages), **tokens)

    def complete(self, messages: Sequence[Message], max_tokens: int = 256) -> str:
        """ChatModel: a plain completion (the LLM judge, the LLM reranker, query expansion)."""
        openai = _import_openai()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": 0.0,
            "max_tokens": max_tokens,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        try:
            response = self._client.chat.completions.create(**kwargs)
            return str(response.choices[0].message.content or "")
        except openai.OpenAIError as exc:
            raise self._fail(exc) from exc
        except Exception as exc:
            raise self._garbage(exc) from exc

    def _deltas(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        openai = _import_openai()
        try:
            events = self._client.chat.completions.create(**self._kwargs(question, passages, True))
            try:
                for event in events:
                    for choice in getattr(event, "choices", None) or []:
                        delta = getattr(choice.delta, "content", None)
                        if delta:
                            yield delta
            finally:
                close = getattr(events, "close", None)
                if close is not None:
                    close()
        except openai.OpenAIError as exc:
            raise self._fail(exc) from exc
        except GeneratorError:
            raise
        except Exception as exc:
            raise self._garbage(exc) from exc

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield answer text as it arrives; never half a ``[n]`` marker, never an invalid number.

        Structured replies are yielded sentence by sentence (``text [n].``), and their concatenation
        equals ``render_draft(generate(...))`` for the same reply.
        """
        if not passages:
            yield REFUSAL
            return
        if self.structured:
            yield from contract.structured_text_stream(self._deltas(question, passages), len(passages))
            return
        filt = StreamingCitationFilter(len(passages))
        for delta in self._deltas(question, passages):
            out = filt.feed(delta)
            if out:
                yield out
        rest = filt.flush()
        if rest:
            yield rest


def openai_factory(context: BuildContext | None, argument: str | None) -> OpenAIGenerator:
    """``openai`` or ``openai:MODEL``; the endpoint is ``generator_base_url`` (else OpenAI's)."""
    settings = context.settings if context is not None else Settings()
    return OpenAIGenerator(
        argument or settings.generator_model or None,
        base_url=settings.generator_base_url or None,
        timeout=settings.generator_timeout_s,
        max_retries=settings.generator_retries,
    )
