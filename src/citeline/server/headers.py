"""Response headers every response gets, and the API documentation pages under a CSP.

``X-Content-Type-Options: nosniff`` on every response (JSON, static files, the page), so a browser
never reads a document's bytes or an error body as another type; ``Cache-Control: no-store`` on
everything a key opens (/v1, /metrics, /mcp), so no shared or disk cache keeps a restricted
document, answer or trace. ``/docs`` (Swagger UI) and ``/redoc`` run offline: their scripts and
styles are served from the fastapi-offline package (under ``/docs/assets``), never from a CDN, and
each page runs one inline script: their policy allows this server and that script only (a nonce per
response), as the web page's allows its own files only.
"""

from __future__ import annotations

import secrets
from functools import cache
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

#: paths whose responses come from a key's data
_AUTHENTICATED = ("/v1/", "/metrics", "/mcp")
#: Swagger UI's and ReDoc's files (their licences: fastapi-offline's LICENSE and the files' headers)
DOCS_ASSETS = Path(fastapi_offline.__file__).parent / "static"
ASSETS_URL = "/docs/assets"
#: the one file ReDoc fetches from elsewhere (its sidebar's logo), pointed at the favicon served here
_REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


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
    """Nothing from elsewhere: the pages' files, the schema and their data: images from this server;
    inline styles, which both UIs set at run time; ReDoc's search runs in a blob: worker."""
    return (
        f"default-src 'none'; script-src 'nonce-{nonce}' 'self'; style-src 'self' 'unsafe-inline'; "
        "font-src 'self'; img-src 'self' data:; connect-src 'self'; worker-src blob:; "
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
    """/docs and /redoc as FastAPI renders them, with their files from this server, under a CSP
    (create the app with docs_url=None and redoc_url=None)."""
    title = f"{app.title} API"
    favicon = f"{ASSETS_URL}/favicon.png"

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=title,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=favicon,
        )
        return _with_nonce(page)

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url="/openapi.json",
            title=title,
            redoc_js_url=f"{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=favicon,
            with_google_fonts=False,
        )
        return _with_nonce(page)

    @app.get(f"{ASSETS_URL}/redoc.standalone.js", include_in_schema=False)
    async def redoc_script() -> Response:  # before the mount below, which serves the other files
        return Response(_redoc_script(), media_type="text/javascript; charset=utf-8")

    app.mount(ASSETS_URL, StaticFiles(directory=DOCS_ASSETS), name="docs-assets")


@cache
def _redoc_script() -> bytes:
    return (
        (DOCS_ASSETS / "redoc.standalone.js")
        .read_bytes()
        .replace(_REDOC_LOGO.encode(), f"{ASSETS_URL}/favicon.png".encode())
    )
