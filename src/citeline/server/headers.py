"""Response headers every response gets, and the API documentation pages under a CSP.

``X-Content-Type-Options: nosniff`` on every response (JSON, static files, the page), so a browser
never reads a document's bytes or an error body as another type; ``Cache-Control: no-store`` on
everything a key opens (/v1, /metrics, /mcp), so no shared or disk cache keeps a restricted
document, answer or trace. ``/docs`` (Swagger UI) and ``/redoc`` load their scripts from a CDN and
run one inline script: their policy allows that CDN and that script only (a nonce per response).
"""

from __future__ import annotations

import secrets

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: paths whose responses come from a key's data
_AUTHENTICATED = ("/v1/", "/metrics", "/mcp")
_CDN = "https://cdn.jsdelivr.net"


def is_authenticated_path(path: str) -> bool:
    return path.startswith(_AUTHENTICATED)


class SecurityHeaders:
    """Pure ASGI middleware: adds the headers above to every HTTP response that lacks them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        private = is_authenticated_path(scope["path"])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                names = {name.lower() for name, _ in headers}
                if b"x-content-type-options" not in names:
                    headers.append((b"x-content-type-options", b"nosniff"))
                if private:
                    headers = [(n, v) for n, v in headers if n.lower() != b"cache-control"]
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def docs_policy(nonce: str) -> str:
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}' {_CDN}; style-src 'unsafe-inline' {_CDN} "
        f"https://fonts.googleapis.com; font-src {_CDN} https://fonts.gstatic.com; img-src 'self' data: "
        f"{_CDN} https://fastapi.tiangolo.com https://cdn.redoc.ly; connect-src 'self'; worker-src blob:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )


def _with_nonce(page: HTMLResponse) -> HTMLResponse:
    nonce = secrets.token_urlsafe(16)
    html = bytes(page.body).decode("utf-8").replace("<script", f'<script nonce="{nonce}"')
    return HTMLResponse(
        html,
        headers={
            "Content-Security-Policy": docs_policy(nonce),
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
        },
    )


def documentation_pages(app: FastAPI) -> None:
    """/docs and /redoc as FastAPI renders them, under a CSP (create the app with docs_url=None)."""
    title = f"{app.title} API"

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return _with_nonce(get_swagger_ui_html(openapi_url="/openapi.json", title=title))

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return _with_nonce(get_redoc_html(openapi_url="/openapi.json", title=title))
