"""`citeline serve`: the HTTP API, the web page and the MCP endpoint (the `server` extra).

app.py (the app factory: limits, errors, metrics, web page, /mcp), auth.py (keys and rate limit),
routes_ask.py (/v1/ask with SSE, /v1/search), routes_documents.py (documents, uploads, PDF pages),
routes_admin.py (traces, keys, /healthz, /metrics), state.py (threads, jobs, the writer),
uploads.py (names and content types), pdf_pages.py (rendering and span boxes), metrics.py,
mcp_tools.py (the MCP tools), static/ (the web page: plain HTML, CSS and JavaScript).
"""
