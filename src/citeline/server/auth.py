"""Who is calling: the API key of a request (``Authorization: Bearer KEY`` or ``X-API-Key``), its
role, and the per-key rate limit. Anonymous callers exist only with ``--allow-anonymous``:
read-only, documents marked ``public`` only."""

from __future__ import annotations

from collections.abc import Mapping

from fastapi import HTTPException, Request

from citeline.access import AuthenticationError, Caller
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
    return state.kb.keys.authenticate(key)


def throttled_caller(state: ServerState, headers: Mapping[str, str], address: str) -> Caller:
    """``caller_for``, unless ``address`` sent too many wrong keys lately: then 429 with
    Retry-After, whatever key it sends now (a right key must not be a way to test guesses)."""
    sends_key = key_from_headers(headers) is not None
    wait = state.key_failures.wait(address) if sends_key else 0.0
    if wait > 0:
        raise HTTPException(
            status_code=429,
            detail=f"Too many wrong API keys from this address ({state.key_failures.per_minute} per minute "
            f"allowed, server_key_failures); retry in {wait:.0f} s.",
            headers={"Retry-After": str(max(1, round(wait + 0.5)))},
        )
    try:
        return caller_for(state, headers)
    except AuthenticationError:
        if sends_key:
            state.key_failures.failed(address)
        raise


def current_caller(request: Request) -> Caller:
    """The FastAPI dependency of every /v1 route: authenticates, then applies the rate limit."""
    state = state_of(request)
    caller = throttled_caller(state, request.headers, request.client.host if request.client else "-")
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


__all__ = [
    "AuthenticationError",
    "Caller",
    "caller_for",
    "current_caller",
    "key_from_headers",
    "state_of",
    "throttled_caller",
]
