"""A signed-in request's session and user, each read by one statement put together once
(claimsdb/sessions.py, ``signin.ThrottledModelBackend.get_user``): the same answers as
Django's own reads — an expired, unknown or signed-out session is nobody's, a deactivated or
deleted user is signed out, a changed password signs out the other sessions — and the
user's role comes with the user."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from claimsdb import access
from claimsdb.sessions import SessionStore
from claimsdb.signin import ThrottledModelBackend

from .support import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

LOGIN = "/accounts/login/"
IMPORTS = "/imports/"  # a page for signed-in users only


@pytest.fixture
def analyst(db):
    return make_user("analyst", "analyst")


def signed_in(client, username: str = "analyst"):
    response = client.post(LOGIN, {"username": username, "password": f"pw-{username}"})
    assert response.status_code == 302
    return client


def test_settings_use_the_store():
    from django.conf import settings

    assert settings.SESSION_ENGINE == "claimsdb.sessions"


def test_a_signed_in_request_reads_its_session_and_user_once_each(client, analyst):
    signed_in(client)
    client.get(IMPORTS)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(IMPORTS)
    assert response.status_code == 200
    assert response.context["user"].username == "analyst"
    session_table, user_table = Session._meta.db_table, analyst._meta.db_table
    reads = [q["sql"] for q in captured if session_table in q["sql"] or user_table in q["sql"]]
    assert len(reads) == 2, reads
    assert reads[0].startswith("SELECT") and session_table in reads[0]
    # the user's role is in the user's query: no query of its own for it
    assert "auth_group" in reads[1] and "FROM" in reads[1]
    assert access.role(response.context["user"]) == "analyst"


def test_the_session_store_gives_what_django_stored(analyst):
    store = SessionStore()
    store["answer"] = {"figure": 155, "case": "GLM-5.3"}
    store.create()
    assert SessionStore(store.session_key).load() == {"answer": {"figure": 155, "case": "GLM-5.3"}}


def test_an_expired_session_is_nobodys(client, analyst):
    signed_in(client)
    key = client.session.session_key
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - dt.timedelta(seconds=1)
    )
    store = SessionStore(key)
    assert store.load() == {}
    assert store.session_key is None  # a new key is made when it is saved
    response = client.get(IMPORTS)
    assert response.status_code == 302 and response["Location"].startswith(LOGIN)


@pytest.mark.parametrize("key", ["", "short", "x" * 32, "<script>'--"])
def test_an_unknown_or_malformed_key_reads_as_no_session(key):
    store = SessionStore(key)
    assert store.load() == {}
    assert store.session_key is None


def test_signing_out_ends_the_session(client, analyst):
    signed_in(client)
    key = client.session.session_key
    client.post("/accounts/logout/")
    assert SessionStore(key).load() == {}
    assert client.get(IMPORTS).status_code == 302


def test_a_deactivated_or_deleted_user_is_signed_out(client, analyst):
    signed_in(client)
    assert client.get(IMPORTS).status_code == 200
    analyst.is_active = False
    analyst.save()
    assert client.get(IMPORTS).status_code == 302
    analyst.is_active = True
    analyst.save()
    signed_in(client)
    analyst.delete()
    assert client.get(IMPORTS).status_code == 302


def test_a_changed_password_signs_out_the_other_sessions(client, analyst):
    signed_in(client)
    assert client.get(IMPORTS).status_code == 200
    analyst.set_password("a new and longer password")
    analyst.save()
    assert client.get(IMPORTS).status_code == 302


def test_the_backend_reads_the_user_with_their_role(analyst):
    backend = ThrottledModelBackend()
    user = backend.get_user(str(analyst.pk))  # sessions keep the key as a string
    assert user == analyst
    assert user.last_login == analyst.last_login and user.password == analyst.password
    assert user.is_active is True
    with CaptureQueriesContext(connection) as captured:
        assert access.role(user) == "analyst"
    assert len(captured) == 0
    nobody = make_user("nobody", None)
    assert access.role(backend.get_user(nobody.pk)) is None
    assert backend.get_user(10**9) is None
    assert backend.get_user("not a key") is None


def test_the_session_keeps_the_user_key(client, analyst):
    signed_in(client)
    assert client.session[SESSION_KEY] == str(analyst.pk)


def test_the_reads_are_put_together_once(client, analyst, monkeypatch):
    """After the first request, the session's and the user's reads compile no query."""
    from django.db.models.sql.compiler import SQLCompiler

    signed_in(client)
    key = client.session.session_key
    backend = ThrottledModelBackend()
    backend.get_user(analyst.pk)
    SessionStore(key).load()
    compiled = []
    original = SQLCompiler.as_sql
    monkeypatch.setattr(
        SQLCompiler,
        "as_sql",
        lambda self, *a, **k: compiled.append(self) or original(self, *a, **k),
    )
    assert backend.get_user(analyst.pk) == analyst
    assert SessionStore(key).load()[SESSION_KEY] == str(analyst.pk)
    assert compiled == []
