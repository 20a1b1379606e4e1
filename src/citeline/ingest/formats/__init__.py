"""One reader per file format: bytes of one file in, a ParsedDocument out (see ingest/base.py)."""
