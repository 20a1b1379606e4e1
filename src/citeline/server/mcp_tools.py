"""The Model Context Protocol server (official ``mcp`` SDK): tools ``search``, ``ask``, ``show`` and
``list_documents`` over one knowledge base, for assistants such as Claude Desktop or Claude Code.

Every call acts as the API key's principal (its groups drive the ACL filter; there is no admin
default): over stdio the key given to ``citeline mcp --key``; over streamable HTTP (``/mcp`` in
``citeline serve``) the key of each HTTP request, checked again on every tool call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from citeline.access import Caller
from citeline.errors import CitelineError
from citeline.filters import Filter
from citeline.kb import KnowledgeBase
from citeline.server.routes_documents import document_json, readable
from citeline.server.state import ServerState

#: the caller of a tool call, from the request's HTTP headers (None over stdio)
Resolver = Callable[[Mapping[str, str] | None], Caller]

INSTRUCTIONS = (
    "citeline answers questions from a team's documents with numbered citations that resolve to exact "
    "character spans. Use `ask` for a cited answer (or the exact refusal when the documents do not say), "
    "`search` to find passages, `show` to read a cited span in context, `list_documents` to see what is "
    "indexed. Quote citations as [n] with their source."
)


def build_mcp(state: ServerState, resolve: Resolver) -> MCPServer:
    kb: KnowledgeBase = state.kb
    mcp = MCPServer("citeline", instructions=INSTRUCTIONS, log_level="WARNING")

    def caller_of(ctx: Context) -> Caller:
        try:
            return resolve(ctx.headers)
        except CitelineError as exc:
            raise ToolError(str(exc)) from None

    async def blocking(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except CitelineError as exc:
            raise ToolError(str(exc)) from None

    @mcp.tool(description="Hybrid search (BM25 + dense) over the documents this key may read.")
    async def search(query: str, ctx: Context, k: int = 5) -> dict[str, Any]:
        caller = caller_of(ctx)
        hits = await blocking(kb.search, query, flt=Filter(principal=caller.principal), k=max(1, min(k, 50)))
        return {
            "results": [
                {
                    "document_id": h.chunk.document_id,
                    "source": h.source,
                    "title": h.title,
                    "heading": h.chunk.heading,
                    "page": h.chunk.page,
                    "start": h.chunk.start,
                    "end": h.chunk.end,
                    "text": h.chunk.text,
                    "score": round(h.score, 6),
                }
                for h in hits
            ]
        }

    @mcp.tool(
        description="Answer a question from the documents with numbered citations [n] (document, page, heading, "
        "exact character span and supporting quote), or the refusal 'I could not find this in the available "
        "documents.' when they do not say."
    )
    async def ask(question: str, ctx: Context) -> dict[str, Any]:
        caller = caller_of(ctx)
        answer = await blocking(kb.ask, question, flt=Filter(principal=caller.principal))
        state.metrics.observe_answer(answer)
        data: dict[str, Any] = answer.to_json()
        return data

    @mcp.tool(
        description="Show a cited span of a document (code-point offsets start:end) with context around it."
    )
    async def show(
        document_id: str, start: int, end: int, ctx: Context, context: int = 300
    ) -> dict[str, Any]:
        caller = caller_of(ctx)
        doc = await blocking(readable, state, caller, document_id)
        text: str = await blocking(kb.text, doc)
        if not 0 <= start <= end <= len(text):
            raise ToolError(f"Span {start}:{end} is outside {doc.source} (0:{len(text)}).")
        context = max(0, min(context, 2000))
        lo, hi = max(0, start - context), min(len(text), end + context)
        starts: list[int] = await blocking(kb.page_starts, doc)
        page = sum(1 for s in starts if s <= start) or None
        return {
            "document_id": doc.id,
            "source": doc.source,
            "title": doc.title,
            "page": page,
            "start": start,
            "end": end,
            "before": text[lo:start],
            "text": text[start:end],
            "after": text[end:hi],
        }

    @mcp.tool(description="List the documents this key may read (paged).")
    async def list_documents(ctx: Context, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        caller = caller_of(ctx)
        flt = Filter(principal=caller.principal)
        docs = await blocking(kb.documents, flt=flt, limit=max(1, min(limit, 500)), offset=max(0, offset))
        total = await blocking(kb.count_documents, flt)
        return {"documents": [document_json(d) for d in docs], "total": total}

    return mcp


def run_stdio(state: ServerState, caller: Caller) -> None:
    """``citeline mcp --key KEY``: serve the tools on stdin/stdout as ``caller``."""
    build_mcp(state, lambda _headers: caller).run("stdio")
