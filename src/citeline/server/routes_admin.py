"""Traces, health, metrics, the caller's identity and (admins) API keys."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from citeline.access import Caller, key_json, parse_expiry
from citeline.filters import Principal
from citeline.server.auth import current_caller, state_of
from citeline.server.metrics import CONTENT_TYPE

router = APIRouter(tags=["admin"])
CallerDep = Annotated[Caller, Depends(current_caller)]


@router.get("/healthz", summary="Liveness: the index opens and answers a query")
async def healthz(request: Request) -> dict[str, Any]:
    """No key needed, so it says nothing about the index's content (not even how many documents
    it holds: a count is something an anonymous caller may not read)."""
    state = state_of(request)
    await state.run(state.kb.embedder_info)
    return {"status": "ok"}


@router.get("/metrics", summary="Prometheus metrics (admin keys)")
async def metrics(request: Request, caller: CallerDep) -> Response:
    state = state_of(request)
    caller.require("admin", "Reading /metrics")
    body = await state.run(state.metrics.render, state.kb.stats)
    return Response(body, media_type=CONTENT_TYPE)


@router.get("/v1/me", summary="Who this key is")
async def me(caller: CallerDep) -> dict[str, Any]:
    return {
        "user": caller.user,
        "groups": list(caller.principal.groups),
        "role": caller.role,
        "label": caller.principal.label,
        "anonymous": caller.key_id is None,
    }


@router.get("/v1/traces", summary="This key's recent traces (every trace for admins)")
async def list_traces(request: Request, caller: CallerDep, failed: bool = False) -> dict[str, Any]:
    state = state_of(request)
    if caller.key_id is None:  # anonymous callers share one label: they list no traces
        return {"traces": []}
    who = Principal.local_admin() if caller.can("admin") else caller.principal
    rows = await state.run(state.kb.traces, who, failed, 50)
    return {"traces": [r.to_json() for r in rows]}


@router.get("/v1/traces/{trace_id}", summary="How one answer was made (its owner or an admin)")
async def get_trace(trace_id: str, request: Request, caller: CallerDep) -> dict[str, Any]:
    """Admins open every trace, but like every key they see passages, quotes and text only from
    documents they may read (the rest is left out and the trace says `"redacted": true`)."""
    state = state_of(request)
    if caller.key_id is None:  # anonymous callers share one label: they read no traces
        raise HTTPException(404, f"No trace '{trace_id}' for this caller.")
    trace = await state.run(state.kb.trace, trace_id, caller.principal, any_owner=caller.can("admin"))
    if trace is None:
        raise HTTPException(404, f"No trace '{trace_id}' for this caller.")
    return trace.to_json()


class KeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str = Field(min_length=1, max_length=64)
    groups: list[str] = Field(default_factory=list, max_length=50)
    role: Literal["reader", "writer", "admin"] = "reader"
    label: str = Field("", max_length=200)
    expires: str | None = Field(
        None, max_length=40, description="when the key stops working: 90m, 12h, 30d, 2w or a UTC date"
    )


@router.get("/v1/keys", summary="API keys (admins): never the keys themselves")
async def list_keys(request: Request, caller: CallerDep) -> dict[str, Any]:
    caller.require("admin", "Managing keys")
    state = state_of(request)
    keys = await state.run(state.kb.keys.records)
    return {"keys": [key_json(k) for k in keys]}


@router.post("/v1/keys", status_code=201, summary="Create an API key (admins); the key is shown once")
async def new_key(body: KeyRequest, request: Request, caller: CallerDep) -> dict[str, Any]:
    caller.require("admin", "Managing keys")
    state = state_of(request)
    expires_at = None if body.expires is None else parse_expiry(body.expires)
    key, record = await state.run(
        state.write,
        state.writer.keys.create,
        body.user,
        tuple(body.groups),
        body.role,
        label=body.label,
        expires_at=expires_at,
    )
    return {"key": key, **key_json(record)}


@router.delete("/v1/keys/{key_id}", status_code=204, summary="Revoke an API key (admins)")
async def revoke_key(key_id: str, request: Request, caller: CallerDep) -> Response:
    caller.require("admin", "Managing keys")
    state = state_of(request)
    if not await state.run(state.write, state.writer.keys.revoke, key_id):
        raise HTTPException(404, f"No active key '{key_id}'.")
    return Response(status_code=204)
