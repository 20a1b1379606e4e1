"""Who is calling: the API key of a request (``Authorization: Bearer KEY`` or ``X-API-Key``), its
role, and the per-key rate limit. Anonymous callers exist only with ``--allow-anonymous``:
read-only, documents marked ``public`` only."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import HTTPException, Request

from citeline.access import AuthenticationError, Caller, authenticate
from citeline.server.state import ServerState


def state_of(request: Request) -> ServerState:
    state: ServerState = request.app.state.citeline
    return state


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return headers.get("x-api-key") or None


def caller_for(state: ServerState, headers: Mapping[str, str]) -> Caller:
    key = key_from_headers(headers)
    if key is None and state.allow_anonymous:
        return Caller.anonymous()
    return authenticate(state.kb.store, key)


def current_caller(request: Request) -> Caller:
    """The FastAPI dependency of every /v1 route: authenticates, then applies the rate limit."""
    state = state_of(request)
    caller = caller_for(state, request.headers)
    who = caller.key_id or f"anonymous:{request.client.host if request.client else '-'}"
    wait = state.limiter.retry_after(who)
    if wait > 0:
        raise HTTPException(
            status_code=429,
            detail=f"Rate limit of {state.limiter.per_minute} requests per minute reached for this key; "
            f"retry in {wait:.1f} s.",
            headers={"Retry-After": str(max(1, round(wait + 0.5)))},
        )
    request.state.caller = caller
    return caller


__all__ = ["AuthenticationError", "Caller", "caller_for", "current_caller", "key_from_headers", "state_of"]
