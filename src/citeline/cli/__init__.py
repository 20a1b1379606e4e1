"""The `citeline` command: main.py (add, remove, search, ask, status), documents.py, inspect.py,
config.py, server.py, eval.py and eval_answers.py (their commands), output.py (JSON and errors)."""
