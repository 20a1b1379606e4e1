"""A circuit breaker for the dense side of retrieval (query embedding + vector search).

The keyword side (FTS5 in SQLite) is the part that must always answer; the dense side may be a
model or an engine that fails or slows down. Each query runs the dense side on a worker thread
with a latency budget (``dense_timeout_ms``): when it fails or overruns, the query goes on with
keyword results only and says so (``Retrieval.degraded``, the trace's ``degraded``, the answer's
``degraded``). After ``breaker_failures`` failures or overruns in a row the circuit opens: for
``breaker_cooldown_s`` no query waits for the dense side at all; then one query tries it again
(half-open) and a success closes the circuit.

A call that overran its budget goes on running on its thread (a thread cannot be stopped). At
interpreter exit those threads are waited for, up to ``EXIT_WAIT_S``: a daemon thread still in
onnxruntime (importing it, loading the model, embedding the query) while the interpreter finalizes
ends in C++'s std::terminate, and the process aborts after its answer was printed ("terminate
called without an active exception", exit status 134; tests/retrieval/test_dense_exit.py).
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

#: how long interpreter exit waits for dense calls still running (an embedding, a vector search);
#: one that runs longer is left to end with the process, as before
EXIT_WAIT_S = 10.0
_running: set[threading.Thread] = set()
_running_lock = threading.Lock()
_exit_hooked = False


def _wait_for_running_calls(timeout_s: float | None = None) -> int:
    """Wait for the dense calls still running (at exit, before finalization; see the module
    docstring); how many were still running when it stopped waiting."""
    deadline = time.monotonic() + (EXIT_WAIT_S if timeout_s is None else timeout_s)
    with _running_lock:
        threads = list(_running)
    for thread in threads:
        thread.join(max(deadline - time.monotonic(), 0.0))
    return sum(t.is_alive() for t in threads)


def _track(thread: threading.Thread) -> None:
    global _exit_hooked
    with _running_lock:
        _running.difference_update([t for t in _running if not t.is_alive()])  # ended ones
        _running.add(thread)
        if not _exit_hooked:
            atexit.register(_wait_for_running_calls)
            _exit_hooked = True


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """The dense side's result, or None with the reason retrieval went on without it."""

    value: T | None
    degraded: str | None = None


class CircuitBreaker:
    def __init__(
        self,
        timeout_ms: int = 5000,
        failures: int = 3,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        workers: int = 8,
    ) -> None:
        self.timeout_s = timeout_ms / 1000.0 if timeout_ms > 0 else None
        self.failures_to_open = failures
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._lock = threading.Lock()
        self._failures = 0
        self._opened_at: float | None = None
        self._trial = False  # a half-open trial is running
        self.last_failure = ""
        #: dense calls that may run at once (a call that overran its budget still holds its slot)
        self._slots = threading.BoundedSemaphore(workers)
        #: counters for tests and metrics
        self.calls = self.degraded_calls = 0

    @property
    def state(self) -> str:
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        if self.clock() - self._opened_at >= self.cooldown_s:
            return "half-open"
        return "open"

    def _start(self, fn: Callable[[], T]) -> Future[T] | None:
        """Run ``fn`` on a daemon thread (a call that never returns holds the process at exit for
        EXIT_WAIT_S at most); None when every slot is taken by calls that have not returned."""
        if not self._slots.acquire(blocking=False):
            return None
        done: Future[T] = Future()

        def run() -> None:
            try:
                done.set_result(fn())
            except BaseException as exc:
                done.set_exception(exc)
            finally:
                # still tracked: exit joins it until the thread has truly ended (one that took
                # itself out here could still be tearing down when the interpreter finalized:
                # a rare segfault, 2 of 120 `citeline search` runs); _track drops ended ones
                self._slots.release()

        thread = threading.Thread(target=run, name="citeline-dense", daemon=True)
        thread.start()
        _track(thread)  # after start: join() refuses a thread not started; a finished one returns at once
        return done

    def submit(self, fn: Callable[[], T]) -> Future[T] | Outcome[T]:
        """Start the dense side (or, with the circuit open, an Outcome saying why not)."""
        with self._lock:
            self.calls += 1
            state = self._state()
            if state == "open" or (state == "half-open" and self._trial):
                self.degraded_calls += 1
                assert self._opened_at is not None
                left = self.cooldown_s - (self.clock() - self._opened_at)
                return Outcome(
                    None,
                    f"dense retrieval off for {max(left, 0):.0f} s more after {self.failures_to_open} "
                    f"failures in a row (circuit open; last: {self.last_failure})",
                )
            if state == "half-open":
                self._trial = True
        if self.timeout_s is None:  # no budget: run it here, failures still count
            done: Future[T] = Future()
            try:
                done.set_result(fn())
            except Exception as exc:
                done.set_exception(exc)
            return done
        started = self._start(fn)
        if started is None:
            return self._failed("dense retrieval is busy: earlier calls have not returned")
        return started

    def result(self, started: Future[T] | Outcome[T], started_at: float) -> Outcome[T]:
        """Wait for the dense side within what is left of the budget since ``started_at``."""
        if isinstance(started, Outcome):
            return started
        try:
            if self.timeout_s is None:
                value = started.result()
            else:
                left = max(self.timeout_s - (time.perf_counter() - started_at), 0.0)
                value = started.result(timeout=left)
        except FutureTimeout:
            assert self.timeout_s is not None
            return self._failed(
                f"dense retrieval took longer than {self.timeout_s * 1000:.0f} ms (dense_timeout_ms)"
            )
        except Exception as exc:  # the dense side is optional: any failure degrades, never fails
            return self._failed(f"dense retrieval failed: {type(exc).__name__}: {str(exc)[:200]}")
        with self._lock:
            self._failures = 0
            self._opened_at = None
            self._trial = False
        return Outcome(value)

    def _failed(self, reason: str) -> Outcome[T]:
        with self._lock:
            self.degraded_calls += 1
            self._failures += 1
            self.last_failure = reason
            if self._trial or self._failures >= self.failures_to_open:
                self._opened_at = self.clock()
            self._trial = False
        return Outcome(None, reason)
