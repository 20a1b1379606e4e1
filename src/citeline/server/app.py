"""The ASGI app: ``create_app(kb)`` wires routes, limits, errors, metrics, the web page and /mcp.

Served by uvicorn (``citeline serve``). Every /v1 route needs an API key (or ``--allow-anonymous``
for public documents); request bodies are size-limited before they are read; CORS is off unless
``server_cors_origins`` names origins.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from citeline.access import AuthenticationError, PermissionDeniedError
from citeline.errors import (
    CitelineError,
    DocumentNotFoundError,
    GeneratorError,
    IndexUnavailableError,
    InvalidQuestionError,
    ParseError,
    UnsupportedFormatError,
)
from citeline.kb import KnowledgeBase
from citeline.server.auth import caller_for, throttled_caller
from citeline.server.headers import SecurityHeaders, documentation_pages
from citeline.server.state import ServerState
from citeline.server.uploads import UploadError

STATIC = resources.files("citeline.server") / "static"
#: uploads carry the file plus multipart framing
_MULTIPART_SLACK = 64 * 1024


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    return {"error": {"status": status, "code": code, "message": message}}


def _status_of(exc: CitelineError) -> int:
    if isinstance(exc, AuthenticationError):
        return 401
    if isinstance(exc, PermissionDeniedError):
        return 403
    if isinstance(exc, DocumentNotFoundError):
        return 404
    if isinstance(exc, UploadError):
        return exc.status
    if isinstance(exc, UnsupportedFormatError):
        return 415
    if isinstance(exc, ParseError):
        return 422
    if isinstance(exc, InvalidQuestionError):
        return 400
    if isinstance(exc, GeneratorError):
        return 502  # the LLM endpoint behind the server failed: not the client's fault
    if isinstance(exc, IndexUnavailableError):
        return 503  # busy, read-only or disk full: try again later
    return 400


class LimitsAndMetrics:
    """Pure ASGI middleware: refuses bodies over the limit (Content-Length, or counted as they
    stream), then times each request under its route's path template."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    def _limit(self, scope: Scope) -> int:
        s = self.state.settings
        if scope["path"] == "/v1/documents" and scope["method"] == "POST":
            return int(s.server_max_upload_mb * 1024 * 1024) + _MULTIPART_SLACK
        return s.server_max_body_kb * 1024

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        limit = self._limit(scope)
        status = {"code": 500}
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await self._too_large(send, limit)
            self._observe(scope, 413, start)
            return
        seen = 0
        exceeded = responded = False

        async def limited_receive() -> Message:
            nonlocal seen, exceeded
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    exceeded = True
                    raise _BodyTooLarge()
            return message

        async def timed_send(message: Message) -> None:
            nonlocal responded
            if exceeded:
                # The body parser turned the refusal into its own error (Starlette's form parser
                # answers 400 "error parsing the body"): the client gets the 413 instead.
                if message["type"] == "http.response.start" and not responded:
                    responded = True
                    status["code"] = 413
                    await self._too_large(send, limit)
                return
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                responded = True
            await send(message)

        try:
            await self.app(scope, limited_receive, timed_send)
        except _BodyTooLarge:
            if not responded:
                await self._too_large(send, limit)
            status["code"] = 413
        self._observe(scope, status["code"], start)

    async def _too_large(self, send: Send, limit: int) -> None:
        body = json.dumps(
            error_body(413, "too_large", f"The request body is larger than the {limit // 1024} KB limit.")
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    def _observe(self, scope: Scope, status: int, start: float) -> None:
        route = scope.get("route")
        path = getattr(route, "path", None) or ("/mcp" if scope["path"].startswith("/mcp") else "unmatched")
        self.state.metrics.observe_request(path, scope["method"], status, time.perf_counter() - start)


class _BodyTooLarge(Exception):
    pass


class McpGate:
    """/mcp: the MCP SDK's streamable HTTP app behind the same key check and rate limit."""

    def __init__(self, app: ASGIApp, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        client = scope.get("client")
        try:
            caller = throttled_caller(self.state, headers, client[0] if client else "-")
            wait = self.state.limiter.retry_after(caller.key_id or "anonymous-mcp")
            if wait > 0:
                raise _Refused(429, "rate_limited", f"Rate limit reached; retry in {wait:.1f} s.")
        except AuthenticationError as exc:
            await JSONResponse(
                error_body(401, "AuthenticationError", str(exc)), 401, headers={"WWW-Authenticate": "Bearer"}
            )(scope, receive, send)
            return
        except _Refused as exc:
            await JSONResponse(error_body(exc.status, exc.code, exc.message), exc.status)(
                scope, receive, send
            )
            return
        except HTTPException as exc:  # too many wrong keys from this address
            await JSONResponse(
                error_body(exc.status_code, "rate_limited", exc.detail), exc.status_code, headers=exc.headers
            )(scope, receive, send)
            return
        await self.app(scope, receive, send)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        self.status, self.code, self.message = status, code, message


def create_app(
    kb: KnowledgeBase, *, allow_anonymous: bool | None = None, host: str = "127.0.0.1", mcp: bool = True
) -> FastAPI:
    """The app over ``kb``. ``host`` is where it listens (the MCP endpoint's DNS-rebinding guard)."""
    state = ServerState.build(kb, allow_anonymous=allow_anonymous)
    mcp_app = None
    session_manager = None
    if mcp:
        from mcp.server.transport_security import TransportSecuritySettings

        from citeline.server.mcp_tools import build_mcp

        server = build_mcp(state, lambda headers: caller_for(state, headers or {}))
        local = host in ("127.0.0.1", "localhost", "::1")
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=local,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"] if local else [],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"] if local else [],
        )
        starlette_mcp = server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            transport_security=security,
            max_request_body_size=state.settings.server_max_body_kb * 1024,
            host=host,
        )
        session_manager = server.session_manager
        mcp_app = McpGate(starlette_mcp, state)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if session_manager is not None:
                await stack.enter_async_context(session_manager.run())
            try:
                yield
            finally:
                state.close()

    app = FastAPI(
        title="citeline",
        summary="Answers with citations that resolve to exact spans of your documents.",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,  # served by documentation_pages, under a CSP
        redoc_url=None,
    )
    app.state.citeline = state
    _errors(app)
    from citeline.server.routes_admin import router as admin_router
    from citeline.server.routes_ask import router as ask_router
    from citeline.server.routes_documents import router as documents_router

    app.include_router(ask_router)
    app.include_router(documents_router)
    app.include_router(admin_router)
    if mcp_app is not None:
        from starlette.routing import Route

        app.router.routes.append(Route("/mcp", endpoint=mcp_app, include_in_schema=False))
    _web_page(app)
    documentation_pages(app)
    origins = [o.strip() for o in state.settings.server_cors_origins.split(",") if o.strip()]
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "X-API-Key"],
        )
    app.add_middleware(LimitsAndMetrics, state=state)
    app.add_middleware(SecurityHeaders)  # outermost: the 413s above get the headers too
    return app


def _web_page(app: FastAPI) -> None:
    static = str(STATIC)

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(f"{static}/index.html", headers=_PAGE_HEADERS)

    @app.get("/documents", include_in_schema=False)
    async def documents_page() -> FileResponse:
        return FileResponse(f"{static}/index.html", headers=_PAGE_HEADERS)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=static), name="static")


#: the page loads only its own scripts and styles; images are blob: URLs of fetched pages
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' blob: data:; style-src 'self'; "
    "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _errors(app: FastAPI) -> None:
    @app.exception_handler(CitelineError)
    async def citeline_error(_request: Request, exc: CitelineError) -> Response:
        status = _status_of(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        if status == 503:
            headers = {"Retry-After": "5"}
        return JSONResponse(error_body(status, type(exc).__name__, str(exc)), status, headers=headers)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        code = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 429: "rate_limited"}.get(
            exc.status_code, "http_error"
        )
        message = str(exc.detail) if exc.status_code != 404 or exc.detail != "Not Found" else "No such route."
        return JSONResponse(error_body(exc.status_code, code, message), exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> Response:
        errors = list(exc.errors())
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(error_body(400, "bad_json", "The request body is not valid JSON."), 400)
        parts = []
        for e in errors[:5]:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            parts.append(f"{where}: {e.get('msg', 'invalid')}")
        return JSONResponse(error_body(422, "invalid_request", "; ".join(parts)), 422)
