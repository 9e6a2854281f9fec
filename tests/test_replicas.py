"""Read replicas against a real PostgreSQL streaming replica.

Needs ``CLAIMSDB_TEST_REPLICA_URL``: a hot standby of the cluster the suite runs on (CI
starts one with ``.ci/start-replica``); the test database the suite creates on the primary
streams to it like any other. Skipped without it.
"""

from __future__ import annotations

import copy
import fcntl
import json
import logging
import os
import re
import tempfile
import time

import pytest
from django.db import connection, connections
from django.test import Client
from django.test.utils import CaptureQueriesContext

from claimsdb import replicas
from claimsdb.models import Case
from claimsdb.records import record_document
from claimsdb.services import bundle_load, case_update
from claimsdb.settings import database_from_url

from .support import approve_all, publish, signed_in, token_client

REPLICA_URL = os.environ.get("CLAIMSDB_TEST_REPLICA_URL", "")
CASE = "CP22-003"
ALIAS = "replica1"

pytestmark = [
    pytest.mark.skipif(not REPLICA_URL, reason="CLAIMSDB_TEST_REPLICA_URL names no replica"),
    pytest.mark.postgres(reason="read replicas are PostgreSQL streaming replicas"),
    # committed data only: the replica never sees a test's rolled-back transaction
    pytest.mark.django_db(transaction=True, databases=["default", "replica1"]),
]


def _attach(url: str) -> None:
    config = database_from_url(url)
    config["NAME"] = connection.settings_dict["NAME"]  # the test database, streamed over
    config["TEST"] = {"MIRROR": "default"}
    configured = connections.configure_settings(
        {"default": dict(connection.settings_dict), ALIAS: config}
    )
    connections.settings[ALIAS] = configured[ALIAS]


def _detach() -> None:
    if ALIAS in connections.settings:
        connections[ALIAS].close()
        del connections[ALIAS]
        del connections.settings[ALIAS]


@pytest.fixture(scope="module", autouse=True)
def replica_alias(django_db_setup):
    """Attach the replica as ``replica1`` before each test's database set-up sees the list
    of connections (a module fixture runs before the per-test one). It is a test mirror of
    the default database, so transactional tests do not try to flush the read-only
    replica; its connection still goes to the replica."""
    _attach(REPLICA_URL)
    yield
    _detach()


@pytest.fixture
def replica_to_itself():
    """The replica alone: its replay is paused and resumed for the whole cluster, so the
    suite's other workers (pytest-xdist) wait for this test before using it."""
    path = os.path.join(tempfile.gettempdir(), "claimsdb-test-replica.lock")
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def replica(replica_to_itself, settings):
    settings.DATABASE_REPLICAS = [ALIAS]
    settings.DATABASE_ROUTERS = ["claimsdb.replicas.ReplicaRouter"]
    settings.REPLICA_CHECK_SECONDS = 0  # look at the replica's state on every read
    settings.REPLICA_MAX_LAG_SECONDS = 3600
    replicas.forget_replica_health()
    try:
        yield connections[ALIAS]
    finally:
        _resume_replay()
        replicas.forget_replica_health()


def _resume_replay() -> None:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_is_wal_replay_paused()")
        if cursor.fetchone()[0]:
            cursor.execute("SELECT pg_wal_replay_resume()")


def _caught_up() -> None:
    """Wait until the replica has replayed everything the primary has written."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()")
        (lsn,) = cursor.fetchone()
    for _ in range(200):
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [lsn])
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError("the replica did not catch up within 10 s")


def _pause_replay() -> None:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_wal_replay_pause()")


def _released_seed(reviewer, seed_bundle) -> None:
    bundle_load(user=reviewer, bundle=copy.deepcopy(seed_bundle), summary="Seed")
    publish(reviewer, notes="Release 1")


def _retitle(user, title: str, *, publish_as=None) -> None:
    document = record_document("case", CASE)
    document["title"] = title
    case_update(user=user, key=CASE, document=document, summary="Retitle")
    if publish_as is not None:
        publish(publish_as, notes=f"Publish {title}")


def _reads(client: Client, path: str):
    """GET ``path``; the queries each database served."""
    with (
        CaptureQueriesContext(connection) as primary,
        CaptureQueriesContext(connections[ALIAS]) as replica,
    ):
        response = client.get(path)

    def domain(queries):
        return [q["sql"] for q in queries if '"claimsdb_' in q["sql"]]

    return response, domain(primary.captured_queries), len(domain(replica.captured_queries))


def test_public_reads_are_served_by_the_replica(replica, reviewer, seed_bundle):
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    for path in (f"/cases/{CASE}/", "/cases/", f"/api/v1/cases/{CASE}/", "/releases/"):
        response, on_primary, on_replica = _reads(Client(), path)
        assert response.status_code == 200, path
        assert on_replica > 0, path
        assert on_primary == [], path


def test_a_paused_replica_shows_what_it_has_replayed(replica, reviewer, seed_bundle):
    """Proof that the page really came from the replica: while its replay is paused, a
    newer release published on the primary is not there yet."""
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    _pause_replay()
    old = Case.objects.get(key=CASE).title
    _retitle(reviewer, "Retitled on the primary", publish_as=reviewer)
    page = Client().get(f"/cases/{CASE}/").content.decode()
    assert old in page and "Retitled on the primary" not in page
    _resume_replay()
    _caught_up()
    assert "Retitled on the primary" in Client().get(f"/cases/{CASE}/").content.decode()


def test_writes_and_the_writers_next_reads_use_the_primary(replica, reviewer, analyst, seed_bundle):
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    writer = signed_in(analyst)
    with CaptureQueriesContext(connections[ALIAS]) as during_write:
        response = writer.generic(
            "PATCH",
            f"/api/v1/cases/{CASE}/?summary=Retitle",
            json.dumps({"title": "Written just now"}),
            content_type="application/merge-patch+json",
        )
    assert response.status_code == 200, response.content
    assert len(during_write.captured_queries) == 0
    assert replicas.WROTE_COOKIE in response.cookies
    # search is served by a replica for everyone else; the writer reads the primary
    response, _, on_replica = _reads(writer, "/?q=Written")
    assert response.status_code == 200 and on_replica == 0
    # the matched word is highlighted: compare the page's text
    assert "Written just now" in re.sub(r"<[^>]+>", "", response.content.decode())
    _caught_up()
    _, _, on_replica = _reads(Client(), "/?q=SGLang")
    assert on_replica > 0


def test_edit_forms_and_working_state_never_come_from_a_lagging_replica(
    replica, reviewer, analyst, seed_bundle
):
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    _pause_replay()
    _retitle(analyst, "Only on the primary")
    editor = signed_in(analyst)
    for path in (f"/cases/{CASE}/edit/", f"/cases/{CASE}/", f"/api/v1/cases/{CASE}/"):
        response, _, on_replica = _reads(editor, path)
        assert response.status_code == 200, path
        assert "Only on the primary" in response.content.decode(), path
        assert on_replica == 0, path


def test_a_replica_too_far_behind_is_skipped(replica, reviewer, seed_bundle, settings):
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    _pause_replay()
    _retitle(reviewer, "Newer than the replica", publish_as=reviewer)
    time.sleep(1.2)
    settings.REPLICA_MAX_LAG_SECONDS = 1
    response, _, on_replica = _reads(Client(), f"/cases/{CASE}/")
    assert on_replica == 0  # only its health was asked
    assert "Newer than the replica" in response.content.decode()


def test_a_replica_that_is_down_falls_back_to_the_primary(replica, reviewer, seed_bundle, caplog):
    _released_seed(reviewer, seed_bundle)
    down = connections[ALIAS]
    real = dict(down.settings_dict)
    down.close()
    down.settings_dict = {**real, "HOST": "127.0.0.1", "PORT": "9"}  # nothing listens there
    try:
        with (
            caplog.at_level(logging.WARNING, logger="claimsdb.replicas"),
            CaptureQueriesContext(connection) as primary,
        ):
            response = Client().get(f"/cases/{CASE}/")
        assert response.status_code == 200
        assert any('"claimsdb_' in q["sql"] for q in primary.captured_queries)
        assert any("unreachable" in r.getMessage() for r in caplog.records)
    finally:
        down.close()
        down.settings_dict = real


def test_a_token_that_wrote_reads_its_writes_on_every_worker(
    replica, reviewer, seed_bundle, settings
):
    """A tool publishing with a token has no cookie jar: its next reads of the releases,
    pages that go to a replica for everyone, must still show what it published."""
    _released_seed(reviewer, seed_bundle)
    _caught_up()
    _pause_replay()  # the replica is held behind from here on
    _retitle(reviewer, "Retitled for release 2")
    approve_all()  # releases publish approved revisions: a second reviewer approves it
    settings.REPLICA_STICKY_SECONDS = 2
    tool = token_client(reviewer)
    published = tool.post("/api/v1/releases/", {"notes": "Release 2"}, format="json")
    assert published.status_code == 201, published.content
    number = published.json()["number"]

    def read(client, path):
        client.cookies.clear()  # no cookie jar: nothing but the token carries over
        return _reads(client, path)

    for path in ("/api/v1/releases/", f"/api/v1/releases/{number}/"):
        response, _, on_replica = read(tool, path)
        assert response.status_code == 200, (path, response.content)
        assert on_replica == 0, path
    listed = read(tool, "/api/v1/releases/")[0].json()["results"]
    assert [r["number"] for r in listed][:1] == [number]
    response, _, on_replica = read(tool, f"/api/v1/releases/{number}/bundle.json")
    assert response.status_code == 200 and on_replica == 0
    # another worker process sees the same pin: it is kept in the database's cache table
    replicas.forget_replica_health()
    response, _, on_replica = read(token_client(reviewer), f"/api/v1/releases/{number}/")
    assert response.status_code == 200 and on_replica == 0

    # everyone else reads the replica, which has not seen release 2 yet
    response, _, on_replica = read(Client(), f"/api/v1/releases/{number}/")
    assert on_replica > 0 and response.status_code == 404
    # and the pin lasts the sticky window, no longer
    time.sleep(2.1)
    response, _, on_replica = read(tool, f"/api/v1/releases/{number}/")
    assert on_replica > 0 and response.status_code == 404
