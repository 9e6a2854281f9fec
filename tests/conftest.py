"""Shared fixtures: users and clients in each role, the seed knowledge base, and the markers.

Three markers sort the suite (pyproject.toml registers them), and ``make test`` runs all:

- ``browser``: the Playwright tests of tests/browser (``-m "not browser"`` leaves them out);
- ``postgres``: tests of what only PostgreSQL does, skipped on any other database;
- ``slow``: the few tests that take longest (``-m "not slow"`` for a quick run).

The helpers these fixtures are made of are in tests/support.py.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.db import connection, transaction
from django.test import Client

from claimsdb.services import bundle_load
from claimsdb.services.permissions import ROLES

from .support import approve_all, load_seed_bundle, make_user, signed_in


def pytest_collection_modifyitems(config, items):
    if connection.vendor == "postgresql":
        return
    for item in items:
        marker = item.get_closest_marker("postgres")
        if marker is not None:
            reason = marker.kwargs.get("reason", "what it tests exists on PostgreSQL only")
            item.add_marker(pytest.mark.skip(reason=reason))


# --- users in each role -------------------------------------------------------------------


@pytest.fixture
def viewer(db) -> User:
    return make_user("viewer", "viewer")


@pytest.fixture
def analyst(db) -> User:
    return make_user("analyst", "analyst")


@pytest.fixture
def reviewer(db) -> User:
    return make_user("reviewer", "reviewer")


@pytest.fixture
def nobody(db) -> User:
    """Signed in, but in no role."""
    return make_user("nobody", None)


@pytest.fixture
def analyst_client(seeded, analyst) -> Client:
    """The analyst's browser session, over the seed."""
    return signed_in(analyst)


@pytest.fixture
def reviewer_client(seeded, reviewer) -> Client:
    """The reviewer's browser session, over the seed."""
    return signed_in(reviewer)


# --- the seed ---------------------------------------------------------------------------


@pytest.fixture
def seed_bundle() -> dict:
    return load_seed_bundle()


@pytest.fixture
def seeded(db, reviewer, seed_bundle):
    """The seed fixture loaded through the services, and approved by another reviewer, as
    ``make run`` loads it (docs/review.md)."""
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    approve_all()
    return seed_bundle


@pytest.fixture(scope="module")
def module_seed(django_db_setup, django_db_blocker):
    """The seed, loaded once per test module through the services (by the user ``seeder``,
    a reviewer).

    It is loaded inside a transaction that is rolled back when the module is done; each
    test runs in a savepoint inside it (pytest-django's own), so what one test writes is
    gone before the next, and other modules never see it. A module uses it in place of
    ``seeded`` by overriding that fixture.
    """
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            seeder = make_user("seeder", "reviewer")
            bundle = load_seed_bundle()
            bundle_load(user=seeder, bundle=copy.deepcopy(bundle), summary="Seed")
            approve_all()
            yield bundle
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def roles_kept(django_db_setup, django_db_blocker):
    """Puts the role groups back after a transactional test's flush (set up before, so torn
    down after, ``transactional_db``), for the tests that follow."""
    yield
    with django_db_blocker.unblock():
        for role in ROLES:
            Group.objects.get_or_create(name=role)


# --- state outside the database -----------------------------------------------------------


@pytest.fixture
def empty_cache():
    """The cache, where throttles and sign-in failures are counted, empty before and after."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def spool(settings, tmp_path) -> Path:
    """The folder dry runs and queued imports keep their files in: the test's own."""
    settings.IMPORT_SPOOL_DIR = str(tmp_path / "spool")
    return Path(settings.IMPORT_SPOOL_DIR)
