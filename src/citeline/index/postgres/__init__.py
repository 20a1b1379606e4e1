"""The shared store: PostgreSQL + pgvector + full-text BM25 (store.py). Importing this package
imports no driver: ``local`` (a throwaway server for tests) works without psycopg."""
