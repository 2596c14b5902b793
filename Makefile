# Two entry points: `make serve` runs the lobby, `make test` runs every check.
# Both create .venv and install the project into it first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test lint bench clean browser compiler postgres balancer systemd

# Plugins only the tests load (tests/plugins/*, each a package of its own): installed apart, in
# $(TEST_SITE), which conftest.py puts on the path of the tests and of the processes they start.
# `make serve` and `make bench` run the lobby without them.
TEST_PLUGINS := $(wildcard tests/plugins/*/pyproject.toml)
TEST_SITE    := $(VENV)/test-plugins

$(STAMP): pyproject.toml $(TEST_PLUGINS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench,postgresql]'
	rm -rf $(TEST_SITE)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --target $(TEST_SITE) \
	  $(dir $(TEST_PLUGINS))
	touch $(STAMP)

serve: $(STAMP)
	$(BIN)/matchlobby serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy ratings_plugin server clients tests/plugins/streaks/matchlobby_streaks

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

# The power-cut test compiles an LD_PRELOAD shim (tests/reliability/syncrecord.c) with the
# machine's C compiler: install one on a clean machine (as root) when there is none.
compiler:
	@if ! command -v gcc >/dev/null 2>&1 && ! command -v cc >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev; \
	  else \
	    echo "note: no C compiler (as root: apt-get install gcc); the power-cut test will be skipped"; \
	  fi; \
	fi

# The storage, server, reliability and plugin tests run on PostgreSQL too: install it on a clean
# machine (as root); the suite starts a cluster of its own (tests/kit/testkit/postgres.py).
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && ! command -v pg_ctl >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	  else \
	    echo "note: PostgreSQL is missing (as root: apt-get install postgresql); its tests will be skipped"; \
	  fi; \
	fi

# The suite spread over two workers a core (pytest-xdist): most tests wait on sockets, child
# processes and timers, not on the CPU, so a second worker a core fills those waits.
# TEST_WORKERS=0 runs it in one process.
# One PostgreSQL cluster serves the whole run (tests/kit/testkit/session.py).
TEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) )))

# The several-servers test runs HAProxy from docs/haproxy.cfg: install it on a clean machine
# (as root).
balancer:
	@if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy; \
	  else \
	    echo "note: HAProxy is missing (as root: apt-get install haproxy); the balancer test will be skipped"; \
	  fi; \
	fi

# The packaging tests check deploy/matchlobby.service with systemd-analyze verify: install it
# on a clean machine (as root).
systemd:
	@if ! command -v systemd-analyze >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends systemd; \
	  else \
	    echo "note: systemd-analyze is missing (as root: apt-get install systemd); the unit's check will be skipped"; \
	  fi; \
	fi

test: lint browser compiler postgres balancer systemd
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

# Every benchmark in bench/ in turn (those present), then a summary: bench/run_all.py.
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
