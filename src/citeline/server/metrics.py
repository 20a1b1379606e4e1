"""Prometheus metrics: requests and latency per route, pipeline stages, refusals, removed sentences,
documents and chunks. Each app has its own registry (several apps can live in one process)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from citeline.types import Answer

CONTENT_TYPE = CONTENT_TYPE_LATEST
_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "citeline_http_requests",
            "HTTP requests by route, method and status",
            ["route", "method", "status"],
            registry=r,
        )
        self.latency = Histogram(
            "citeline_http_request_seconds",
            "HTTP request latency by route",
            ["route"],
            buckets=_LATENCY,
            registry=r,
        )
        self.stages = Histogram(
            "citeline_stage_seconds",
            "Time per pipeline stage of /v1/ask",
            ["stage"],
            buckets=_LATENCY,
            registry=r,
        )
        self.answers = Counter("citeline_answers", "Answers by outcome", ["outcome"], registry=r)
        self.sentences = Counter(
            "citeline_answer_sentences", "Checked answer sentences", ["state"], registry=r
        )
        self.refusal_rate = Gauge("citeline_refusal_rate", "Share of answers that were refusals", registry=r)
        self.removed_share = Gauge(
            "citeline_removed_sentence_share",
            "Share of checked sentences the claim check removed",
            registry=r,
        )
        self.documents = Gauge("citeline_documents", "Documents in the index", registry=r)
        self.chunks = Gauge("citeline_chunks", "Chunks in the index", registry=r)
        self._answered = self._refused = self._kept = self._removed = 0

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def observe_answer(self, answer: Answer) -> None:
        for stage, ms in answer.timings_ms.items():
            self.stages.labels(stage).observe(ms / 1000.0)
        self.answers.labels("refused" if answer.refused else "answered").inc()
        self._answered += 1
        self._refused += int(answer.refused)
        removed = sum(1 for s in answer.sentences if s.removed)
        kept = len(answer.sentences) - removed
        self.sentences.labels("kept").inc(kept)
        self.sentences.labels("removed").inc(removed)
        self._kept += kept
        self._removed += removed
        self.refusal_rate.set(self._refused / self._answered)
        if self._kept + self._removed:
            self.removed_share.set(self._removed / (self._kept + self._removed))

    def render(self, stats: Callable[[], Mapping[str, Any]]) -> bytes:
        numbers = stats()
        self.documents.set(float(numbers.get("documents", 0)))
        self.chunks.set(float(numbers.get("chunks", 0)))
        return generate_latest(self.registry)
