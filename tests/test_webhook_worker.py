"""Webhooks sent by the real worker (``manage.py db_worker`` in a process of its own, on
PostgreSQL): a worker killed in the middle of a delivery loses nothing; the one started
after it sends the delivery, signed, with the same webhook-id."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from django.db import connection
from standardwebhooks import Webhook

from claimsdb.models import WebhookDelivery
from claimsdb.webhooks.subscriptions import subscription_create

from .support import ROOT, edit_case
from .webhook_receiver import receiving

pytestmark = [
    pytest.mark.postgres(reason="a worker in another process shares the test database"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("roles_kept"),
]


def _worker(lease_seconds: float) -> subprocess.Popen:
    database = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "claimsdb.test_settings",
        "DATABASE_URL": (
            f"postgres://{database['USER']}@{database['HOST'] or '127.0.0.1'}:"
            f"{database['PORT'] or 5432}/{database['NAME']}"
        ),
        "WEBHOOKS_ALLOW_PRIVATE": "1",
        "WEBHOOKS_POLL_SECONDS": "0.2",
        "WEBHOOKS_LEASE_SECONDS": str(lease_seconds),
        "WEBHOOKS_TIMEOUT_SECONDS": "60",
        "LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            "0.2",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _stop(worker: subprocess.Popen) -> str:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    try:
        output, _ = worker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        output, _ = worker.communicate()
    return output


def _wait_for(predicate, what: str, seconds: float = 40) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s: {what}")


def test_a_worker_killed_mid_delivery_loses_nothing(seeded, reviewer, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    with receiving() as receiver:
        subscription = subscription_create(
            user=reviewer, values={"url": receiver.url, "events": ["revision.written"]}
        )
        receiver.hold.set()  # the receiver takes the request and does not answer
        number = edit_case(reviewer, "CP22-003", summary="Edit", title="Edited")
        first = _worker(lease_seconds=3)
        try:
            assert receiver.holding.wait(40), "the worker never sent the delivery"
            first.kill()  # SIGKILL, in the middle of the delivery
            first.wait(timeout=20)
        finally:
            _stop(first)
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "pending"
        assert delivery.attempt_count == 0 and delivery.leased_until is not None
        receiver.hold.clear()
        second = _worker(lease_seconds=3)
        try:
            _wait_for(
                lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "succeeded",
                "the delivery after the restart",
            )
        finally:
            output = _stop(second)
        assert len(receiver.received) == 1, output
        message = receiver.received[0]
    payload = Webhook(subscription.secret).verify(message.body, message.headers)
    assert message.headers["webhook-id"] == delivery.message_id
    assert payload["ledger"]["revision"] == number
    delivery.refresh_from_db()
    assert (delivery.attempt_count, delivery.last_status_code) == (1, 200)
