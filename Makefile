# Every target sets up what it needs: a fresh machine needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# the install is redone when what it builds from changes (the compiled stats kernel included)
INSTALL_INPUTS := pyproject.toml setup.py deltaexplore/core/scan/_stats_kernel.c deltaexplore/core/scan/_count_kernel.c
STAMP  := $(VENV)/.installed-$(shell cat $(INSTALL_INPUTS) | cksum | cut -d' ' -f1)

.PHONY: setup setup-ui setup-extension extension frontend demo lab summary test test-fast lint typecheck bench corpus clean

$(STAMP): $(INSTALL_INPUTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# pip must not write through the link to the extension's build (make extension links it again)
	@if [ -L $(VENV_LABEXT) ]; then rm $(VENV_LABEXT); fi
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@rm -f $(VENV)/.installed-*; touch $@

setup: $(STAMP) frontend extension

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
	@# the install may have built it already (setup.py): build.json says from which sources
	cd frontend && { node build.mjs --check >/dev/null 2>&1 || npm run --silent build; }
	@rm -f deltaexplore/widgets/static/.built-*; touch $@

## The JupyterLab extension (extension/: TypeScript), compiled by tsc and bundled by
## jupyter-builder into extension/build/deltaexplore-jupyterlab (not committed: built here and by
## the wheel build, which ships it as share/jupyter/labextensions/deltaexplore-jupyterlab); rebuilt
## when a source is newer than the build. The development environment gets what installing the
## wheel gives: the lab extension (a link to the build: a rebuild shows at the next page load) and
## the server extension's config, so plain `jupyter lab` and `jupyter notebook` load both.
LABEXT := extension/build/deltaexplore-jupyterlab
EXT_SRC := $(shell find extension/src extension/schema extension/style -type f 2>/dev/null | sort) \
	extension/package.json extension/package-lock.json extension/tsconfig.json
VENV_LABEXT := $(VENV)/share/jupyter/labextensions/deltaexplore-jupyterlab
VENV_SERVER_CONFIG := $(VENV)/etc/jupyter/jupyter_server_config.d/deltaexplore.json

extension: $(LABEXT)/package.json $(VENV_SERVER_CONFIG)
	@if [ "$$(readlink $(VENV_LABEXT))" != "$(abspath $(LABEXT))" ]; then \
	  rm -rf $(VENV_LABEXT) && mkdir -p $(dir $(VENV_LABEXT)) && ln -s $(abspath $(LABEXT)) $(VENV_LABEXT) && \
	  echo "linked $(VENV_LABEXT) -> $(LABEXT)"; fi

extension/node_modules/.package-lock.json: extension/package-lock.json
	@command -v npm >/dev/null || { echo "make extension: Node.js and npm are needed to build the JupyterLab extension (extension/)"; exit 1; }
	cd extension && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(LABEXT)/package.json: extension/node_modules/.package-lock.json $(EXT_SRC) | $(STAMP)
	cd extension && PATH="$(abspath $(BIN)):$$PATH" npm run --silent build
	@touch $@

$(VENV_SERVER_CONFIG): jupyter-config/jupyter_server_config.d/deltaexplore.json | $(STAMP)
	install -D -m 644 $< $@

## UI prerequisites (browser and extension tests): Debian chromium (apt-get, as root) and
## galata's node modules. Nothing else is downloaded: Playwright drives the Debian chromium.
UI_TESTS := extension/ui-tests/node_modules/.package-lock.json

setup-ui: setup-extension
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian chromium for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "setup-ui: chromium is missing and cannot be installed here (needs root and apt-get): browser tests will skip"; fi; }

## The JupyterLab extension (make setup builds it) and its galata suite's node modules.
setup-extension: setup $(UI_TESTS)

$(UI_TESTS): extension/ui-tests/package-lock.json
	cd extension/ui-tests && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## JupyterLab refuses to run as root unless told: decided by who runs make.
LAB_ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)
## Nothing else: the environment loads the deltaexplore lab and server extensions by itself.
LAB_FLAGS := $(LAB_ROOT_FLAG)

## The main job: set up, then open the tour notebook in JupyterLab (explorer, %delta, charts).
demo: setup
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
	$(BIN)/ruff format --check deltaexplore tests benchmarks notebooks examples

typecheck: setup
	$(BIN)/mypy deltaexplore

bench: setup
	$(BIN)/python benchmarks/bench_snapshot.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build dist *.egg-info frontend/node_modules deltaexplore/widgets/static \
	  extension/node_modules extension/lib extension/build extension/tsconfig.tsbuildinfo extension/ui-tests/node_modules
