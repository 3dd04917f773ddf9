# The README's commands. `make run` and `make test` set everything up on a fresh machine,
# installing exactly the versions in uv.lock (uv itself comes from PyPI, pinned with hashes in
# requirements/uv.txt).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RAGEVAL := $(VENV)/bin/rageval
TOOLS := .tools
UV := $(TOOLS)/bin/uv
# never let uv fetch a Python build: the machine's python3 (3.11+) is the interpreter
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)
# pytest's worker count (pytest-xdist); `make test XDIST=0` runs in one process
XDIST ?= 2
# tests whose behaviour differs in CI (../shared must be there) read CI; keep the caller's value.
# Bytecode is kept (in .pycache/, outside the source folders) even where the environment says
# PYTHONDONTWRITEBYTECODE: uv installs no .pyc, and without them every process the suite starts
# (two workers, each app server, each CLI subprocess, Spark's Python workers) compiled the UI
# stack anew: 3 s of CPU per `import streamlit, pandas, plotly`, 0.9 s with the cache
PYCACHE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/.pycache
PYTEST := $(PYCACHE) $(PY) -m pytest -n $(XDIST)

.PHONY: help run test test-fast test-latest test-lowest fuzz clean-exits bench bench-quick lint docs-examples cli-snapshot lock shell import \
	setup setup-test setup-bench browser java layers clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(UV): requirements/uv.txt
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install -q --disable-pip-version-check --require-hashes -r requirements/uv.txt
	touch $@

# uv sync is a quick no-op when .venv already matches the lock, so it runs every time
setup: | $(UV)  ## create .venv with rageval, its dashboard and semantic extras (what the app needs), from uv.lock
	$(UV) sync --locked --inexact --extra dashboard --extra semantic --quiet

setup-test: java | $(UV)  ## .venv exactly as uv.lock has it with the test, dev and spark extras (and Java for Spark)
	$(UV) sync --locked --extra test --extra dev --extra spark --quiet

setup-bench: java | $(UV)
	$(UV) sync --locked --extra test --extra dev --extra spark --extra bench --quiet

import: setup  ## import sample_runs/ into the store (idempotent)
	$(RAGEVAL) import sample_runs/*.jsonl

run: import  ## set up, import the sample runs, open the dashboard on http://localhost:8501
	$(RAGEVAL) dashboard --port 8501

shell: setup  ## a shell with .venv active, so `rageval` is on PATH (or: source .venv/bin/activate)
	@echo "rageval is on PATH in this shell; exit to leave it"
	@VIRTUAL_ENV="$(CURDIR)/$(VENV)" PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $${SHELL:-bash} -i

browser:  ## install Debian's chromium for the browser tests when it is missing
	@bash scripts/ensure-chromium.sh

java:  ## install Debian's Java 17 runtime for the Spark engine's tests when `java` is missing
	@bash scripts/ensure-java.sh

test: setup-test browser lint  ## set up (from the lock, with test extras and chromium), lint (ruff, format, mypy, layers), run every test
	$(PYTEST)

test-fast: setup-test  ## every package's unit tests (core, CLI, the dashboard's components and state) without the slow ones and the app runs, for the inner loop (under a minute)
	$(PYTEST) tests/core tests/dashboard -m "not slow and not apptest"

test-latest: browser java | $(UV)  ## every test on the newest releases the floors allow (.venv-latest, no lock)
	rm -rf .venv-latest && $(UV) venv --quiet .venv-latest
	$(UV) pip install --quiet --python .venv-latest/bin/python -e '.[test,dev,spark]'
	@.venv-latest/bin/python -c "import duckdb, streamlit, pandas, pyarrow, numpy; print('latest:', *(f'{m.__name__} {m.__version__}' for m in (duckdb, streamlit, pandas, pyarrow, numpy)))"
	$(PYCACHE) .venv-latest/bin/python -m pytest -n $(XDIST)

test-lowest: browser java | $(UV)  ## every test on the lowest versions pyproject.toml declares (checks the floors)
	rm -rf .venv-lowest && $(UV) venv --quiet .venv-lowest
	$(UV) pip install --quiet --python .venv-lowest/bin/python --resolution lowest-direct -e '.[test,dev,spark]'
	@.venv-lowest/bin/python -c "import duckdb, streamlit, pandas, pyarrow, numpy; print('lowest:', *(f'{m.__name__} {m.__version__}' for m in (duckdb, streamlit, pandas, pyarrow, numpy)))"
	$(PYCACHE) .venv-lowest/bin/python -m pytest -n $(XDIST)

fuzz: setup-test  ## the hostile-file fuzzer run long (5,000 generated files per reader, 2,500 through the CLI)
	RAGEVAL_FUZZ_EXAMPLES=$${RAGEVAL_FUZZ_EXAMPLES:-5000} $(PY) -m pytest -p no:cacheprovider -q tests/core/formats/test_fuzz_readers.py

clean-exits: setup-test  ## import, evaluate and judge, 50 processes each, every one a clean exit (the suite runs 10)
	CLEAN_EXIT_RUNS=$${CLEAN_EXIT_RUNS:-50} $(PY) -m pytest -p no:cacheprovider -q tests/core/test_clean_exit.py

cli-snapshot: setup-test  ## every output of a fixed script of rageval calls into OUT (default /tmp/rageval-cli-snapshot); diff -r two of them
	$(PY) -m tests.cli_snapshot $${OUT:-/tmp/rageval-cli-snapshot}

lock: | $(UV)  ## regenerate uv.lock after a change to pyproject.toml (keeps other pins); UPGRADE=1 takes the newest
	$(UV) lock $(if $(UPGRADE),--upgrade,)
	@echo "uv.lock written; commit it with the pyproject.toml change"

bench: setup-bench  ## the issue's sizes against pytrec_eval, ranx and difflib (~30 min; writes docs/benchmarks.md)
	$(PY) -m bench --scale

bench-quick: setup-bench  ## every bench scenario at small sizes (a minute; writes nothing)
	$(PY) -m bench --quick

docs-examples: setup-test  ## run every command example of README.md and docs/, and write the outputs they show anew
	$(PY) -m tests.doc_examples --write

lint: setup-test  ## ruff (lint and format), mypy, and the import layers (import-linter)
	$(VENV)/bin/ruff check rageval rageval_core rageval_dashboard tests bench
	$(VENV)/bin/ruff format --check rageval rageval_core rageval_dashboard tests bench
	$(VENV)/bin/mypy rageval rageval_core
	$(VENV)/bin/lint-imports

layers: setup-test  ## the import layers of pyproject.toml's [tool.importlinter] (part of make test)
	$(VENV)/bin/lint-imports --no-cache

clean:  ## remove the virtualenvs and the local store
	rm -rf $(VENV) .venv-latest .venv-lowest $(TOOLS) .rageval .pycache
