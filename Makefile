# The two commands a newcomer needs: `make run` and `make test`.
# Each creates .venv when it is missing and installs what it needs first.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed-dev

.PHONY: run test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# A demo mind on the embedded default: an example stream is observed, encoded,
# recalled and reinforced; then, on a terminal, you type what it observes next.
run: $(STAMP)
	$(BIN)/noema --mind demo run --input examples/demo-stream.jsonl --until-idle
	$(BIN)/noema --mind demo recall "billing import job" --limit 3
	$(BIN)/noema --mind demo stats
	@test -t 0 && $(BIN)/noema --mind demo run || true

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m benchmarks.storage --sizes 10000 100000 --output docs/benchmarks.md

clean:
	rm -rf $(VENV) build *.egg-info
