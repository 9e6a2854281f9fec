"""While the database or a replica cannot be reached: 503 with Retry-After, never a 500,
and the replica's reads answered by the primary without a failed one (docs/operations.md).
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection, connections
from django.test import Client

from claimsdb import replicas

from .support import body, publish, run_in_thread, signed_in, token_client

pytestmark = pytest.mark.django_db

# A port of this range that nothing listens on, and a directory that does not exist: a
# database there cannot be connected to.
DEAD_PORT = "8399"
DEAD_SQLITE = "/nonexistent-claimsdb/unreachable.sqlite3"

PAGES = ["/cases/", "/cases/CP22-003/", "/sources/", "/releases/", "/?q=rdma"]
ENDPOINTS = ["/api/v1/cases/", "/api/v1/cases/CP22-003/", "/api/v1/releases/"]


def unreachable(settings_dict: dict) -> dict:
    """``settings_dict`` pointed at a database that cannot be reached."""
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return {**settings_dict, "NAME": DEAD_SQLITE}
    return {**settings_dict, "HOST": "127.0.0.1", "PORT": DEAD_PORT}


def assert_unavailable(response, path: str) -> None:
    assert response.status_code == 503, (path, response.status_code)
    assert response["Retry-After"] == "5"
    if path.startswith("/api/"):
        assert response["Content-Type"] == "application/json"
        assert [e["code"] for e in body(response)["errors"]] == ["server.unavailable"]
    else:
        assert response["Content-Type"].startswith("text/html")
        assert b"cannot reach its database" in response.content


def failing_queries(execute, sql, params, many, context):
    raise OperationalError("server closed the connection unexpectedly")


def test_every_request_gets_503_while_every_query_fails(seeded, reviewer):
    visitor = Client(raise_request_exception=False)
    reader = signed_in(reviewer, raise_request_exception=False)
    tool = token_client(reviewer)
    tool.raise_request_exception = False
    with connection.execute_wrapper(failing_queries):
        for path in PAGES + ENDPOINTS:
            assert_unavailable(visitor.get(path), path)
            assert_unavailable(reader.get(path), path)
        for path in ENDPOINTS:
            assert_unavailable(tool.get(path), path)
        path = "/accounts/login/"
        assert_unavailable(visitor.post(path, {"username": "a", "password": "b"}), path)
        path = "/api/v1/cases/CP22-003/"
        assert_unavailable(tool.patch(path, {"title": "x"}, format="json"), path)


def test_an_error_that_is_not_the_database_going_away_is_still_a_500(seeded):
    visitor = Client(raise_request_exception=False)
    with connection.execute_wrapper(_raising(ValueError("a bug"))):
        for path in [PAGES[0], ENDPOINTS[0]]:
            response = visitor.get(path)
            assert response.status_code == 500, path
            assert "Retry-After" not in response


def _raising(exc):
    def wrapper(execute, sql, params, many, context):
        raise exc

    return wrapper


def test_a_database_that_cannot_be_connected_to_gets_503(seeded):
    """A real connection attempt to a database that is not there, in a thread of its own
    (connections are per thread), as a worker whose database went away would make."""
    answers: dict[str, object] = {}

    def serve() -> None:
        own = connections["default"]
        own.settings_dict = unreachable(own.settings_dict)
        try:
            client = Client(raise_request_exception=False)
            for path in ["/cases/", "/api/v1/cases/"]:
                answers[path] = client.get(path)
            answers["/accounts/login/"] = client.post(
                "/accounts/login/", {"username": "reviewer", "password": "x"}
            )
        finally:
            own.close()

    worker = threading.Thread(target=serve)
    worker.start()
    worker.join(60)
    assert set(answers) == {"/cases/", "/api/v1/cases/", "/accounts/login/"}
    for path, response in answers.items():
        assert_unavailable(response, path)


# --- a replica that dies between two health checks -----------------------------------------

ALIAS = "replica1"


@pytest.fixture(scope="module")
def dead_replica_alias(django_db_setup):
    """The alias of a replica that cannot be reached, attached before the test's database
    set-up sees the connections (a module fixture runs first). A test mirror of the
    default database, so that a transactional test does not flush it."""
    config = unreachable(connection.settings_dict)
    config["TEST"] = {"MIRROR": "default"}
    configured = connections.configure_settings(
        {"default": dict(connection.settings_dict), ALIAS: config}
    )
    connections.settings[ALIAS] = configured[ALIAS]
    yield ALIAS
    connections[ALIAS].close()
    del connections[ALIAS]
    del connections.settings[ALIAS]


@pytest.fixture
def dead_replica(dead_replica_alias, settings):
    """That replica taken for healthy: as a replica looks in the second after it died,
    before its next check."""
    settings.DATABASE_REPLICAS = [ALIAS]
    settings.DATABASE_ROUTERS = ["claimsdb.replicas.ReplicaRouter"]
    settings.REPLICA_CHECK_SECONDS = 3600
    replicas.forget_replica_health()
    replicas._health[ALIAS] = replicas._Health(True, time.monotonic())
    try:
        yield ALIAS
    finally:
        replicas.forget_replica_health()


@pytest.mark.parametrize("first", [PAGES[0], ENDPOINTS[0]])
# reads go to a replica only outside a transaction
@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_when_a_replica_dies_no_read_fails(
    roles_kept, seeded, reviewer, dead_replica, first, caplog
):
    publish(reviewer, notes="Release 1")
    visitor = Client(raise_request_exception=False)
    first_response = visitor.get(first)
    assert first_response.status_code == 200, first
    assert not replicas._health[ALIAS].usable  # marked failed by the read that failed
    for path in PAGES + ENDPOINTS:
        assert visitor.get(path).status_code == 200, path
    failures = [r for r in caplog.records if "replica replica1 failed" in r.getMessage()]
    assert len(failures) == 1


# reads go to a replica only outside a transaction
@pytest.mark.django_db(transaction=True, databases=["default", ALIAS])
def test_when_a_replica_dies_no_read_fails_under_the_asgi_server(
    roles_kept, seeded, reviewer, dead_replica
):
    """The same through the handler make serve runs (claimsdb/asgi.py): the replica
    router's per-request state follows the request into its thread and back."""

    from claimsdb import asgi

    from .test_asgi import Exchange, serve

    publish(reviewer, notes="Release 1")
    handler = asgi.ClaimsdbASGIHandler()

    async def read(path: str) -> int:
        exchange = Exchange()
        await serve(handler, path, exchange)
        return exchange.status

    for path in [PAGES[0], *ENDPOINTS, PAGES[1]]:
        assert run_in_thread(read(path)) == 200, path
    health = replicas._health[ALIAS]
    assert not health.usable and health.reason == "a read failed (HTTP 503)"
