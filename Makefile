# Two commands for a fresh clone: `make dev` and `make test`. Everything else is optional.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
RUN := $(UV) run --frozen --no-sync
HOST ?= 127.0.0.1
PORT ?= 2024

export UV_PYTHON_DOWNLOADS := never

.PHONY: dev test lint format bench e2e compat install clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

$(VENV)/.synced: $(UV) pyproject.toml uv.lock
	$(UV) sync --frozen --python $(PYTHON)
	@touch $@

install: $(VENV)/.synced ## Create .venv from uv.lock.

dev: install ## Serve both graphs with `langgraph dev` (offline model unless GROQ_API_KEY is set).
	$(RUN) langgraph dev --host $(HOST) --port $(PORT) --no-browser

test: install ## The whole suite: unit, through `langgraph dev`, then the pinned versions.
	$(RUN) pytest
	$(RUN) python -m tests.compat.run --only pins legacy-0.6.6

lint: install ## Ruff and mypy strict.
	$(RUN) ruff check agent tests bench
	$(RUN) ruff format --check agent tests bench
	$(RUN) mypy

format: install
	$(RUN) ruff check --fix agent tests bench
	$(RUN) ruff format agent tests bench

bench: install ## The benchmark: writes bench/results/.
	$(RUN) python -m bench

e2e: install ## The check matrix against a dev server on real Groq (needs GROQ_API_KEY).
	$(RUN) python -m agent.e2e

compat: install ## The characterization suite on the article's pins, the newest releases, 0.6.6.
	$(RUN) python -m tests.compat.run

clean:
	rm -rf $(VENV) $(TOOLS) .langgraph_api .mypy_cache .ruff_cache .pytest_cache
