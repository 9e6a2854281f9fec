"""Webhook deliveries: signed as Standard Webhooks receivers verify them, made once per
subscription per event with the change they report (never for a rolled-back one), retried
with back-off after a 500 or a receiver that is down, failed after their window and
redelivered, refused for private addresses, narrowed by filters."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook

from claimsdb.codes import WebhookCode
from claimsdb.models import Revision, WebhookAttempt, WebhookDelivery
from claimsdb.records import RuleViolations
from claimsdb.webhooks import fanout
from claimsdb.webhooks.delivery import enqueue_due, redeliver, send
from claimsdb.webhooks.subscriptions import subscription_create

from .support import approve_all, approver, create_source, edit_case, publish
from .webhook_receiver import free_port, receiving

CASE = "CP22-003"
ALL = ["revision.written", "release.published", "import.finished", "import.failed"]


@pytest.fixture
def private_allowed(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_RETRY_BASE_SECONDS = 5
    settings.WEBHOOKS_RETRY_MAX_SECONDS = 3600
    settings.WEBHOOKS_RETRY_WINDOW_SECONDS = 3 * 86400


def subscribe(user, url, **values):
    return subscription_create(user=user, values={"url": url, "events": ALL, **values})


class Clock:
    """A clock the test moves; it starts a minute ahead, so that what the test makes with
    the real clock is due."""

    def __init__(self) -> None:
        self.now = timezone.now() + dt.timedelta(minutes=1)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def work(clock=timezone.now) -> list[str]:
    """What the worker does: fan out, lease what is due, and run each job."""
    fanout.fan_out()
    jobs: list[tuple[int, str]] = []
    enqueue_due(clock=clock, enqueue=lambda pk, token: jobs.append((pk, token)))
    return [send(pk, token, clock=clock) for pk, token in jobs]


def test_a_revision_is_delivered_signed_with_its_number_and_the_chain_head(
    seeded, reviewer, private_allowed
):
    with receiving() as receiver:
        subscription = subscribe(reviewer, receiver.url)
        number = edit_case(reviewer, CASE, summary="Sharper title", title="A sharper title")
        work()
        assert len(receiver.received) == 1
        message = receiver.received[0]
    # the receiving side verifies it with the standardwebhooks library
    payload = Webhook(subscription.secret).verify(message.body, message.headers)
    revision = Revision.objects.get(number=number)
    assert payload["type"] == "revision.written"
    assert payload["data"]["revision"]["number"] == number
    assert payload["data"]["revision"]["record_key"] == CASE
    assert payload["data"]["revision"]["previous_hash"] == revision.previous_hash
    assert payload["ledger"] == {
        "revision": number,
        "chain_hash": revision.chain_hash,
        "feed": f"/api/v1/revisions/?since={number}",
    }
    assert payload["subscription"] == {"id": subscription.pk, "sequence": 1}
    assert message.headers["webhook-id"] == payload["id"]
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempt_count, delivery.last_status_code) == (
        "succeeded",
        1,
        200,
    )
    # a tampered body or another secret does not verify
    with pytest.raises(Exception, match="signature"):
        Webhook(subscription.secret).verify(message.body + b" ", message.headers)
    other = subscribe(reviewer, receiver.url)
    with pytest.raises(Exception, match="signature"):
        Webhook(other.secret).verify(message.body, message.headers)


def test_one_delivery_per_subscription_per_event_and_sequences_without_gaps(
    seeded, reviewer, private_allowed
):
    port = free_port()
    first = subscribe(reviewer, f"http://127.0.0.1:{port}/a")
    second = subscribe(reviewer, f"http://127.0.0.1:{port}/b", events=["revision.written"])
    numbers = [edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"Title {n}") for n in range(3)]
    assert fanout.fan_out(batch_size=2) == 6
    assert fanout.fan_out() == 0  # nothing twice
    for subscription in (first, second):
        rows = WebhookDelivery.objects.filter(subscription=subscription).order_by("sequence")
        expected = list(zip([1, 2, 3], numbers, strict=True))
        assert [(d.sequence, d.revision) for d in rows] == expected


def test_a_rolled_back_write_sends_nothing(seeded, reviewer, private_allowed):
    with receiving() as receiver:
        subscribe(reviewer, receiver.url)

        class Undo(Exception):
            pass

        with pytest.raises(Undo), transaction.atomic():
            edit_case(reviewer, CASE, summary="Will not stay", title="Will not stay")
            raise Undo
        # a refused write writes no revision either
        with pytest.raises(RuleViolations):
            edit_case(reviewer, CASE, summary="Bad status", status="no-such-status")
        assert work() == []
        assert not WebhookDelivery.objects.exists()
        assert receiver.received == []
        # and the next committed write is delivered, numbered right after the last one
        number = edit_case(reviewer, CASE, summary="Stays", title="Stays")
        work()
    assert [json.loads(m.body)["ledger"]["revision"] for m in receiver.received] == [number]


def test_a_release_is_delivered_with_the_head_it_was_taken_at(seeded, reviewer, private_allowed):
    with receiving() as receiver:
        subscription = subscribe(reviewer, receiver.url, events=["release.published"])
        release = publish(reviewer, notes="First release")
        work()
        payload = Webhook(subscription.secret).verify(
            receiver.received[0].body, receiver.received[0].headers
        )
    head = Revision.objects.get(number=release.last_revision)
    assert payload["type"] == "release.published"
    assert payload["data"]["release"]["number"] == release.number
    assert payload["ledger"]["revision"] == release.last_revision
    assert payload["ledger"]["chain_hash"] == head.chain_hash


def test_an_approval_is_delivered_with_its_range_and_reviewer(seeded, reviewer, private_allowed):
    with receiving() as receiver:
        subscription = subscribe(reviewer, receiver.url, events=["record.approved"])
        unrelated = subscribe(
            reviewer, receiver.url, events=["record.approved"], case_keys=["CP22-002"]
        )
        number = edit_case(reviewer, CASE, summary="Sharper title", title="A sharper title")
        (approval,) = approve_all(note="Checked against the source")
        work()
        assert len(receiver.received) == 1  # the case-key filter holds back the other
        message = receiver.received[0]
    payload = Webhook(subscription.secret).verify(message.body, message.headers)
    assert payload["type"] == "record.approved"
    assert payload["data"]["approval"] == {
        "number": approval.number,
        "record_kind": "case",
        "record_key": CASE,
        "revision": number,
        "since_revision": approval.since_number,
        "reviewer": approver().username,
        "self_approved": False,
        "approved_at": payload["data"]["approval"]["approved_at"],
        "note": "Checked against the source",
        "chain_hash": approval.chain_hash,
    }
    assert payload["ledger"]["revision"] == number
    assert not WebhookDelivery.objects.filter(subscription=unrelated).exists()


def test_a_500_is_retried_with_growing_waits_until_it_succeeds(seeded, reviewer, private_allowed):
    clock = Clock()
    with receiving() as receiver:
        receiver.answers = [500, 500]
        subscribe(reviewer, receiver.url, events=["revision.written"])
        edit_case(reviewer, CASE, summary="Edit", title="Edited")
        work(clock)
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.last_status_code) == ("pending", 500)
        first_wait = delivery.next_attempt_at - clock.now
        assert dt.timedelta(seconds=5) <= first_wait <= dt.timedelta(seconds=5.5)
        assert work(clock) == []  # not due yet: nothing is sent
        clock.advance(seconds=6)
        work(clock)
        delivery.refresh_from_db()
        second_wait = delivery.next_attempt_at - clock.now
        assert dt.timedelta(seconds=10) <= second_wait <= dt.timedelta(seconds=11)
        clock.advance(seconds=11)
        work(clock)
        assert len(receiver.received) == 3
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count, delivery.next_attempt_at) == (
        "succeeded",
        3,
        None,
    )
    attempts = list(WebhookAttempt.objects.filter(delivery=delivery).order_by("number"))
    assert [(a.number, a.status_code) for a in attempts] == [(1, 500), (2, 500), (3, 200)]
    assert attempts[0].next_attempt_at is not None and attempts[2].next_attempt_at is None
    # every attempt carries the same webhook-id, signed afresh
    assert len({m.headers["webhook-id"] for m in receiver.received}) == 1


def test_a_receiver_down_for_an_hour_loses_nothing(seeded, reviewer, private_allowed):
    clock = Clock()
    port = free_port()
    subscribe(reviewer, f"http://127.0.0.1:{port}/hooks", events=["revision.written"])
    numbers = [edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"T {n}") for n in range(3)]
    # nothing listens: connection refused, for an hour of tries
    for _ in range(30):
        work(clock)
        clock.advance(minutes=2)
    rows = list(WebhookDelivery.objects.order_by("sequence"))
    assert {d.status for d in rows} == {"pending"}
    assert all("cannot connect" in d.last_error for d in rows)
    assert all(d.last_status_code is None for d in rows)
    assert all(d.attempt_count > 3 for d in rows)
    # the waits grew: far fewer tries than the 30 rounds
    assert all(d.attempt_count < 15 for d in rows)
    with receiving(port) as receiver:
        clock.advance(hours=1)
        work(clock)
        got = sorted(json.loads(m.body)["ledger"]["revision"] for m in receiver.received)
    assert got == numbers
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}


def test_a_delivery_fails_after_its_window_and_is_redelivered(seeded, reviewer, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_RETRY_WINDOW_SECONDS = 60
    clock = Clock()
    port = free_port()
    subscribe(reviewer, f"http://127.0.0.1:{port}/hooks", events=["revision.written"])
    edit_case(reviewer, CASE, summary="Edit", title="Edited")
    for _ in range(10):
        work(clock)
        clock.advance(seconds=30)
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.next_attempt_at) == ("failed", None)
    tries = delivery.attempt_count
    work(clock)
    delivery.refresh_from_db()
    assert delivery.attempt_count == tries  # a failed delivery is not tried again by itself
    with receiving(port) as receiver:
        assert redeliver([delivery.pk], clock=clock) == 1
        work(clock)
        assert len(receiver.received) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempt_count) == ("succeeded", tries + 1)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8400/hooks",
        "http://localhost:8400/hooks",
        "http://[::1]:8400/hooks",
        "http://[::ffff:127.0.0.1]/hooks",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.1.2.3/hooks",
        "http://192.168.0.10/hooks",
        "http://172.16.0.1/hooks",
        "http://0.0.0.0/hooks",
        "http://100.64.0.1/hooks",
    ],
)
def test_receivers_at_private_addresses_are_refused(reviewer, settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    with pytest.raises(RuleViolations) as refused:
        subscribe(reviewer, url)
    assert [(v.code, v.path) for v in refused.value.violations] == [
        (WebhookCode.URL_REFUSED, "url")
    ]


@pytest.mark.parametrize(
    "url, code",
    [
        ("ftp://example.org/hooks", WebhookCode.URL_INVALID),
        ("http://user:pw@example.org/hooks", WebhookCode.URL_INVALID),
        ("https:///hooks", WebhookCode.URL_INVALID),
        ("http://no-such-host.invalid/hooks", WebhookCode.URL_UNRESOLVED),
    ],
)
def test_receiver_urls_that_are_not_ones_are_refused(reviewer, settings, url, code):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    with pytest.raises(RuleViolations) as refused:
        subscribe(reviewer, url)
    assert [v.code for v in refused.value.violations] == [code]


def test_an_address_is_checked_again_at_each_delivery(seeded, reviewer, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    with receiving() as receiver:
        subscribe(reviewer, receiver.url, events=["revision.written"])
        edit_case(reviewer, CASE, summary="Edit", title="Edited")
        settings.WEBHOOKS_ALLOW_PRIVATE = False
        work()
        assert receiver.received == []
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending"
    assert delivery.last_error.startswith("webhook.url_refused")


def test_redirects_are_not_followed(seeded, reviewer, private_allowed):
    with receiving() as receiver:
        receiver.answers = [302]
        subscribe(reviewer, receiver.url, events=["revision.written"])
        edit_case(reviewer, CASE, summary="Edit", title="Edited")
        work()
        assert len(receiver.received) == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and delivery.last_status_code == 302
    assert "redirects are not followed" in delivery.last_error


def test_filters_narrow_what_is_delivered(seeded, reviewer, private_allowed):
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"
    by_kind = subscribe(reviewer, url, kinds=["source"])
    by_case = subscribe(reviewer, url, case_keys=[CASE])
    by_tag = subscribe(reviewer, url, tags=["Webhook-Test"])
    releases_only = subscribe(reviewer, url, events=["release.published"], case_keys=["CP99-001"])
    source = create_source(reviewer, "SRC-WEBHOOK-TEST")
    titled = edit_case(reviewer, CASE, summary="Title", title="Retitled")
    tagged = edit_case(reviewer, "CP22-002", summary="Tag", tags=["webhook-test"])
    release = publish(reviewer, notes="A release")
    fanout.fan_out()

    def got(subscription):
        return [
            (d.event_type, d.revision)
            for d in WebhookDelivery.objects.filter(subscription=subscription).order_by("sequence")
        ]

    published = ("release.published", release.last_revision)
    assert got(by_kind) == [("revision.written", source), published]
    assert got(by_case) == [("revision.written", titled), published]
    assert got(by_tag) == [("revision.written", tagged), published]
    assert got(releases_only) == [published]


def test_a_subscription_hears_only_what_happens_after_it_is_made(seeded, reviewer, private_allowed):
    before = edit_case(reviewer, CASE, summary="Before", title="Before")
    subscription = subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks")
    after = edit_case(reviewer, CASE, summary="After", title="After")
    fanout.fan_out()
    revisions = list(
        WebhookDelivery.objects.filter(subscription=subscription).values_list("revision", flat=True)
    )
    assert before < after and revisions == [after]


def test_an_owner_who_is_no_longer_a_reviewer_is_sent_nothing(seeded, reviewer, private_allowed):
    subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks")
    reviewer.groups.clear()
    from .support import make_user

    other = make_user("editor", "reviewer")
    edit_case(other, CASE, summary="Edit", title="Edited")
    assert fanout.fan_out() == 0


def test_imports_are_reported_finished_or_failed_with_their_case(
    seeded, reviewer, analyst, private_allowed
):
    from claimsdb.importers.repro_results import ResultsImporter

    from .support import ROOT

    subscription = subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks", tags=["rdma"])
    valid = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
    imported = ResultsImporter(user=analyst).import_path(valid)
    ResultsImporter(user=analyst, dry_run=True).import_path(valid)  # a dry run: no event
    refused = ResultsImporter(user=analyst).import_file(
        io.BytesIO(b'{"format": "nothing"}'), filename="broken.json"
    )
    assert (imported.outcome, refused.outcome) == ("imported", "refused")
    fanout.fan_out()
    rows = WebhookDelivery.objects.filter(subscription=subscription).order_by("sequence")
    payloads = [json.loads(d.payload) for d in rows]
    # the import's revision (the case CP22-003 is tagged rdma), then its event; the refused
    # import names no case, and a tag filter lets only events of tagged cases through
    assert [p["type"] for p in payloads] == ["revision.written", "import.finished"]
    event = payloads[1]
    assert event["data"]["import"]["id"] == imported.id
    assert event["data"]["import"]["revision"] == imported.revision
    assert event["ledger"]["revision"] == imported.revision
    unfiltered = subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks")
    again = ResultsImporter(user=analyst).import_file(
        io.BytesIO(b'{"format": "nothing"}'), filename="broken.json"
    )
    fanout.fan_out()
    failed = json.loads(WebhookDelivery.objects.get(subscription=unfiltered).payload)
    assert failed["type"] == "import.failed"
    assert failed["data"]["import"]["id"] == again.id
    assert failed["data"]["import"]["codes"]


def test_a_fan_out_batch_costs_the_same_queries_however_long_the_ledger(
    seeded, reviewer, private_allowed
):
    """A batch reads its revisions along the ledger's index and inserts its deliveries in
    one statement: the same queries for 2 revisions as for 20 (and a 1,000,000-revision
    ledger is 2,000 such batches)."""
    from .support import queries_of

    url = f"http://127.0.0.1:{free_port()}/hooks"
    subscribe(reviewer, url, tags=["rdma"])  # a tag filter: snapshots are read too
    subscribe(reviewer, url, kinds=["case"])

    def edits(count: int) -> None:
        for n in range(count):
            edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"Title {n} {count}")

    edits(2)
    few = queries_of(lambda: fanout.fan_out_batch(batch_size=50))
    made = WebhookDelivery.objects.count()
    edits(20)
    many = queries_of(lambda: fanout.fan_out_batch(batch_size=50))
    assert WebhookDelivery.objects.count() - made == 40
    assert many == few
    # handing out due deliveries: the same queries for 4 as for 44 (the jobs aside)
    clock = Clock()
    first = WebhookDelivery.objects.order_by("pk").values_list("pk", flat=True)[4]
    WebhookDelivery.objects.filter(pk__gte=first).update(next_attempt_at=clock.now)
    WebhookDelivery.objects.filter(pk__lt=first).update(
        next_attempt_at=clock.now - dt.timedelta(seconds=1)
    )
    handed: list[int] = []
    due_few = queries_of(
        lambda: handed.extend(
            enqueue_due(clock=lambda: clock.now - dt.timedelta(seconds=1), enqueue=noop)
        )
    )
    due_many = queries_of(lambda: handed.extend(enqueue_due(clock=clock, enqueue=noop)))
    assert len(handed) == 44 and due_many == due_few


def noop(pk: int, token: str) -> None:
    pass


def test_nobody_listening_moves_the_cursor_without_reading_the_ledger(seeded, reviewer):
    from claimsdb.models import LedgerHead, WebhookCursor

    from .support import queries_of

    edit_case(reviewer, CASE, summary="Edit", title="Edited")
    queries = queries_of(fanout.fan_out)
    assert WebhookCursor.objects.get().revision == LedgerHead.objects.get().number
    assert queries <= 8


def test_the_command_redelivers_the_failed_deliveries(seeded, reviewer, analyst, settings):
    from django.core.management import CommandError, call_command

    settings.WEBHOOKS_ALLOW_PRIVATE = True
    subscription = subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks")
    for n in range(3):
        edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"T {n}")
    fanout.fan_out()
    WebhookDelivery.objects.filter(sequence__lte=2).update(status="failed", next_attempt_at=None)
    with pytest.raises(CommandError, match="reviewer"):
        call_command(
            "redeliver_webhooks", "--subscription", str(subscription.pk), "--user", "analyst"
        )
    out = io.StringIO()
    call_command(
        "redeliver_webhooks",
        "--subscription",
        str(subscription.pk),
        "--user",
        "reviewer",
        stdout=out,
    )
    assert out.getvalue().startswith("2 deliveries")
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"pending"}


def test_a_paused_subscription_holds_its_deliveries_and_sends_them_on_resuming(
    seeded, reviewer, private_allowed
):
    from claimsdb.webhooks.subscriptions import subscription_update

    with receiving() as receiver:
        subscription = subscribe(reviewer, receiver.url, events=["revision.written"])
        first = edit_case(reviewer, CASE, summary="Before the pause", title="One")
        fanout.fan_out()
        subscription_update(user=reviewer, subscription=subscription, values={"active": False})
        second = edit_case(reviewer, CASE, summary="While paused", title="Two")
        assert work() == []  # made, and held
        assert receiver.received == []
        held = WebhookDelivery.objects.order_by("sequence")
        assert [(d.revision, d.next_attempt_at) for d in held] == [(first, None), (second, None)]
        subscription_update(user=reviewer, subscription=subscription, values={"active": True})
        work()
        got = sorted(json.loads(m.body)["ledger"]["revision"] for m in receiver.received)
    assert got == [first, second]


def test_a_background_import_that_fails_is_reported(seeded, reviewer, analyst, spool, settings):
    from pathlib import Path

    from claimsdb.importers import jobs
    from claimsdb.models import ImportReport

    from .support import ROOT

    settings.WEBHOOKS_ALLOW_PRIVATE = True
    subscription = subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks")
    valid = ROOT / "fixtures" / "repro" / "valid" / "valid-small.json"
    with valid.open("rb") as upload:
        queued = jobs.import_enqueue(user=analyst, upload=upload, filename="run.json")
    fanout.fan_out()
    assert not WebhookDelivery.objects.exists()  # queued is no outcome yet
    Path(ImportReport.objects.get(pk=queued.id).stored_file).unlink()  # the job will fail
    with pytest.raises(FileNotFoundError):
        jobs.run_import_job.call(queued.id)
    fanout.fan_out()
    (delivery,) = WebhookDelivery.objects.filter(subscription=subscription)
    payload = json.loads(delivery.payload)
    assert payload["type"] == "import.failed"
    assert (payload["data"]["import"]["id"], payload["data"]["import"]["outcome"]) == (
        queued.id,
        "failed",
    )


# the worker closes its database connection when it is done, as a process of its own would:
# on PostgreSQL that is the test's own connection, which a test transaction would lose
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("roles_kept")
def test_the_worker_sends_through_the_task_queue_without_flooding_it(
    seeded, reviewer, private_allowed, monkeypatch
):
    from django.core.management import call_command

    from claimsdb.webhooks import jobs

    def worker() -> None:
        call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0", verbosity=0)

    monkeypatch.setattr(jobs, "QUEUED_AT_MOST", 3)
    with receiving() as receiver:
        subscribe(reviewer, receiver.url, events=["revision.written"])
        for n in range(5):
            edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"T {n}")
        assert jobs.pump() == (5, 3)
        assert jobs.pump() == (0, 0)  # three jobs wait: no more are handed out
        assert jobs.waiting_jobs() == 3
        worker()  # its pump finds no room; it runs the three jobs
        assert len(receiver.received) == 3
        worker()  # its pump hands out the last two, then runs them
        assert len(receiver.received) == 5
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}


# --- pruning ---------------------------------------------------------------------------------


def test_prune_deletes_old_ended_deliveries_with_their_attempts_and_keeps_the_rest(
    seeded, reviewer, private_allowed
):
    from django.core.management import call_command

    subscription = subscribe(
        reviewer, f"http://127.0.0.1:{free_port()}/hooks", events=["revision.written"]
    )
    for n in range(6):
        edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"T {n}")
    fanout.fan_out()
    deliveries = list(WebhookDelivery.objects.filter(subscription=subscription).order_by("pk"))
    assert len(deliveries) == 6
    now = timezone.now()
    old, recent = now - dt.timedelta(days=40), now - dt.timedelta(days=1)
    ended = [  # status, last attempt, made
        ("succeeded", old, old),
        ("failed", old, old),
        ("pending", old, old),  # still being retried: never pruned
        ("succeeded", recent, old),
        ("succeeded", old, old),
        ("pending", None, now),
    ]
    for delivery, (status, attempted, made) in zip(deliveries, ended, strict=True):
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=status, last_attempt_at=attempted, created_at=made
        )
        if attempted is not None:
            WebhookAttempt.objects.create(delivery=delivery, number=1, at=attempted)
    out = io.StringIO()
    call_command("prune_webhooks", "--days", "30", "--batch-size", "2", stdout=out)
    assert out.getvalue().strip() == "deleted 2 succeeded webhook deliveries older than 30 days"
    kept = [d.pk for d in deliveries]
    del kept[4], kept[0]
    assert list(WebhookDelivery.objects.order_by("pk").values_list("pk", flat=True)) == kept
    assert not WebhookAttempt.objects.filter(delivery__in=[deliveries[0], deliveries[4]]).exists()
    assert WebhookAttempt.objects.count() == 3
    call_command("prune_webhooks", "--days", "30", "--failed", stdout=out)
    assert not WebhookDelivery.objects.filter(pk=deliveries[1].pk).exists()
    assert WebhookDelivery.objects.count() == 3
    # the subscription's sequence goes on from where it was, not from what is left
    edit_case(reviewer, CASE, summary="After pruning", title="T after")
    fanout.fan_out()
    newest = WebhookDelivery.objects.filter(subscription=subscription).order_by("-pk").first()
    assert newest.sequence == deliveries[-1].sequence + 1


def test_prune_stops_at_the_first_batch_made_after_the_cutoff(
    seeded, reviewer, private_allowed, django_assert_num_queries
):
    from claimsdb.webhooks.delivery import prune

    subscribe(reviewer, f"http://127.0.0.1:{free_port()}/hooks", events=["revision.written"])
    for n in range(5):
        edit_case(reviewer, CASE, summary=f"Edit {n}", title=f"T {n}")
    fanout.fan_out()
    WebhookDelivery.objects.update(status="succeeded", last_attempt_at=timezone.now())
    with django_assert_num_queries(1):  # one batch read: all of it is newer than the cutoff
        assert prune(dt.timedelta(days=30), batch_size=2) == 0
    assert WebhookDelivery.objects.count() == 5


def test_prune_webhooks_refuses_a_negative_age(db):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="--days"):
        call_command("prune_webhooks", "--days", "-1")
