# The two commands a newcomer needs (README):
#   make run    set up everything and start the playground on http://127.0.0.1:8000
#   make test   install what the tests need and run them all (tests/ and e2e/)
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
DATA ?= data
SUITE ?= quick

.PHONY: run setup test lint deps test-deps wheel web builtins bench clean

run: setup
	$(BIN)/playground --host $(HOST) --port $(PORT) --data-dir $(DATA)

# The server, Pyodide from npm (pinned in web/package.json and its lock file), the py_core wheel
# the page loads, and the built-in data sets.
setup: $(BIN)/playground web wheel builtins

$(BIN)/playground: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[server,native]"
	touch $@

web: web/node_modules/pyodide/pyodide.mjs
web/node_modules/pyodide/pyodide.mjs: web/package.json web/package-lock.json
	cd web && npm ci --no-audit --no-fund
	touch $@

# py_core/pyproject.toml through pypa build (tools/build_wheel.py adds web/build/manifest.json).
wheel: $(BIN)/playground
	$(BIN)/python tools/build_wheel.py

builtins: $(BIN)/playground
	@if $(BIN)/python -c "import server.builtins" 2>/dev/null; then \
		$(BIN)/python -m server.builtins --data-dir $(DATA); fi

# Test tools: PyTorch's CPU build (pinned, so pip takes the local CPU wheel rather than a CUDA
# build), Playwright's Python package, Debian's chromium and Mesa's lavapipe when missing.
test-deps: setup
	$(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -e ".[server,native,peers,test]"
	$(BIN)/python tools/fetch_test_data.py  # tests/data/csv-test-data, checked against its sums
	@missing=""; command -v chromium >/dev/null || missing="chromium"; \
	 ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || missing="$$missing mesa-vulkan-drivers"; \
	 if [ -n "$$missing" ]; then \
		echo "installing$$missing with apt-get"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi

# Habits first (ruff: pyproject.toml [tool.ruff]; eslint: web/eslint.config.js), then the tests.
lint: test-deps
	$(BIN)/ruff check .
	cd web && ./node_modules/.bin/eslint .

# Two pytest processes (-n, pytest-xdist), a test file each: CI has 2 cores, and a test waiting on
# Chromium, a server or a subprocess leaves one free. TEST_WORKERS=1 runs them in this process.
TEST_WORKERS ?= 2
test: test-deps lint
	$(BIN)/pytest tests -q -n $(TEST_WORKERS) --dist loadfile --durations=12
	$(BIN)/pytest e2e -q -n $(TEST_WORKERS) --dist loadfile --durations=12

bench: test-deps
	$(BIN)/python -m bench --suite $(SUITE) $(BENCH_ARGS)

clean:
	rm -rf $(VENV) web/node_modules web/build
