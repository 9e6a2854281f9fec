"""Webhook subscriptions and deliveries over the API and on the site: reviewers only; the
secret for its owner; refusals that name every problem and write nothing; lists that page
in a fixed number of queries; redelivery."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from claimsdb.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from claimsdb.webhooks.subscriptions import subscription_create

from .support import api_client, get_queries, make_user, signed_in, token_client

API = "/api/v1/webhooks/"
URL = "http://127.0.0.1:8449/hooks"


@pytest.fixture(autouse=True)
def private_allowed(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True


def make_subscription(user, **values):
    return subscription_create(
        user=user, values={"url": URL, "events": ["revision.written"], **values}
    )


def make_deliveries(subscription: WebhookSubscription, count: int) -> None:
    """``count`` deliveries of the subscription, each tried once and answered 500."""
    now = timezone.now()
    start = subscription.sequence
    rows = WebhookDelivery.objects.bulk_create(
        [
            WebhookDelivery(
                subscription=subscription,
                message_id=f"msg_{subscription.pk}_{start + n}",
                event_type="revision.written",
                sequence=start + n,
                revision=n,
                payload='{"type":"revision.written"}',
                created_at=now,
                next_attempt_at=now + dt.timedelta(minutes=5),
                window_started_at=now,
                attempt_count=1,
                last_attempt_at=now,
                last_status_code=500,
                last_error="HTTP 500 Internal Server Error",
            )
            for n in range(1, count + 1)
        ]
    )
    subscription.sequence = start + count
    subscription.save(update_fields=["sequence"])
    for row in WebhookDelivery.objects.filter(pk__in=[r.pk for r in rows if r.pk] or [0]):
        WebhookAttempt.objects.create(delivery=row, number=1, at=now, status_code=500)


# --- the API -------------------------------------------------------------------------------


def test_only_reviewers_use_the_webhooks_api(reviewer, analyst):
    assert token_client().get(API).status_code == 401
    refused = token_client(analyst).get(API)
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["code"] == "permission.denied"
    assert token_client(analyst).post(API, {"url": URL}, format="json").status_code == 403
    assert token_client(reviewer).get(API).status_code == 200


def test_a_subscription_is_made_with_its_secret_shown_once(reviewer):
    client = token_client(reviewer)
    made = client.post(
        API,
        {"url": URL, "events": ["revision.written", "release.published"], "tags": ["RDMA"]},
        format="json",
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert made["Location"] == body["self"]
    assert body["secret_value"].startswith("whsec_")
    assert body["tags"] == ["rdma"]
    again = client.get(body["self"]).json()
    assert "secret_value" not in again
    assert client.get(body["secret"]).json()["secret"] == body["secret_value"]


def test_a_refusal_names_every_problem_and_makes_nothing(reviewer, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    response = token_client(reviewer).post(
        API,
        {
            "url": "http://169.254.169.254/latest/",
            "events": ["revision.written", "case.eaten"],
            "kinds": ["cases"],
            "case_keys": ["cp22 003"],
        },
        format="json",
    )
    assert response.status_code == 400
    assert [(e["code"], e["path"]) for e in response.json()["errors"]] == [
        ("webhook.url_refused", "url"),
        ("webhook.event_unknown", "events[1]"),
        ("webhook.filter_invalid", "kinds[0]"),
        ("webhook.filter_invalid", "case_keys[0]"),
    ]
    assert not WebhookSubscription.objects.exists()
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    empty = token_client(reviewer).post(API, {"url": URL, "events": []}, format="json")
    assert [e["code"] for e in empty.json()["errors"]] == ["webhook.events_required"]
    unknown = token_client(reviewer).post(
        API, {"url": URL, "events": ["revision.written"], "secret": "whsec_mine"}, format="json"
    )
    assert [(e["code"], e["path"]) for e in unknown.json()["errors"]] == [
        ("webhook.filter_invalid", "secret")
    ]
    assert not WebhookSubscription.objects.exists()


def test_the_secret_is_its_owners(reviewer):
    subscription = make_subscription(reviewer)
    other = make_user("second-reviewer", "reviewer")
    secret_url = f"{API}{subscription.pk}/secret/"
    refused = token_client(other).get(secret_url)
    assert refused.status_code == 403
    assert refused.json()["errors"][0]["code"] == "webhook.not_owner"
    assert token_client(other).post(secret_url).status_code == 403
    # another reviewer still sees the subscription, without its secret
    seen = token_client(other).get(f"{API}{subscription.pk}/").json()
    assert subscription.secret not in str(seen)
    rotated = token_client(reviewer).post(secret_url).json()["secret"]
    assert rotated.startswith("whsec_") and rotated != subscription.secret
    subscription.refresh_from_db()
    assert subscription.secret == rotated


def test_a_subscription_is_changed_paused_and_deleted(reviewer):
    subscription = make_subscription(reviewer)
    client = token_client(reviewer)
    url = f"{API}{subscription.pk}/"
    changed = client.patch(url, {"active": False, "case_keys": ["CP22-003"]}, format="json")
    assert changed.status_code == 200, changed.content
    assert (changed.json()["active"], changed.json()["case_keys"]) == (False, ["CP22-003"])
    refused = client.patch(url, {"events": ["nope"], "colour": "red"}, format="json")
    assert refused.status_code == 400
    assert {e["path"] for e in refused.json()["errors"]} == {"colour"}
    refused = client.patch(url, {"events": ["nope"]}, format="json")
    assert [e["path"] for e in refused.json()["errors"]] == ["events[0]"]
    subscription.refresh_from_db()
    assert subscription.events == ["revision.written"]
    assert client.delete(url).status_code == 204
    assert not WebhookSubscription.objects.exists()
    missing = client.get(url)
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["code"] == "webhook.not_found"
    assert client.get(f"{API}x1/").status_code == 404


def test_deliveries_page_by_keyset_and_are_redelivered(reviewer):
    subscription = make_subscription(reviewer)
    make_deliveries(subscription, 60)
    client = token_client(reviewer)
    response = client.get(f"{API}{subscription.pk}/deliveries/")
    first = response.json()
    assert len(first["results"]) == 50
    # the next page in the body and in the Link header, absolute (docs/api.md)
    assert first["next"].startswith("http://testserver/")
    assert response["Link"] == f'<{first["next"]}>; rel="next"'
    assert response["ETag"].startswith('W/"')
    assert [d["sequence"] for d in first["results"][:2]] == [60, 59]
    second = client.get(first["next"]).json()
    assert [d["sequence"] for d in second["results"]] == list(range(10, 0, -1))
    assert second["next"] is None
    pending = client.get(f"{API}{subscription.pk}/deliveries/?status=succeeded").json()
    assert pending["results"] == []
    bad = client.get(f"{API}{subscription.pk}/deliveries/?status=lost")
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == "status"
    one = first["results"][0]
    detail = client.get(one["self"]).json()
    assert detail["payload"] == {"type": "revision.written"}
    assert detail["attempt_log"][0]["status_code"] == 500
    redelivered = client.post(one["redeliver"])
    assert redelivered.status_code == 202
    assert redelivered.json()["status"] == "pending"
    delivery = WebhookDelivery.objects.get(pk=one["id"])
    assert delivery.next_attempt_at <= timezone.now()
    other = make_subscription(reviewer)
    assert client.get(f"{API}{other.pk}/deliveries/{one['id']}/").status_code == 404


def test_list_queries_are_fixed_per_page(reviewer):
    client = token_client(reviewer)
    subscription = make_subscription(reviewer)
    make_deliveries(subscription, 3)
    few = get_queries(client, f"{API}{subscription.pk}/deliveries/")
    few_subscriptions = get_queries(client, API)
    make_deliveries(subscription, 120)
    for n in range(60):
        make_subscription(make_user(f"reviewer-{n}", "reviewer"))
    assert get_queries(client, f"{API}{subscription.pk}/deliveries/") == few
    assert get_queries(client, API) == few_subscriptions


def test_event_types_are_listed(reviewer):
    names = [t["name"] for t in token_client(reviewer).get(f"{API}events/").json()["results"]]
    assert names == [
        "revision.written",
        "release.published",
        "import.finished",
        "import.failed",
        "record.approved",
    ]


# --- the pages -----------------------------------------------------------------------------


def test_only_reviewers_open_the_webhook_pages(reviewer, analyst):
    assert signed_in(None).get("/webhooks/").status_code == 302
    assert signed_in(analyst).get("/webhooks/").status_code == 403
    assert "Webhooks</a>" not in signed_in(analyst).get("/imports/").content.decode()
    page = signed_in(reviewer).get("/webhooks/")
    assert page.status_code == 200
    assert 'href="/webhooks/">Webhooks</a>' in page.content.decode()


def test_a_reviewer_subscribes_on_the_page_and_reads_the_secret(reviewer):
    client = signed_in(reviewer)
    made = client.post(
        "/webhooks/",
        {
            "url": URL,
            "events": ["revision.written", "import.failed"],
            "kinds": ["case"],
            "case_keys": "CP22-003, CP22-002",
            "tags": "RDMA, kv-cache",
            "active": "on",
        },
    )
    assert made.status_code == 302, made.content.decode()[:3000]
    subscription = WebhookSubscription.objects.get()
    assert made["Location"] == f"/webhooks/{subscription.pk}/secret/"
    assert subscription.case_keys == ["CP22-002", "CP22-003"]
    assert subscription.tags == ["kv-cache", "rdma"]
    secret = client.get(made["Location"])
    assert subscription.secret in secret.content.decode()
    assert secret["Cache-Control"] == "no-store"
    other = signed_in(make_user("second-reviewer", "reviewer"))
    assert other.get(made["Location"]).status_code == 403
    detail = other.get(f"/webhooks/{subscription.pk}/")
    assert detail.status_code == 200 and subscription.secret not in detail.content.decode()


def test_a_refused_subscription_shows_its_problems_at_their_fields(reviewer, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    page = signed_in(reviewer).post(
        "/webhooks/", {"url": "http://10.0.0.1/", "events": ["revision.written"]}
    )
    assert page.status_code == 400
    assert "webhook.url_refused" in page.content.decode()
    assert not WebhookSubscription.objects.exists()


def test_the_delivery_pages_show_the_log_and_redeliver(reviewer):
    subscription = make_subscription(reviewer)
    make_deliveries(subscription, 2)
    client = signed_in(reviewer)
    page = client.get(f"/webhooks/{subscription.pk}/").content.decode()
    assert "HTTP 500" in page and "Redeliver" in page
    delivery = WebhookDelivery.objects.order_by("pk").first()
    assert delivery is not None
    detail = client.get(f"/webhooks/{subscription.pk}/deliveries/{delivery.pk}/")
    assert detail.status_code == 200 and delivery.message_id in detail.content.decode()
    back = client.post(
        f"/webhooks/{subscription.pk}/deliveries/{delivery.pk}/redeliver/",
        {"next": f"/webhooks/{subscription.pk}/?status=pending"},
    )
    assert back["Location"] == f"/webhooks/{subscription.pk}/?status=pending"
    delivery.refresh_from_db()
    assert delivery.next_attempt_at <= timezone.now()
    elsewhere = client.post(
        f"/webhooks/{subscription.pk}/deliveries/{delivery.pk}/redeliver/",
        {"next": "https://elsewhere.example/"},
    )
    assert elsewhere["Location"] == f"/webhooks/{subscription.pk}/"


def test_the_pages_cost_the_same_queries_at_two_sizes(reviewer):
    client = signed_in(reviewer)
    subscription = make_subscription(reviewer)
    make_deliveries(subscription, 3)
    list_few = get_queries(client, "/webhooks/")
    detail_few = get_queries(client, f"/webhooks/{subscription.pk}/")
    make_deliveries(subscription, 120)
    for n in range(60):
        make_subscription(make_user(f"reviewer-{n}", "reviewer"))
    assert get_queries(client, "/webhooks/") == list_few
    assert get_queries(client, f"/webhooks/{subscription.pk}/") == detail_few


def test_a_subscription_is_paused_on_the_page(reviewer):
    subscription = make_subscription(reviewer)
    client = signed_in(reviewer)
    saved = client.post(
        f"/webhooks/{subscription.pk}/",
        {"url": URL, "events": ["revision.written"], "case_keys": "", "tags": ""},
    )
    assert saved.status_code == 302
    subscription.refresh_from_db()
    assert subscription.active is False
    assert client.post(f"/webhooks/{subscription.pk}/delete/").status_code == 302
    assert not WebhookSubscription.objects.exists()


def test_api_client_without_token_is_refused_too(reviewer):
    assert api_client(None).get(API).status_code in (401, 403)


def test_deleting_a_subscription_deletes_its_deliveries_a_batch_at_a_time(reviewer, monkeypatch):
    from claimsdb.webhooks import subscriptions

    monkeypatch.setattr(subscriptions, "DELETE_BATCH", 7)
    subscription = make_subscription(reviewer)
    kept = make_subscription(reviewer)
    make_deliveries(subscription, 30)
    make_deliveries(kept, 2)
    subscriptions.subscription_delete(user=reviewer, subscription=subscription)
    assert list(WebhookDelivery.objects.values_list("subscription", flat=True)) == [kept.pk] * 2
    assert WebhookAttempt.objects.count() == 2
