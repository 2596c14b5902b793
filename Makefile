# Two entry points: `make serve` runs the lobby, `make test` runs every check.
# Both create .venv and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/matchlobby serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy ratings_plugin

test: lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/peklo.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
