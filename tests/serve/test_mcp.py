"""MCP with the official SDK's own client, over stdio (`citeline mcp --key`) and streamable HTTP
(`/mcp` in `citeline serve`): the four tools, the key's principal, a restricted document invisible."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from .conftest import ROOT, SECRET, Corpus, bearer
from .live import serving

TOOLS = {"search", "ask", "show", "list_documents"}
Q_BUDGET = "How large is the 2031 marketing budget?"


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data: dict[str, Any] = result.structured_content
        return data
    parsed: dict[str, Any] = json.loads(result.content[0].text)
    return parsed


async def exercise(client: Client, allowed: bool, budget_id: str) -> None:
    tools = await client.list_tools()
    assert {t.name for t in tools.tools} >= TOOLS
    docs = payload(await client.call_tool("list_documents", {"limit": 500}))
    sources = {d["source"] for d in docs["documents"]}
    assert "docs/error-codes.md" in sources
    assert ("restricted/budget.md" in sources) is allowed
    hits = payload(await client.call_tool("search", {"query": Q_BUDGET, "k": 10}))["results"]
    assert any(SECRET in h["text"] for h in hits) is allowed
    answer = payload(await client.call_tool("ask", {"question": Q_BUDGET}))
    assert (SECRET in json.dumps(answer)) is allowed
    if not allowed:
        assert answer["refused"] is True
    cited = payload(await client.call_tool("ask", {"question": "What does error LDG-4012 mean?"}))
    c = cited["citations"][0]
    shown = payload(
        await client.call_tool(
            "show", {"document_id": c["document_id"], "start": c["start"], "end": c["end"]}
        )
    )
    assert shown["text"] == c["quote"] and shown["source"] == "docs/error-codes.md"
    shown_budget = await client.call_tool("show", {"document_id": budget_id, "start": 0, "end": 40})
    assert shown_budget.is_error is not allowed
    if not allowed:
        assert SECRET not in str(shown_budget.content) and "No document" in str(shown_budget.content)


def budget_id(corpus: Corpus) -> str:
    doc = corpus.kb.store.find_document("restricted/budget.md")
    assert doc is not None
    return doc.id


def stdio_params(corpus: Corpus, key: str) -> StdioServerParameters:
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    for name in ("HOME", "PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS"):
        if name in os.environ:
            env[name] = os.environ[name]
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "citeline", "--index", str(corpus.index), "mcp", "--key", key],
        env=env,
    )


@pytest.mark.parametrize("who", ["reader", "writer"])
def test_stdio(corpus: Corpus, who: str) -> None:
    key = corpus.reader_key if who == "reader" else corpus.writer_key

    async def main() -> None:
        with anyio.fail_after(120):
            async with Client(stdio_params(corpus, key)) as client:
                await exercise(client, who == "writer", budget_id(corpus))

    anyio.run(main)


def test_stdio_refuses_a_bad_key(corpus: Corpus) -> None:
    import subprocess

    params = stdio_params(corpus, corpus.revoked_key)
    proc = subprocess.run(
        [params.command, *params.args],
        env=params.env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0 and "revoked" in proc.stderr


def test_streamable_http(corpus: Corpus) -> None:
    with serving(corpus.kb) as url:

        async def main(key: str, allowed: bool) -> None:
            with anyio.fail_after(120):
                async with (
                    httpx2.AsyncClient(headers=bearer(key), timeout=60) as http,
                    Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
                ):
                    await exercise(client, allowed, budget_id(corpus))

        anyio.run(main, corpus.reader_key, False)
        anyio.run(main, corpus.writer_key, True)
        for headers in ({}, bearer(corpus.revoked_key), bearer("cl_wrong_key")):
            r = httpx.post(
                f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
            )
            assert r.status_code == 401, r.text
