# Two entry points: `make serve` runs the lobby, `make test` runs every check.
# Both create .venv and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test lint bench clean system-packages

# Plugins only the tests load (tests/plugins/*, each a package of its own): installed apart, in
# $(TEST_SITE), which conftest.py puts on the path of the tests and of the processes they start.
# `make serve` and `make bench` run the lobby without them.
TEST_PLUGINS := $(wildcard tests/plugins/*/pyproject.toml)
TEST_SITE    := $(VENV)/test-plugins

$(STAMP): pyproject.toml $(TEST_PLUGINS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench,postgresql,charts]'
	rm -rf $(TEST_SITE)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --target $(TEST_SITE) \
	  $(dir $(TEST_PLUGINS))
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/matchlobby serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy ratings_plugin server clients tests/plugins/streaks/matchlobby_streaks \
	  tests/plugins/headtohead/matchlobby_headtohead \
	  tests/plugins/elo/matchlobby_elo tests/kit/testkit

# What the tests need from Debian, installed in one go (one `apt-get update`) on a clean
# machine, as CI is (root); elsewhere a note names what is missing and which tests will skip:
#   chromium       the web page's tests (Playwright cannot download a browser here)
#   gcc libc6-dev  the power-cut test compiles an LD_PRELOAD shim (tests/reliability/syncrecord.c)
#   postgresql     the storage, server, reliability and plugin tests run on PostgreSQL too (the
#                  suite starts a cluster of its own: tests/kit/testkit/postgres.py); its
#                  pg_dump and pg_restore serve the backup tests
#   haproxy        the several-servers test runs HAProxy from docs/haproxy.cfg
#   systemd        the packaging tests check deploy/matchlobby.service with systemd-analyze verify
system-packages:
	@missing=""; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v gcc >/dev/null 2>&1 || command -v cc >/dev/null 2>&1 || missing="$$missing gcc libc6-dev"; \
	ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 || missing="$$missing postgresql"; \
	command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing="$$missing haproxy"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	  else \
	    echo "note: missing:$$missing (as root: apt-get install$$missing); the tests that need them will be skipped"; \
	  fi; \
	fi

# The suite spread over two workers a core (pytest-xdist): most tests wait on sockets, child
# processes and timers, not on the CPU, so a second worker a core fills those waits.
# TEST_WORKERS=0 runs it in one process.
# One PostgreSQL cluster serves the whole run (tests/kit/testkit/session.py).
TEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) )))

test: lint system-packages
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# Every benchmark in bench/ in turn (those present), then a summary: bench/run_all.py.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
