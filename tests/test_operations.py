"""Running claimsdb as a service: probes, the request log, the production server."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from django.db import connection
from django.db.utils import OperationalError
from django.test import override_settings

from claimsdb.web import health

from .support import ROOT, token_client


@pytest.mark.django_db
def test_healthz_answers_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "status": "ok"}
    assert response["Cache-Control"] == "no-store"


@pytest.mark.django_db
def test_readyz_answers_when_migrated(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


@pytest.mark.django_db
@override_settings(SECURE_SSL_REDIRECT=True, ALLOWED_HOSTS=["claimsdb.example"])
def test_probes_need_no_https_and_no_known_host(client):
    # a load balancer probes the app server by address, over plain HTTP
    for path in ("/healthz", "/readyz/"):
        response = client.get(path, HTTP_HOST="10.1.2.3:8000")
        assert response.status_code == 200, path
    # everything else is still redirected and host-checked
    assert client.get("/cases/", HTTP_HOST="claimsdb.example").status_code == 301
    assert client.get("/cases/", HTTP_HOST="10.1.2.3:8000").status_code == 400


@pytest.mark.django_db
def test_healthz_is_503_with_its_reason_when_the_database_is_down(client, monkeypatch):
    class Broken:
        def __enter__(self):
            raise OperationalError("connection refused")

        def __exit__(self, *exc):
            return False

    class BrokenConnection:
        def cursor(self):
            return Broken()

    monkeypatch.setattr(health, "connections", {"default": BrokenConnection()})
    for path in ("/healthz", "/readyz"):
        response = client.get(path)
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "unavailable"
        assert "connection refused" in body["reason"]


@pytest.mark.django_db
def test_readyz_is_503_while_migrations_are_pending(client, monkeypatch):
    monkeypatch.setattr(health, "pending_migrations", lambda: ["claimsdb.0099_future"])
    assert client.get("/healthz").status_code == 200  # alive, but not ready
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["pending_migrations"] == ["claimsdb.0099_future"]
    assert "migrate" in response.json()["reason"]


@pytest.mark.django_db
def test_probes_refuse_writes(client):
    response = client.post("/healthz")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_one_log_line_per_request_with_id_user_status_and_duration(client, viewer, caplog):
    client.force_login(viewer)
    with caplog.at_level(logging.INFO, logger="claimsdb.request"):
        response = client.get("/cases/", HTTP_X_REQUEST_ID="trace-42")
    assert response["X-Request-ID"] == "trace-42"
    lines = [r for r in caplog.records if r.name == "claimsdb.request"]
    assert len(lines) == 1
    message = lines[0].getMessage()
    for part in ("id=trace-42", "method=GET", "path=/cases/", "status=200", "user=viewer"):
        assert part in message
    assert "duration_ms=" in message


@pytest.mark.django_db
def test_a_hostile_request_id_is_replaced_and_paths_stay_on_one_line(client, caplog):
    with caplog.at_level(logging.INFO, logger="claimsdb.request"):
        response = client.get("/nowhere%0Afake=1/", HTTP_X_REQUEST_ID="bad id\nforged")
    assert response["X-Request-ID"] != "bad id\nforged"
    assert len(response["X-Request-ID"]) == 32
    (line,) = [r.getMessage() for r in caplog.records if r.name == "claimsdb.request"]
    assert "\n" not in line and "user=-" in line and "status=404" in line


@pytest.mark.django_db
def test_errors_are_logged_with_traceback_and_request_id(client, viewer, monkeypatch, caplog):
    from claimsdb.web.views import lists

    def explode(*args, **kwargs):
        raise RuntimeError("boom in the case list")

    monkeypatch.setattr(lists, "render", explode)
    client.raise_request_exception = False
    client.force_login(viewer)
    with caplog.at_level(logging.INFO):
        response = client.get("/cases/", HTTP_X_REQUEST_ID="err-7")
    assert response.status_code == 500
    errors = [r for r in caplog.records if r.name == "django.request" and r.exc_info]
    assert errors and "boom in the case list" in str(errors[0].exc_info[1])
    assert getattr(errors[0], "request_id", None) == "err-7" or any(
        "err-7" in r.getMessage() for r in caplog.records if r.name == "claimsdb.request"
    )
    access = [r.getMessage() for r in caplog.records if r.name == "claimsdb.request"]
    assert any("id=err-7" in line and "status=500" in line for line in access)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_serve_runs_gunicorn_with_production_settings(tmp_path: Path):
    """The production server as ``make serve`` starts it: gunicorn, DEBUG off, migrations
    applied, /healthz answering, one access line per request on stdout."""
    gunicorn = Path(sys.executable).parent / "gunicorn"
    if not gunicorn.exists():
        pytest.skip("gunicorn is not installed in this environment")
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECURE_COOKIES")},
        "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
        "SECRET_KEY": "serve-test-" + "k" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "1",
        "BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": "1",
        "DJANGO_SETTINGS_MODULE": "claimsdb.settings",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(gunicorn), "-c", "gunicorn.conf.py"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            body = None
            for _ in range(100):
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                        body = json.loads(r.read())
                        break
                except OSError:
                    time.sleep(0.1)
            assert body == {"database": "ok", "status": "ok"}, log.read_text()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                assert r.status == 200
            # DEBUG is off: plain HTTP is redirected to HTTPS
            request = urllib.request.Request(f"http://127.0.0.1:{port}/cases/")
            opener = urllib.request.build_opener(_NoRedirect())
            try:
                opener.open(request, timeout=5)
                status = 200
            except urllib.error.HTTPError as exc:
                status = exc.code
            assert status == 301
        finally:
            server.terminate()
            server.wait(timeout=30)
    text = log.read_text()
    assert "Booting worker" in text
    assert "method=GET path=/cases/ status=301" in text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.django_db(transaction=True)  # no test transaction around it
def test_the_router_keeps_writes_accounts_and_transactions_on_the_primary(settings):
    from django.contrib.auth.models import User
    from django.db import transaction

    from claimsdb import replicas
    from claimsdb.models import Case

    settings.DATABASE_REPLICAS = ["replica1"]
    router = replicas.ReplicaRouter()
    token = replicas._replica_allowed.set(True)
    try:
        replicas._health["replica1"] = replicas._Health(True, time.monotonic() + 3600)
        assert router.db_for_read(Case) == "replica1"
        assert router.db_for_read(User) == "default"  # who the user is: always the primary
        with transaction.atomic():
            assert router.db_for_read(Case) == "default"  # a read inside a write
        assert router.db_for_write(Case) == "default"
        replicas._health["replica1"] = replicas._Health(False, time.monotonic() + 3600)
        assert router.db_for_read(Case) == "default"  # an unusable replica is skipped
    finally:
        replicas._replica_allowed.reset(token)
        replicas.forget_replica_health()
    assert router.db_for_read(Case) == "default"  # outside a request that allows it
    assert router.allow_migrate("default", "claimsdb") is True
    assert router.allow_migrate("replica1", "claimsdb") is False


@pytest.mark.django_db
def test_a_write_with_a_token_pins_that_token_to_the_primary(settings, seeded, analyst, viewer):
    """Read-your-writes for tools: no cookie jar, so the pin is kept in the cache that
    every worker process shares, under the token's hash, for REPLICA_STICKY_SECONDS."""
    from django.core.cache import cache
    from django.test import RequestFactory
    from django.urls import resolve
    from rest_framework.authtoken.models import Token

    from claimsdb import replicas

    settings.DATABASE_REPLICAS = ["replica1"]
    settings.REPLICA_STICKY_SECONDS = 1
    tool = token_client(analyst)
    key = Token.objects.get(user=analyst).key
    token_client(viewer)  # makes its token
    other_key = Token.objects.get(user=viewer).key

    def may_use_replica(token: str | None, path: str = "/api/v1/releases/") -> bool:
        headers = {"HTTP_AUTHORIZATION": f"Token {token}"} if token else {}
        request = RequestFactory().get(path, **headers)
        request.resolver_match = resolve(path)
        allowed = replicas._replica_allowed.set(False)
        try:
            replicas.ReplicaReadMiddleware(lambda r: None).process_view(request, None, (), {})
            return replicas._replica_allowed.get()
        finally:
            replicas._replica_allowed.reset(allowed)

    assert may_use_replica(key) and may_use_replica(None)
    response = tool.generic(
        "PATCH",
        "/api/v1/cases/CP22-003/?summary=Retitle",
        json.dumps({"title": "Written with a token"}),
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.content
    assert not may_use_replica(key)  # the releases, replica-safe for others, are not
    assert not may_use_replica(key, "/api/v1/releases/1/")
    assert may_use_replica(other_key) and may_use_replica(None)
    assert cache.get(replicas._token_pin_key(key)) is not None
    with connection.cursor() as cursor:  # the cache names the token by its hash only
        cursor.execute("SELECT cache_key, value FROM claimsdb_cache")
        assert not any(key in f"{name} {value}" for name, value in cursor.fetchall())
    # a refused credential pins nothing
    bad = token_client()
    bad.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    assert bad.post("/api/v1/releases/", {"notes": "x"}, format="json").status_code == 401
    assert may_use_replica("0" * 40)
    # the pin lasts the sticky window
    time.sleep(1.1)
    assert may_use_replica(key)
