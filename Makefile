# Every target sets up what it needs: a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup demo test test-fast lint typecheck bench corpus clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*; touch $@

setup: $(STAMP)

## The main job: summarise the demo table that ships in the repo.
demo: setup
	$(BIN)/deltaexplore inspect examples/demo_table

## The test suite (CI runs exactly this).
test: setup
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

test-fast: setup
	$(BIN)/python -m pytest -q -x -m "not corpus and not s3"

corpus: setup
	$(BIN)/python ../shared/tools/corpus_check.py

lint: setup
	$(BIN)/ruff check deltaexplore tests benchmarks
	$(BIN)/ruff format --check deltaexplore

typecheck: setup
	$(BIN)/mypy deltaexplore

bench: setup
	$(BIN)/python benchmarks/bench_snapshot.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build *.egg-info
