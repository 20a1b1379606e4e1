"""Generator running a local GGUF model in-process with xllamacpp (llama.cpp), schema-constrained.

No network port is opened. xllamacpp's ``Server`` always starts an HTTP listener next to the
in-process API (by default on 127.0.0.1, a random port, no API key). This generator binds that
listener to a Unix domain socket inside a fresh private temporary directory (mode 0700), so no
TCP port exists at all and only this user can reach the socket file; it also sets a random API
key, so even a request through that socket without the key is refused (401). Requests from this
process go through the direct-call methods (``handle_chat_completions``), which need no socket.

Sampling is greedy (temperature 0) with a fixed seed, so an answer is reproducible on one
machine and one build. The model runs on as many threads as the process has CPUs
(``CITELINE_LLM_THREADS`` overrides), with OpenMP's passive wait policy (see below).
"""

from __future__ import annotations

import os
import queue
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citeline.answer import prompt as contract
from citeline.answer.citations import StreamingCitationFilter
from citeline.answer.generators import local_models
from citeline.chat import Message
from citeline.errors import GeneratorError, MissingExtraError
from citeline.query.analysis import Query
from citeline.settings import Settings
from citeline.types import REFUSAL, Draft, Passage

if TYPE_CHECKING:
    from citeline.build_context import BuildContext


def _import_xllamacpp() -> Any:
    # llama.cpp's CPU backend uses OpenMP. Its default ACTIVE wait policy spins at every barrier,
    # which collapses generation (measured 0.8 vs 5.5 tokens/s for the 0.5B model on 2 threads)
    # when another process competes for the cores, as on a shared 2-core CI runner. PASSIVE
    # costs little on an idle machine. It must be set before the OpenMP runtime loads; an
    # explicit setting by the user wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError as exc:
        raise MissingExtraError("The llamacpp generator", "xllamacpp", "llamacpp") from exc
    return xllamacpp


def available_cpus() -> int:
    """CPUs this process may run on (the ``llm_threads`` setting overrides it for the model)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class LlamaCppGenerator:
    """Answers with a local GGUF model; the reply is constrained to :func:`answer_schema`.

    ``model`` names a packaged local model ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", or the
    aliases "0.5b" / "1.5b"), assembled on first use by :mod:`local_models`; ``model_path``
    points at any other GGUF file instead. The model loads on first use (or :meth:`load`).
    """

    name = "llamacpp"

    def __init__(
        self,
        model: str = local_models.DEFAULT_MODEL,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int = 8192,
        max_tokens: int = 512,
        n_threads: int | None = None,
        temperature: float = 0.0,
        seed: int = 42,
        structured: bool = True,
        verbosity: int = 0,
        model_cache: Path | None = None,
    ) -> None:
        _import_xllamacpp()  # fail now, with the install hint, rather than at the first question
        self.model = model
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.n_threads = n_threads or available_cpus()
        self.temperature = temperature
        self.seed = seed
        self.structured = structured
        self.verbosity = verbosity
        self.model_cache = model_cache
        #: prompt budget: the context minus room for the answer
        self.context_tokens = max(256, n_ctx - max_tokens)
        #: seconds the last load took (0 until loaded)
        self.load_seconds = 0.0
        self._server: Any = None
        self._socket_dir: tempfile.TemporaryDirectory[str] | None = None
        self._api_key = secrets.token_urlsafe(32)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    @property
    def socket_path(self) -> str | None:
        """The Unix socket xllamacpp's HTTP listener is bound to (None until loaded)."""
        if self._socket_dir is None:
            return None
        return os.path.join(self._socket_dir.name, "llm.sock")

    def load(self) -> None:
        """Load the model now (otherwise it loads on the first question)."""
        with self._lock:
            if self._server is not None:
                return
            xllamacpp = _import_xllamacpp()
            path = self.model_path or local_models.model_path(self.model, self.model_cache)
            if not Path(path).is_file():
                raise GeneratorError(f"Model file {path} does not exist.")
            self._socket_dir = tempfile.TemporaryDirectory(prefix="citeline-llm-")
            os.chmod(self._socket_dir.name, 0o700)
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = self.n_ctx
            params.n_parallel = 1
            params.n_predict = self.max_tokens
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads
            params.n_threads_http = 1
            params.verbosity = self.verbosity
            # the listener xllamacpp always starts: a private Unix socket, and a key it requires
            params.hostnames = [self.socket_path]
            params.api_keys = [self._api_key]
            params.endpoint_metrics = False
            params.endpoint_slots = False
            params.endpoint_props = False
            start = time.perf_counter()
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:
                self._socket_dir.cleanup()
                self._socket_dir = None
                raise GeneratorError(f"Could not load the model {path}: {exc}") from exc
            self.load_seconds = time.perf_counter() - start

    def close(self) -> None:
        """Free the model and remove the socket directory."""
        with self._lock:
            server, self._server = self._server, None
            del server  # the Server's destructor stops its threads
            if self._socket_dir is not None:
                self._socket_dir.cleanup()
                self._socket_dir = None

    def __enter__(self) -> LlamaCppGenerator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_loaded(self) -> Any:
        if self._server is None:
            self.load()
        return self._server

    # ------------------------------------------------------------------ requests

    def _request(self, question: Query | str, passages: Sequence[Passage], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "messages": contract.build_messages(question, passages, structured=self.structured),
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "stream": stream,
        }
        if self.structured:
            body["response_format"] = contract.response_format(len(passages))
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def complete(self, messages: Sequence[Message], max_tokens: int = 256) -> str:
        """ChatModel: a plain completion (the LLM judge, the LLM reranker, query expansion)."""
        server = self._ensure_loaded()
        body = {
            "messages": [dict(m) for m in messages],
            "temperature": 0.0,
            "seed": self.seed,
            "max_tokens": max_tokens,
        }
        result = server.handle_chat_completions(body)
        try:
            return str(result["choices"][0]["message"].get("content") or "")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise GeneratorError(f"Unexpected reply from the local model: {result!r:.300}") from exc

    def generate(self, question: Query | str, passages: Sequence[Passage]) -> Draft:
        if not passages:
            return Draft(sentences=(), refused=True, raw="")
        server = self._ensure_loaded()
        try:
            result = server.handle_chat_completions(self._request(question, passages, stream=False))
        except (ValueError, RuntimeError) as exc:
            raise GeneratorError(f"The local model failed: {exc}") from exc
        if not isinstance(result, dict) or "error" in result:
            detail = result.get("error") if isinstance(result, dict) else result
            raise GeneratorError(f"The local model failed: {detail}")
        try:
            content = result["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise GeneratorError(f"Unexpected reply from the local model: {result!r:.300}") from exc
        usage = result.get("usage") or {}
        tokens = {
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
        }
        if self.structured:
            return contract.parse_structured(content, len(passages), **tokens)
        return contract.parse_free_text(content, len(passages), **tokens)

    def _raw_stream(self, body: dict[str, Any]) -> Iterator[str]:
        """Content deltas of a streamed completion (the direct call blocks, so it runs in a thread)."""
        server = self._ensure_loaded()
        chunks: queue.Queue[tuple[str, Any]] = queue.Queue()
        stop = threading.Event()

        def on_chunk(chunk: Any) -> bool:
            chunks.put(("chunk", chunk))
            return stop.is_set()  # True asks llama.cpp to stop generating

        def run() -> None:
            try:
                server.handle_chat_completions(body, on_chunk)
            except Exception as exc:  # handed to the consumer below
                chunks.put(("error", exc))
            finally:
                chunks.put(("done", None))

        worker = threading.Thread(target=run, name="citeline-llamacpp-stream", daemon=True)
        worker.start()
        try:
            while True:
                kind, item = chunks.get()
                if kind == "done":
                    break
                if kind == "error":
                    raise GeneratorError(f"The local model failed: {item}") from item
                if not isinstance(item, dict) or "error" in item:
                    raise GeneratorError(f"The local model failed: {item!r:.300}")
                for choice in item.get("choices") or []:
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        yield delta
        finally:
            stop.set()
            worker.join()

    def stream(self, question: Query | str, passages: Sequence[Passage]) -> Iterator[str]:
        """Yield the answer text as it is produced; never half a ``[n]`` marker.

        With structured output, each sentence is yielded (as ``text [n].``) once its JSON object
        is complete; the concatenation equals ``render_draft(generate(...))`` for the same reply.
        """
        if not passages:
            yield REFUSAL
            return
        body = self._request(question, passages, stream=True)
        if self.structured:
            yield from contract.structured_text_stream(self._raw_stream(body), len(passages))
            return
        filt = StreamingCitationFilter(len(passages))
        for delta in self._raw_stream(body):
            out = filt.feed(delta)
            if out:
                yield out
        rest = filt.flush()
        if rest:
            yield rest


def llamacpp_factory(context: BuildContext | None, argument: str | None) -> LlamaCppGenerator:
    """``llamacpp`` or ``llamacpp:MODEL``: a packaged model name (0.5b, 1.5b) or a .gguf path;
    without an argument, the ``generator_model`` setting, else the packaged 0.5B."""
    settings = context.settings if context is not None else Settings()
    model = argument or settings.generator_model or local_models.DEFAULT_MODEL
    options: dict[str, Any] = {
        "n_threads": settings.llm_threads or None,
        "model_cache": local_models.cache_dir(settings),
    }
    if model.endswith(".gguf"):
        return LlamaCppGenerator(model_path=Path(model).expanduser(), **options)
    return LlamaCppGenerator(model, **options)
