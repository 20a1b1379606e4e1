# `make run` and `make test` work on a fresh machine: they create .venv and install on first use.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
INDEX ?= .citeline
QUESTION ?= What does error LDG-4012 mean and how do I fix it?

.PHONY: install run test test-fast bench bench-pg lint lock clean

$(STAMP): requirements.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; run: make PYTHON=python3 ..."; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/citeline --index $(INDEX) add samples
	$(BIN)/citeline --index $(INDEX) ask "$(QUESTION)"

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not llm and not dataset"

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_pipeline.py
	$(BIN)/python benchmarks/bench_parsers.py
	$(BIN)/python benchmarks/bench_questions.py
	$(BIN)/python benchmarks/bench_retrieval.py
	$(BIN)/python benchmarks/bench_answers.py
	$(BIN)/python benchmarks/bench_semantic_chunking.py
	$(BIN)/python benchmarks/bench_query_expansion.py acronyms --split test

# PostgreSQL + pgvector beside the embedded store: ingest rate, hybrid latency at 100k chunks, 8 clients.
bench-pg: $(STAMP)
	$(BIN)/python benchmarks/bench_pg.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# Re-pin dependencies (with hashes) after editing pyproject.toml.
lock: $(STAMP)
	$(BIN)/pip-compile -q --extra dev --extra openai --extra anthropic --extra llamacpp --extra local-llm --extra postgres --extra ray --generate-hashes \
		--strip-extras --allow-unsafe -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) $(INDEX) .pytest_cache .mypy_cache .ruff_cache
