# Two entry points: `make serve` runs the lobby, `make test` runs every check.
# Both create .venv and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test lint bench clean browser

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/matchlobby serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy ratings_plugin server clients

# The web page's tests drive Debian's Chromium (Playwright cannot download a browser here).
# CI runs as root on a clean machine: install it there when /usr/bin/chromium is missing.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	  else \
	    echo "note: /usr/bin/chromium is missing (as root: apt-get install chromium); the web tests will be skipped"; \
	  fi; \
	fi

test: lint browser
	$(BIN)/python -m pytest

# Every benchmark in bench/ in turn (those present), then a summary: bench/run_all.py.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
