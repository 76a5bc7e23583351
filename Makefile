# Quick start: `make demo` (set up, verify the bundled example, emit and replay its certificate)
# and `make test` (set up, run the test suite and the proof checks). Both work on a fresh
# machine with Python 3.11 and the on-disk torch 2.13.0 CPU wheel; no CUDA wheel is pulled.

PY ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
PYTEST_ARGS ?= -m "not slow" -n 2

$(BIN)/pvcert: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.dev: $(BIN)/pvcert
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,torch,models,dask]'
	touch $@

.PHONY: demo test proofs bench clean
demo: $(BIN)/pvcert
	$(BIN)/pvcert verify examples/tp_mlp/case.json --emit-cert tp_mlp.cert.json
	$(BIN)/pvcert replay tp_mlp.cert.json

test: $(VENV)/.dev
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
	$(MAKE) proofs

proofs:
	@if command -v agda >/dev/null; then bash agda/check.sh; else echo "agda not found: skipping agda/ (CI installs it)"; fi
	bash lean/check.sh

bench: $(VENV)/.dev
	$(BIN)/pvcert bench

clean:
	rm -rf $(VENV) tp_mlp.cert.json .pytest_cache
