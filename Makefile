# claimsdb — set-up, run, test. Needs only python3 on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

.PHONY: install run serve worker test test-sqlite test-postgres check format-check lint types \
	migrations-check hooks bench bench-scale bench-import clean

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

# The production server: gunicorn with DEBUG off, on PostgreSQL (docs/operations.md).
# Settings come from the environment; these defaults suit one machine. SECRET_KEY, if not
# set, is made once and kept in var/secret_key. Behind a TLS proxy; to try it over plain
# HTTP on your own machine: SECURE_SSL_REDIRECT=0 SECURE_COOKIES=0 make serve
serve: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/claimsdb
serve: export ALLOWED_HOSTS ?= 127.0.0.1,localhost
serve: install
	@mkdir -p var && test -s var/secret_key || \
	  (umask 077 && $(BIN)/python -c "import secrets; print(secrets.token_urlsafe(50))" > var/secret_key)
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}" $(BIN)/python manage.py create_database
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}" $(BIN)/python manage.py migrate --noinput
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}" $(BIN)/python manage.py collectstatic --noinput -v 0
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}" exec $(BIN)/gunicorn -c gunicorn.conf.py

# The background-job worker (large imports), beside make serve, with the same settings.
worker: export DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/claimsdb
worker: install
	SECRET_KEY="$${SECRET_KEY:-$$(cat var/secret_key)}" exec $(BIN)/python manage.py db_worker

# The whole suite: SQLite by default, PostgreSQL when DATABASE_URL points at one. It runs
# in one worker process per core (pytest-xdist; each worker has its own test database, and
# an idle worker takes tests queued for a busy one);
# TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# Everything CI checks except the suites, each step as CI runs it (`make -k check` to see
# every failure, not just the first). Under half a minute from a fresh clone, less once mypy
# has its cache (.mypy_cache):
#   format-check      the tree is as `ruff format` writes it (`ruff format .` to fix)
#   lint              `ruff check` under pyproject.toml's rules, unused noqa comments included
#   types             mypy over the modules pyproject.toml's [tool.mypy] `files` lists; that
#                     list is the one place it is kept, and a module joins it once annotated
#   migrations-check  the models need no migration that has not been written
# `make hooks` installs git hooks (.pre-commit-config.yaml) that run these on each commit:
# ruff's own hooks, which fix what they can (re-stage and commit again), then the type and
# migration checks through this Makefile.
check: format-check lint types migrations-check

format-check: install
	$(BIN)/ruff format --check .

lint: install
	$(BIN)/ruff check .

types: install
	$(BIN)/mypy

# On a throwaway in-memory database, so that the check neither creates nor reads one.
migrations-check: install
	DJANGO_SETTINGS_MODULE=claimsdb.test_settings DATABASE_URL=sqlite:///:memory: \
	  $(BIN)/python manage.py makemigrations --check --dry-run

hooks: install
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/pre-commit install

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

# The live API against its OpenAPI schema: schemathesis's examples, coverage, fuzzing and
# stateful phases on a fresh demo database (docs/limits.md).
schemathesis: install
	.ci/schemathesis
.PHONY: schemathesis
