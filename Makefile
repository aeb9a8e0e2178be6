# Every target sets up what it needs: a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# the install is redone when what it builds from changes (the compiled stats kernel included)
INSTALL_INPUTS := pyproject.toml setup.py deltaexplore/core/scan/_stats_kernel.c
STAMP  := $(VENV)/.installed-$(shell cat $(INSTALL_INPUTS) | cksum | cut -d' ' -f1)

.PHONY: setup setup-ui setup-extension extension frontend demo lab summary test test-fast lint typecheck bench corpus clean

$(STAMP): $(INSTALL_INPUTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*; touch $@

setup: $(STAMP) frontend

## The explorer's front end (frontend/: TypeScript, Arrow JS, Vega, AG Grid), bundled by esbuild
## into deltaexplore/widgets/static/ (not committed: built here and by the wheel build). Needs
## Node.js and npm; rebuilt when its sources or lock file change.
FRONTEND_SRC := $(shell find frontend/src -type f 2>/dev/null | sort) frontend/build.mjs frontend/package-lock.json
FRONTEND_STAMP := deltaexplore/widgets/static/.built-$(shell cat $(FRONTEND_SRC) 2>/dev/null | cksum | cut -d' ' -f1)

frontend: $(FRONTEND_STAMP)

frontend/node_modules/.package-lock.json: frontend/package-lock.json
	@command -v npm >/dev/null || { echo "make frontend: Node.js and npm are needed to build the explorer's front end (frontend/)"; exit 1; }
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(FRONTEND_STAMP): frontend/node_modules/.package-lock.json $(FRONTEND_SRC)
	cd frontend && npm run --silent build
	@rm -f deltaexplore/widgets/static/.built-*; touch $@

## UI prerequisites (browser and extension tests): Debian chromium (apt-get, as root), the
## JupyterLab extension built (npm ci + npm run build), galata's node modules. Nothing else is
## downloaded: Playwright drives the Debian chromium.
EXT_STAMP := extension/build/.built-$(shell cat extension/package.json extension/package-lock.json extension/ui-tests/package-lock.json extension/tsconfig.json extension/src/*.ts extension/schema/*.json extension/style/*.css 2>/dev/null | cksum | cut -d' ' -f1)

setup-ui: setup-extension
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "setup-ui: chromium is missing and cannot be installed here (needs root and apt-get): browser tests will skip"; fi; }

## The JupyterLab extension (needs Node.js and npm; without them JupyterLab still shows the
## explorer, only the extension's file-browser command and its tests are missing).
setup-extension: setup
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory extension; \
	  else echo "setup-extension: npm is missing: the JupyterLab extension is not built and its tests will skip"; fi

extension: $(EXT_STAMP)

$(EXT_STAMP): $(STAMP)
	cd extension && npm ci --no-audit --no-fund --loglevel=error && PATH="$(abspath $(BIN)):$$PATH" npm run --silent build
	cd extension/ui-tests && npm ci --no-audit --no-fund --loglevel=error
	@rm -f extension/build/.built-*; touch $@

## JupyterLab refuses to run as root unless told: decided by who runs make.
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
## The deltaexplore server extension (which folders are Delta tables) and the built lab extension.
LAB_FLAGS := --LabApp.extra_labextensions_path=extension/build \
	'--ServerApp.jpserver_extensions={"deltaexplore.labserver": True}' $(LAB_ROOT_FLAG)

## The main job: set up, then open the tour notebook in JupyterLab (explorer, %delta, charts).
demo: setup-extension
	$(BIN)/jupyter lab notebooks/00_tour.ipynb $(LAB_FLAGS)

## JupyterLab on the notebooks/ directory, with the deltaexplore extension.
lab: demo

## The command-line summary of the demo table that ships in the repo.
summary: setup
	$(BIN)/deltaexplore inspect examples/demo_table

## The test suite (CI runs exactly this).
test: setup setup-ui
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

test-fast: setup
	$(BIN)/python -m pytest -q -x -m "not corpus and not s3"

corpus: setup
	$(BIN)/python ../shared/tools/corpus_check.py

lint: setup
	$(BIN)/ruff check deltaexplore tests benchmarks notebooks examples
	$(BIN)/ruff format --check deltaexplore

typecheck: setup
	$(BIN)/mypy deltaexplore

bench: setup
	$(BIN)/python benchmarks/bench_snapshot.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build *.egg-info frontend/node_modules deltaexplore/widgets/static
