# claimsdb — set-up, run, test. Needs only python3 on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

.PHONY: install run test test-sqlite test-postgres lint bench bench-scale bench-import clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

# The app with its seed data on the embedded SQLite database (var/claimsdb.sqlite3).
run: install
	DEBUG=1 $(BIN)/python manage.py migrate --noinput
	DEBUG=1 $(BIN)/python manage.py setup_demo
	@echo "claimsdb: http://127.0.0.1:$(PORT)/"
	DEBUG=1 $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# The whole suite: SQLite by default, PostgreSQL when DATABASE_URL points at one.
test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .

# Benchmarks run on PostgreSQL: DATABASE_URL, or the local server below. Each makes its own
# throwaway databases and drops them. `make bench-scale BENCH_ARGS=--quick` for a small run.
BENCH_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/claimsdb
BENCH_ENV := DATABASE_URL=$${DATABASE_URL:-$(BENCH_DATABASE_URL)}

bench: bench-scale bench-import

bench-scale: install
	$(BENCH_ENV) $(BIN)/python bench/scale.py $(BENCH_ARGS)

bench-import: install
	$(BENCH_ENV) $(BIN)/python bench/import.py

clean:
	rm -rf $(VENV) var *.egg-info
