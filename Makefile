# The README's commands. `make run` and `make test` set everything up on a fresh machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
RAGEVAL := $(VENV)/bin/rageval
PYTHON ?= python3

.PHONY: help run test bench bench-quick lint import setup setup-test browser clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test,dev]'
	touch $@ $(VENV)/.installed-run

$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-test
	$(PY) -m pip install -q -e '.[test,bench]'
	touch $@

setup: $(VENV)/.installed-run  ## create .venv and install rageval

setup-test: $(VENV)/.installed-test  ## create .venv with the test extras

import: setup  ## import sample_runs/ into the store (idempotent)
	$(RAGEVAL) import sample_runs/*.jsonl

run: import  ## set up, import the sample runs, open the dashboard on http://localhost:8501
	$(RAGEVAL) dashboard --port 8501

browser:  ## install Debian's chromium for the browser tests when it is missing
	@bash scripts/ensure-chromium.sh

test: setup-test browser  ## set up (with test extras) and run every test
	$(PY) -m pytest

bench: $(VENV)/.installed-bench  ## the issue's sizes against pytrec_eval, ranx and difflib (~30 min; writes docs/benchmarks.md)
	$(PY) -m bench --scale

bench-quick: $(VENV)/.installed-bench  ## every bench scenario at small sizes (a minute; writes nothing)
	$(PY) -m bench --quick

lint: setup-test  ## ruff + mypy on the core
	$(VENV)/bin/ruff check rageval_core dashboard tests bench
	$(VENV)/bin/mypy rageval_core

clean:  ## remove the virtualenv and the local store
	rm -rf $(VENV) .rageval
