"""Webhook subscriptions: the services that make, change and delete them, rotate their
secrets and redeliver their deliveries (the web page and the API call these).

Every service takes the acting user, checks the reviewer role inside its transaction, and
validates the whole subscription, collecting every problem (``RuleViolations`` with codes
of ``WebhookCode`` and the paths of the fields) before writing anything.
"""

from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from claimsdb.access import may_read_webhook_secret
from claimsdb.choices import CASE_KEY_PATTERN
from claimsdb.codes import WebhookCode
from claimsdb.models import WebhookAttempt, WebhookDelivery, WebhookSubscription
from claimsdb.records import PermissionDenied, RuleViolation, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.records.schema import normalize_tag
from claimsdb.services.permissions import require_role

from . import delivery
from .addresses import AddressRefused, resolve
from .events import event_types, ledger_head
from .fanout import lock_cursor

ROLE = "reviewer"
MAX_FILTER_VALUES = 100
CASE_KEY = re.compile(CASE_KEY_PATTERN)
FIELDS = ("url", "description", "events", "kinds", "case_keys", "tags", "active")


def new_secret() -> str:
    """A signing secret in the Standard Webhooks form: ``whsec_`` and 32 random bytes in
    base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def _strings(value: Any, path: str, problems: list[RuleViolation]) -> list[str] | None:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        problems.append(
            RuleViolation(WebhookCode.FILTER_INVALID, "a list of strings is expected", path)
        )
        return None
    if len(value) > MAX_FILTER_VALUES:
        problems.append(
            RuleViolation(WebhookCode.FILTER_INVALID, f"at most {MAX_FILTER_VALUES} values", path)
        )
        return None
    return list(value)


def clean(values: dict[str, Any], *, resolved: str = "") -> dict[str, Any]:
    """The subscription's fields checked and normalized; raises ``RuleViolations`` naming
    every problem. The URL's host is resolved and its addresses checked unless it is
    ``resolved`` (the subscription's URL as it is: changing another field of a subscription
    whose receiver is away does not depend on its name resolving now)."""
    problems: list[RuleViolation] = []
    cleaned: dict[str, Any] = {}
    url = values.get("url")
    if not isinstance(url, str) or not url.strip():
        problems.append(RuleViolation(WebhookCode.URL_INVALID, "a receiver URL is needed", "url"))
    elif len(url) > 2000:
        problems.append(
            RuleViolation(WebhookCode.URL_INVALID, "a URL of at most 2000 characters", "url")
        )
    else:
        try:
            if url.strip() != resolved:
                resolve(url.strip())
            cleaned["url"] = url.strip()
        except AddressRefused as refused:
            problems.append(RuleViolation(refused.code, refused.message, "url"))
    description = values.get("description", "")
    if not isinstance(description, str) or len(description) > 200:
        problems.append(
            RuleViolation(
                WebhookCode.FILTER_INVALID, "a description of at most 200 characters", "description"
            )
        )
    else:
        cleaned["description"] = description.strip()
    events = _strings(values.get("events"), "events", problems)
    if events is not None:
        if not events:
            problems.append(
                RuleViolation(
                    WebhookCode.EVENTS_REQUIRED,
                    f"name at least one event: {', '.join(event_types.names())}",
                    "events",
                )
            )
        for index, name in enumerate(events):
            if name not in event_types:
                problems.append(
                    RuleViolation(
                        WebhookCode.EVENT_UNKNOWN,
                        f"“{name}” is not an event claimsdb sends; it sends "
                        f"{', '.join(event_types.names())}",
                        f"events[{index}]",
                    )
                )
        cleaned["events"] = [name for name in event_types.names() if name in events]
    kinds = _strings(values.get("kinds", []), "kinds", problems)
    if kinds is not None:
        known = record_kinds.names()
        for index, kind in enumerate(kinds):
            if kind not in known:
                problems.append(
                    RuleViolation(
                        WebhookCode.FILTER_INVALID,
                        f"“{kind}” is not a record kind ({', '.join(known)})",
                        f"kinds[{index}]",
                    )
                )
        cleaned["kinds"] = [kind for kind in known if kind in kinds]
    case_keys = _strings(values.get("case_keys", []), "case_keys", problems)
    if case_keys is not None:
        for index, key in enumerate(case_keys):
            if not CASE_KEY.match(key) or len(key) > 40:
                problems.append(
                    RuleViolation(
                        WebhookCode.FILTER_INVALID,
                        f"“{key}” is not a case key (capital letters and digits in parts "
                        "joined by hyphens, e.g. CP22-003)",
                        f"case_keys[{index}]",
                    )
                )
        cleaned["case_keys"] = sorted(set(case_keys))
    tags = _strings(values.get("tags", []), "tags", problems)
    if tags is not None:
        normal = []
        for index, tag in enumerate(tags):
            text = normalize_tag(tag)
            if not text or len(text) > 100:
                problems.append(
                    RuleViolation(
                        WebhookCode.FILTER_INVALID,
                        "a tag of 1 to 100 visible characters",
                        f"tags[{index}]",
                    )
                )
            normal.append(text)
        cleaned["tags"] = sorted({tag for tag in normal if tag})
    active = values.get("active", True)
    if not isinstance(active, bool):
        problems.append(RuleViolation(WebhookCode.FILTER_INVALID, "true or false", "active"))
    else:
        cleaned["active"] = active
    if problems:
        raise RuleViolations(problems)
    return cleaned


def _unknown_fields(values: dict[str, Any]) -> list[RuleViolation]:
    return [
        RuleViolation(WebhookCode.FILTER_INVALID, "not a field of a subscription", name)
        for name in sorted(set(values) - set(FIELDS))
    ]


def subscription_create(*, user: User, values: dict[str, Any]) -> WebhookSubscription:
    """Make a subscription; it is told of what happens from now on (revisions after the
    ledger's head). Its secret is generated here."""
    unknown = _unknown_fields(values)
    try:
        cleaned = clean(values)
    except RuleViolations as refusal:
        raise RuleViolations(unknown + refusal.violations) from None
    if unknown:
        raise RuleViolations(unknown)
    with transaction.atomic():
        require_role(user, ROLE, "subscribing to webhooks")
        # The head read under the fan-out's lock: a fan-out that did not see this
        # subscription has committed, and moved the cursor no further than this head.
        lock_cursor()
        head = ledger_head()[0]
        return WebhookSubscription.objects.create(
            owner=user, secret=new_secret(), from_revision=head, **cleaned
        )


def subscription_update(
    *, user: User, subscription: WebhookSubscription, values: dict[str, Any]
) -> WebhookSubscription:
    """Change some of a subscription's fields (those in ``values``; the others kept). What
    was already delivered or is waiting to be delivered is not changed."""
    current = {name: getattr(subscription, name) for name in FIELDS}
    problems = _unknown_fields(values)
    try:
        cleaned = clean({**current, **values}, resolved=subscription.url) if not problems else {}
    except RuleViolations as refusal:
        problems.extend(refusal.violations)
    if problems:
        raise RuleViolations(problems)
    with transaction.atomic():
        require_role(user, ROLE, "changing a webhook subscription")
        was_active = subscription.active
        for name, value in cleaned.items():
            setattr(subscription, name, value)
        subscription.save(update_fields=list(cleaned))
        if was_active != subscription.active:
            delivery.hold(subscription.pk, held=not subscription.active)
    return subscription


DELETE_BATCH = 2000


def subscription_delete(*, user: User, subscription: WebhookSubscription) -> None:
    """Delete a subscription with its deliveries (pending ones are never sent), a batch of
    deliveries at a time: a cascade would first load every one of them."""
    with transaction.atomic():
        require_role(user, ROLE, "deleting a webhook subscription")
        deliveries = WebhookDelivery.objects.filter(subscription=subscription)
        while ids := list(deliveries.order_by("pk").values_list("pk", flat=True)[:DELETE_BATCH]):
            WebhookAttempt.objects.filter(delivery_id__in=ids).delete()
            WebhookDelivery.objects.filter(pk__in=ids).delete()
        subscription.delete()


def secret_rotate(*, user: User, subscription: WebhookSubscription) -> str:
    """A new secret for the subscription (its owner only); deliveries signed from now on use
    it, retries of older ones included."""
    with transaction.atomic():
        require_role(user, ROLE, "rotating a webhook secret")
        if not may_read_webhook_secret(user, subscription.owner_id):
            raise PermissionDenied("only the reviewer who made a subscription rotates its secret")
        subscription.secret = new_secret()
        subscription.save(update_fields=["secret"])
    return subscription.secret


def deliveries_redeliver(
    *, user: User, subscription: WebhookSubscription, delivery_ids: Iterable[int]
) -> int:
    """Send deliveries of this subscription again, now, with a new retry window."""
    with transaction.atomic():
        require_role(user, ROLE, "redelivering webhooks")
        ids = list(
            WebhookDelivery.objects.filter(
                subscription=subscription, pk__in=list(delivery_ids)
            ).values_list("pk", flat=True)
        )
        return delivery.redeliver(ids)
