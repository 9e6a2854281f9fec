"""Browser tests: Playwright's sync API driving Debian's Chromium against ``live_server``.

They carry the ``browser`` marker: ``pytest -m "not browser"`` runs the suite without them.
They are skipped only when /usr/bin/chromium is missing and CI is not set; in CI they
always run (CI installs Debian's ``chromium`` package). Playwright never downloads a browser
here: it is pointed at the system one. Their page helpers (signing in, artifacts) are in
tests/support.py.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from
# a thread with a running loop unless told otherwise (as the pytest-playwright docs suggest
# for Django). The live server itself runs in its own thread, unaffected.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m selects by marker
def pytest_collection_modifyitems(config, items):
    """Every test here is marked ``browser`` (``-m "not browser"`` leaves them out), and
    skipped where there is no Chromium to drive."""
    runnable = CHROMIUM.exists() or bool(os.environ.get("CI"))
    skip = pytest.mark.skip(reason="no /usr/bin/chromium (apt-get install chromium)")
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.browser)
            if not runnable:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def seeded_site(django_db_serialized_rollback, transactional_db, live_server):
    """The seed loaded through the services and approved, and one user per role (password
    pw-<name>).

    The live server needs committed data, so these tests flush the database afterwards;
    serialized rollback puts back what the migrations wrote (the role groups, the ledger
    head) for the tests that follow.
    """
    from django.contrib.auth.models import Group

    from claimsdb.services import bundle_load
    from tests.support import approve_all, load_seed_bundle, make_user

    for role in ("viewer", "analyst", "reviewer"):
        Group.objects.get_or_create(name=role)

    reviewer = make_user("reviewer", "reviewer")
    make_user("analyst", "analyst")
    make_user("viewer", "viewer")
    bundle_load(user=reviewer, bundle=copy.deepcopy(load_seed_bundle()), summary="Seed")
    approve_all()  # by a second reviewer, as make run's seed is (docs/review.md)
    return live_server.url


@pytest.fixture
def new_page(browser):
    """Pages in fresh browser contexts (separate cookies), closed after the test."""
    contexts = []

    def make(*, width: int = 1280, height: int = 900, javascript: bool = True):
        context = browser.new_context(
            viewport={"width": width, "height": height}, java_script_enabled=javascript
        )
        contexts.append(context)
        page = context.new_page()
        page.csp_errors = []
        page.on(
            "console",
            lambda message: (
                page.csp_errors.append(message.text)
                if "Content Security Policy" in message.text
                else None
            ),
        )
        return page

    yield make
    for context in contexts:
        context.close()
