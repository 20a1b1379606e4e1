"""A real server on loopback for the server, MCP and browser tests: uvicorn in a thread, a free port,
stopped (and its threads joined) when the block ends. Nothing is mocked."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from citeline.kb import KnowledgeBase
from citeline.server.app import create_app
from citeline.wiring import open_store


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def variant(kb: KnowledgeBase, **settings: Any) -> KnowledgeBase:
    """Another connection to ``kb``'s index with some settings changed (the embedder is shared)."""
    return KnowledgeBase(
        kb.settings.replace(**settings), open_store(kb.settings.index, create=False), embedder=kb.embedder
    )


@contextmanager
def serving(kb: KnowledgeBase, **app_options: Any) -> Iterator[str]:
    """Serve ``kb`` on 127.0.0.1 for the duration of the block; yields the base URL."""
    app = create_app(kb, **app_options)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on")
    )
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
