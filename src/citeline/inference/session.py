"""An onnxruntime session on the CPU, for every ONNX model citeline runs (the embedder, the
reader and claim checker's cross-encoder): threads, quiet logging, and graph optimisation once
the work pays for it, from a graph saved in the cache when there is one (optimized.py)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


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
            import shutil

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
