"""POST /v1/ask (JSON, or Server-Sent Events) and POST /v1/search."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from citeline.access import Caller
from citeline.answer.streaming import ProgressEvent, SentenceEvent, SentenceStream
from citeline.errors import CitelineError
from citeline.filters import Filter
from citeline.server.auth import current_caller, state_of
from citeline.types import Answer

router = APIRouter(prefix="/v1", tags=["answers"])


class Filters(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tags: dict[str, str] = Field(default_factory=dict, description="only documents with all these tags")
    source_prefix: str | None = Field(default=None, max_length=1000)
    formats: list[str] = Field(default_factory=list, max_length=20)
    collections: list[str] = Field(default_factory=list, max_length=50)

    def to_filter(self, caller: Caller) -> Filter:
        return Filter(
            principal=caller.principal,
            tags=dict(self.tags),
            source_prefix=self.source_prefix,
            formats=tuple(self.formats),
            collections=tuple(self.collections),
        )


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, description="the question (max_question_chars applies)")
    stream: bool = Field(
        False, description="answer as Server-Sent Events (same as Accept: text/event-stream)"
    )
    filters: Filters = Field(default_factory=lambda: Filters())


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(10, ge=1, le=100)
    filters: Filters = Field(default_factory=lambda: Filters())


@router.post("/ask", summary="Answer a question with citations (JSON or Server-Sent Events)")
async def ask(body: AskRequest, request: Request, caller: Annotated[Caller, Depends(current_caller)]) -> Any:
    """The same object as `citeline ask --json`. With `"stream": true` (or `Accept:
    text/event-stream`) the answer comes as events: `progress` (passages retrieved, read, the
    generator called, "checking sentence k of n", each with a `message`), `sentence` (each one as
    soon as its claim check kept it, with its citations and its own supporting `quotes`), then
    `removed` (sentences the check removed: never part of the answer), then `answer` (the final
    object), `trace` (its id) and `done`; `error` on failure."""
    state = state_of(request)
    flt = body.filters.to_filter(caller)
    if body.stream or "text/event-stream" in request.headers.get("accept", ""):
        return StreamingResponse(
            _events(request, body.question, flt),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )
    answer = await state.run(state.kb.ask, body.question, flt=flt)
    state.metrics.observe_answer(answer)
    return answer.to_json()


def sse(event: str, data: Any, seq: int) -> bytes:
    return f"id: {seq}\nevent: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


async def _events(request: Request, question: str, flt: Filter) -> AsyncIterator[bytes]:
    state = state_of(request)
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def emit(event: SentenceEvent | ProgressEvent) -> None:
        loop.call_soon_threadsafe(queue.put_nowait, (event.kind, event.to_json()))

    stream = SentenceStream(emit)

    def work() -> Answer:
        answer = state.kb.ask(
            question, flt=flt, on_sentence=stream.on_sentence, on_progress=stream.on_progress
        )
        stream.finish()
        return answer

    future = loop.run_in_executor(state.executor, work)
    future.add_done_callback(lambda _f: queue.put_nowait(("_finished", None)))
    seq = 0
    yield b": citeline answer stream\n\n"
    while True:
        kind, data = await queue.get()
        if kind != "_finished":
            seq += 1
            yield sse(kind, data, seq)
            continue
        try:
            answer = future.result()
        except CitelineError as exc:
            yield sse("error", {"error": {"code": type(exc).__name__, "message": str(exc)}}, seq + 1)
            return
        except Exception as exc:  # the stream is already open: report it as an event
            yield sse("error", {"error": {"code": "internal", "message": type(exc).__name__}}, seq + 1)
            return
        state.metrics.observe_answer(answer)
        yield sse("answer", answer.to_json(), seq + 1)
        yield sse("trace", {"trace_id": answer.trace_id}, seq + 2)
        yield sse("done", {}, seq + 3)
        return


@router.post("/search", summary="Hybrid search: chunks with per-stage scores")
async def search(
    body: SearchRequest, request: Request, caller: Annotated[Caller, Depends(current_caller)]
) -> dict[str, Any]:
    state = state_of(request)
    hits = await state.run(state.kb.search, body.query, flt=body.filters.to_filter(caller), k=body.k)
    return {"query": body.query, "results": [h.to_json() for h in hits]}
