"""Password guessing is throttled on the sign-in page, the admin's and the token endpoint:
failures per account and address, and per account; never successes, and never a whole
shared address."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from claimsdb import signin

from .support import make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache")]

LOGIN = "/accounts/login/"
TOKEN = "/api/v1/auth/token/"
OFFICE = "203.0.113.7"
ELSEWHERE = "198.51.100.9"


@pytest.fixture
def user(db):
    return make_user("analyst", "analyst")


def sign_in(client, username: str, password: str, address: str = OFFICE):
    return client.post(LOGIN, {"username": username, "password": password}, REMOTE_ADDR=address)


def token(username: str, password: str, address: str = OFFICE):
    return APIClient().post(
        TOKEN, {"username": username, "password": password}, format="json", REMOTE_ADDR=address
    )


def test_the_right_password_is_refused_after_too_many_wrong_ones(client, user, settings):
    for _ in range(settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS):
        assert sign_in(client, "analyst", "wrong").status_code == 200
    response = sign_in(client, "analyst", "pw-analyst")
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many failed sign-in attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    # the same account from another address is not paused (yet)
    assert sign_in(client, "analyst", "pw-analyst", ELSEWHERE).status_code == 302


def test_the_lockout_ends_with_its_window(client, user, settings, monkeypatch):
    for _ in range(settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS):
        sign_in(client, "analyst", "wrong")
    assert sign_in(client, "analyst", "pw-analyst").status_code == 429
    later = signin.time.time() + settings.SIGNIN_LOCKOUT_SECONDS + 1
    monkeypatch.setattr(signin.time, "time", lambda: later)
    cache.clear()  # the cache's own expiry, which the test's clock does not move
    assert sign_in(client, "analyst", "pw-analyst").status_code == 302


def test_guessing_from_many_addresses_pauses_the_account_everywhere(client, user, settings):
    for i in range(settings.SIGNIN_FAILURES_PER_ACCOUNT):
        sign_in(client, "analyst", "wrong", f"192.0.2.{i}")
    assert sign_in(client, "analyst", "pw-analyst", ELSEWHERE).status_code == 429


def test_a_shared_address_does_not_lock_out_its_other_users(client, user, settings):
    """Someone behind the office's address guesses at many accounts, and at the token
    endpoint: the analyst behind the same address still signs in, on the page and the API."""
    for i in range(3 * settings.SIGNIN_FAILURES_PER_ACCOUNT):
        sign_in(client, f"someone{i % 7}", "guess")
        token(f"someone{i % 7}", "guess")
    assert sign_in(client, "analyst", "pw-analyst").status_code == 302
    assert token("analyst", "pw-analyst").status_code == 200


def test_successful_sign_ins_are_never_throttled(user, settings):
    for _ in range(3 * settings.SIGNIN_FAILURES_PER_ACCOUNT):
        assert token("analyst", "pw-analyst").status_code == 200


def test_a_success_clears_the_failures_from_that_address(client, user, settings):
    for _ in range(3):
        limit = settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS - 1
        for _ in range(limit):
            sign_in(client, "analyst", "wrong")
        assert sign_in(client, "analyst", "pw-analyst").status_code == 302
        client.logout()


def test_the_token_endpoint_pauses_a_guessed_account(user, settings):
    for _ in range(settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS):
        assert token("analyst", "wrong").status_code == 400
    response = token("analyst", "pw-analyst")
    assert response.status_code == 429
    assert [e["code"] for e in response.json()["errors"]] == ["signin.throttled"]
    assert int(response["Retry-After"]) > 0
    # user names differ only in case: the same account
    assert token("ANALYST", "pw-analyst").status_code == 429


def test_the_admin_sign_in_is_throttled_too(client, settings):
    admin = make_user("boss", None)
    admin.is_staff = admin.is_superuser = True
    admin.save()
    for _ in range(settings.SIGNIN_FAILURES_PER_ACCOUNT_AND_ADDRESS):
        client.post("/admin/login/", {"username": "boss", "password": "x"}, REMOTE_ADDR=OFFICE)
    client.post("/admin/login/", {"username": "boss", "password": "pw-boss"}, REMOTE_ADDR=OFFICE)
    assert "_auth_user_id" not in client.session
