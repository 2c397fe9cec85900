# Two commands for a fresh clone: `make dev` and `make test`. Everything else is optional.
PYTHON ?= python3
UV_VERSION := 0.13.9
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
RUN := $(UV) run --frozen --no-sync
HOST ?= 127.0.0.1
PORT ?=
ARGS ?=
# make bench / bench-agentdojo MODEL=groq:llama-3.3-70b-versatile (or an OpenAI-compatible
# base URL, http://127.0.0.1:8000/v1#llama3): a real model; ARGS adds options (--yes, --tasks 5)
MODEL ?=
PROD := .prod
PROD_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12) python3.12)
PROD_PORT ?= 2026
PROD_STATE ?=
# pytest-xdist workers for `make test`: each module stays on one worker (--dist loadscope), so
# a module's servers start once; each worker starts its own session servers when it needs them.
# The suite mostly waits on servers, so more workers than the 2 cores pay.
TEST_WORKERS ?= 4
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# make dist: the library's wheel and sdist, and the clean venvs that run its suite from the wheel
DIST := libs/stop-on-artifact/dist
# make dist runs them all; make test all but the floors (DIST_ONLY: 2 to 3 minutes each)
WHEEL_ENVS := lib-newest lib-legacy-0.6.6 lib-langchain-mcp lib-floors lib-floors-deepagents lib-floors-langchain-mcp lib-floors-core
DIST_ONLY := lib-floors lib-floors-deepagents lib-floors-langchain-mcp lib-floors-core
# The library's own Makefile (libs/stop-on-artifact), run in .venv with this uv
LIBRARY_MAKE := $(MAKE) --no-print-directory -C libs/stop-on-artifact UV=$(CURDIR)/$(UV)

export UV_PYTHON_DOWNLOADS := never

.PHONY: help dev kb-mcp test dist dist-build unit lint format hooks bench bench-agentdojo e2e compat report docs docs-build install clean prod prod-env prod-test prod-lock services

# The two a newcomer needs first, then the rest in file order; names padded to the longest.
help: ## List the targets.
	@awk -F ':.*## ' '/^[a-z0-9-]+:.*## / { name[++n] = $$1; text[n] = $$2; \
		if (length($$1) > width) width = length($$1) } \
		END { line = "%-" width "s  %s\n"; \
		for (i = 1; i <= n; i++) if (name[i] == "dev" || name[i] == "test") printf line, name[i], text[i]; \
		for (i = 1; i <= n; i++) if (name[i] != "dev" && name[i] != "test") printf line, name[i], text[i] }' \
		$(MAKEFILE_LIST)

$(UV):
	@$(PYTHON) -m venv $(TOOLS)
	@$(TOOLS)/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: $(UV) pyproject.toml libs/stop-on-artifact/pyproject.toml uv.lock
	@$(UV) sync --frozen --quiet --python $(PYTHON)
	@touch $@

install: $(VENV)/.synced ## Create .venv from uv.lock.

$(PROD)/venv/.synced: $(UV) aegra/requirements.txt
	$(UV) venv --allow-existing --quiet --python $(PROD_PYTHON) $(PROD)/venv
	$(UV) pip sync --quiet --python $(PROD)/venv/bin/python aegra/requirements.txt
	@touch $@

services: ## Install redis-server and PostgreSQL from Debian if they are missing.
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server; }
	@command -v initdb >/dev/null || test -x /usr/lib/postgresql/15/bin/initdb || \
		{ $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq postgresql; }

prod-env: $(PROD)/venv/.synced services ## The production server's Python 3.12 env in .prod/venv.

dev: install ## Serve both graphs with `langgraph dev` on 2024 or a free port, said once it answers (offline model unless GROQ_API_KEY).
	@$(RUN) python -m client.dev --host $(HOST) $(if $(PORT),--port $(PORT)) --no-browser

kb-mcp: install ## Serve the knowledge base's search as an MCP server on 2027 or a free port (KB_PORT); it prints the AGENT_KB_MCP_URL=... make dev line.
	@$(RUN) python -m client.mcpserver $(if $(KB_PORT),--port $(KB_PORT))

prod: install prod-env ## Serve both graphs on Aegra + PostgreSQL + Redis, 2 workers, on port 2026 (PROD_PORT; state in .prod/ or PROD_STATE).
	$(RUN) python -m client.prodserver --port $(PROD_PORT) $(if $(PROD_STATE),--state "$(PROD_STATE)")

prod-test: install prod-env ## The suite against the production server only.
	$(RUN) pytest tests/prod_tests

prod-lock: $(UV) ## Re-pin aegra/requirements.txt from aegra/requirements.in.
	$(UV) pip compile aegra/requirements.in --python-version 3.12 \
		--python-platform x86_64-unknown-linux-gnu --generate-hashes --no-header --quiet \
		-o aegra/requirements.txt

# The compat environments (package installs, then short suites) run beside pytest, whose
# workers mostly wait on servers; their output follows pytest's, and either failing fails.
test: install prod-env ## The whole suite: unit, dev server, Aegra; the pins; the built wheel on newest, 0.6.6 and langchain.mcp.
	@$(MAKE) --no-print-directory dist-build
	@log=$$(mktemp); \
	SOA_WHEEL="$$(ls $(DIST)/*.whl)" $(RUN) python -m tests.compat.run --only pins legacy-0.6.6 \
		$(filter-out $(DIST_ONLY),$(WHEEL_ENVS)) > $$log 2>&1 & compat=$$!; \
	status=0; $(RUN) pytest -n $(TEST_WORKERS) --dist loadscope || status=$$?; \
	wait $$compat || status=$$?; cat $$log; rm -f $$log; exit $$status

dist: dist-build ## Build and check the library's wheel and sdist (libs/stop-on-artifact/dist), then run its suite from the wheel in clean venvs (newest, 0.6.6, its floors, langchain.mcp).
	SOA_WHEEL="$$(ls $(DIST)/*.whl)" $(RUN) python -m tests.compat.run --only $(WHEEL_ENVS)

dist-build: install
	rm -rf $(DIST)
	$(RUN) validate-pyproject pyproject.toml libs/stop-on-artifact/pyproject.toml
	$(RUN) python -m build --no-isolation --outdir $(DIST) libs/stop-on-artifact
	$(RUN) twine check --strict $(DIST)/*
	$(RUN) check-wheel-contents $(DIST)/*.whl

unit: install ## The in-process tests only, for the edit loop: about 4 minutes on 2 cores.
	$(RUN) pytest tests/unit_tests libs/stop-on-artifact/tests -q -n 2 --dist loadscope \
		--deselect tests/unit_tests/test_bench.py

lint: install ## Ruff, mypy strict; the workflows against GitHub's schema and zizmor (offline).
	$(RUN) ruff check agent client tests bench libs
	$(RUN) ruff format --check agent client tests bench libs
	$(RUN) mypy
	$(LIBRARY_MAKE) lint
	$(RUN) check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(RUN) zizmor --offline .github/workflows/

hooks: install ## Install the pre-commit hooks (the checks of make lint before each commit).
	$(RUN) pre-commit install

format: install ## Ruff's fixes and formatting.
	$(RUN) ruff check --fix agent client tests bench libs
	$(RUN) ruff format agent client tests bench libs

bench: install prod-env ## The benchmark: writes bench/results/ (MODEL=provider:model or URL#model: a real model, estimate first).
	$(RUN) python -m bench $(if $(MODEL),--model "$(MODEL)") $(ARGS)

bench-agentdojo: install ## AgentDojo's 97 tasks offline, every stop configuration side by side: writes bench/results/agentdojo.* (MODEL=...: a real model).
	$(RUN) python -m bench.agentdojo $(if $(MODEL),--model "$(MODEL)") $(ARGS)

e2e: install ## The check matrix against a dev server on real Groq (needs GROQ_API_KEY).
	$(RUN) python -m client.e2e

compat: install ## The characterization suite on the article's pins, newest, 0.6.6; the library alone.
	$(RUN) python -m tests.compat.run

report: install ## What the stops saved, over the running server's threads (no key needed); ARGS="--project NAME --since 24h" reads a LangSmith project.
	@$(RUN) python -m client report $(ARGS)

docs: install ## Serve the library's API reference site (mkdocs) on 127.0.0.1:8001 (DOCS_PORT).
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs serve -f libs/stop-on-artifact/mkdocs.yml -a 127.0.0.1:$(or $(DOCS_PORT),8001)

docs-build: install ## Build the library's site strictly (any warning fails) into .site/.
	NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict -f libs/stop-on-artifact/mkdocs.yml -d $(CURDIR)/.site

clean: ## Remove the environments and caches (not .prod/ state).
	rm -rf $(VENV) $(TOOLS) .site .langgraph_api .mypy_cache .ruff_cache .pytest_cache
