"""Webhook subscriptions and their deliveries over REST (reviewers; docs/integrations.md).

* ``GET /api/v1/webhooks/`` — subscriptions, newest first, a page at a time;
  ``POST`` — make one (201, its secret in the body this once, ``Location``);
* ``GET``/``PATCH``/``DELETE /api/v1/webhooks/<id>/`` — read, change some fields, delete;
* ``GET /api/v1/webhooks/<id>/secret/`` — its signing secret (its owner only);
  ``POST`` — a new secret (its owner only);
* ``GET /api/v1/webhooks/<id>/deliveries/`` — its deliveries, newest first, in keyset pages
  (``?cursor=`` from ``next``), ``?status=pending|succeeded|failed``;
* ``GET /api/v1/webhooks/<id>/deliveries/<delivery>/`` — one, with its payload and attempts;
* ``POST /api/v1/webhooks/<id>/deliveries/<delivery>/redeliver/`` — send it again (202);
* ``GET /api/v1/webhooks/events/`` — the event types a subscription may name.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework import exceptions
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claimsdb.access import may_manage_webhooks, may_read_webhook_secret
from claimsdb.codes import PermissionCode, WebhookCode
from claimsdb.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookSubscription
from claimsdb.records import RuleViolation, canonical
from claimsdb.webhooks import subscriptions
from claimsdb.webhooks.events import event_types, time_text

from .common import CanonicalJSONRenderer, DocumentJSONParser, NoFormSerializer, Pagination
from .errors import RequestViolations
from .rest import page_response
from .schema import webhooks as schema

NUMBER = re.compile(r"[1-9][0-9]{0,17}")
ATTEMPTS_SHOWN = 100


class WebhookPermission(BasePermission):
    """Reviewers only, reading and writing (``access.may_manage_webhooks``)."""

    code = PermissionCode.DENIED
    message = "webhooks need the reviewer role"

    def has_permission(self, request, view) -> bool:
        return may_manage_webhooks(request.user)


def _time(moment: Any) -> str | None:
    return time_text(moment) if moment is not None else None


def subscription_body(request: Request, subscription: WebhookSubscription) -> dict[str, Any]:
    base = f"/api/v1/webhooks/{subscription.pk}/"
    return {
        "id": subscription.pk,
        "url": subscription.url,
        "description": subscription.description,
        "events": subscription.events,
        "kinds": subscription.kinds,
        "case_keys": subscription.case_keys,
        "tags": subscription.tags,
        "active": subscription.active,
        "owner": subscription.owner.get_username(),
        "created_at": _time(subscription.created_at),
        "from_revision": subscription.from_revision,
        "sequence": subscription.sequence,
        "self": request.build_absolute_uri(base),
        "deliveries": request.build_absolute_uri(f"{base}deliveries/"),
        "secret": request.build_absolute_uri(f"{base}secret/"),
    }


def delivery_body(request: Request, delivery: WebhookDelivery) -> dict[str, Any]:
    base = f"/api/v1/webhooks/{delivery.subscription_id}/deliveries/{delivery.pk}/"
    return {
        "id": delivery.pk,
        "message_id": delivery.message_id,
        "event_type": delivery.event_type,
        "sequence": delivery.sequence,
        "revision": delivery.revision,
        "status": delivery.status,
        "created_at": _time(delivery.created_at),
        "attempts": delivery.attempt_count,
        "last_attempt_at": _time(delivery.last_attempt_at),
        "last_status_code": delivery.last_status_code,
        "last_error": delivery.last_error,
        "next_attempt_at": _time(delivery.next_attempt_at),
        "self": request.build_absolute_uri(base),
        "redeliver": request.build_absolute_uri(f"{base}redeliver/"),
    }


def _subscription_or_404(pk: str) -> WebhookSubscription:
    found = None
    if NUMBER.fullmatch(pk):
        found = WebhookSubscription.objects.select_related("owner").filter(pk=int(pk)).first()
    if found is None:
        raise NotFound(f"there is no webhook subscription {pk}", code=WebhookCode.NOT_FOUND)
    return found


def _delivery_or_404(subscription: WebhookSubscription, pk: str) -> WebhookDelivery:
    found = None
    if NUMBER.fullmatch(pk):
        found = WebhookDelivery.objects.filter(subscription=subscription, pk=int(pk)).first()
    if found is None:
        raise NotFound(
            f"webhook subscription {subscription.pk} has no delivery {pk}",
            code=WebhookCode.NOT_FOUND,
        )
    return found


def _body(request: Request) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict):
        raise RequestViolations(
            [RuleViolation(WebhookCode.FILTER_INVALID, "the body is a JSON object", "")]
        )
    return dict(data)


class WebhookBase(APIView):
    permission_classes = [WebhookPermission]
    parser_classes = [DocumentJSONParser]
    renderer_classes = [CanonicalJSONRenderer]
    serializer_class = NoFormSerializer


@schema.SUBSCRIPTION_LIST
class SubscriptionListView(WebhookBase):
    def get(self, request: Request) -> Response:
        paginator = Pagination()
        rows = WebhookSubscription.objects.select_related("owner").order_by("-pk")
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([subscription_body(request, s) for s in page])

    def post(self, request: Request) -> Response:
        subscription = subscriptions.subscription_create(user=request.user, values=_body(request))
        body = {**subscription_body(request, subscription), "secret_value": subscription.secret}
        return Response(body, status=201, headers={"Location": body["self"]})


@schema.SUBSCRIPTION_DETAIL
class SubscriptionDetailView(WebhookBase):
    def get(self, request: Request, pk: str) -> Response:
        return Response(subscription_body(request, _subscription_or_404(pk)))

    def patch(self, request: Request, pk: str) -> Response:
        subscription = subscriptions.subscription_update(
            user=request.user, subscription=_subscription_or_404(pk), values=_body(request)
        )
        return Response(subscription_body(request, subscription))

    def delete(self, request: Request, pk: str) -> Response:
        subscriptions.subscription_delete(user=request.user, subscription=_subscription_or_404(pk))
        return Response(status=204)


@schema.SUBSCRIPTION_SECRET
class SubscriptionSecretView(WebhookBase):
    def _owned(self, request: Request, pk: str) -> WebhookSubscription:
        subscription = _subscription_or_404(pk)
        if not may_read_webhook_secret(request.user, subscription.owner_id):
            raise exceptions.PermissionDenied(
                "only the reviewer who made a subscription reads or rotates its secret",
                code=WebhookCode.NOT_OWNER,
            )
        return subscription

    def get(self, request: Request, pk: str) -> Response:
        subscription = self._owned(request, pk)
        return Response({"id": subscription.pk, "secret": subscription.secret})

    def post(self, request: Request, pk: str) -> Response:
        subscription = self._owned(request, pk)
        secret = subscriptions.secret_rotate(user=request.user, subscription=subscription)
        return Response({"id": subscription.pk, "secret": secret})


class DeliveryPagination(CursorPagination):
    """Newest first, by id, 50 a page (``?page_size=`` up to 200): each page is one step
    along the (subscription, id) index, however many deliveries there are."""

    ordering = "-id"
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_paginated_response(self, data: list[Any]) -> Response:
        """The page with its links in the body and in a ``Link`` header (docs/api.md)."""
        links = {"next": self.get_next_link(), "previous": self.get_previous_link()}
        return page_response(self.request, {**links, "results": data}, links)


@schema.DELIVERY_LIST
class DeliveryListView(WebhookBase):
    def get(self, request: Request, pk: str) -> Response:
        subscription = _subscription_or_404(pk)
        rows = WebhookDelivery.objects.filter(subscription=subscription).defer("payload")
        status = request.query_params.get("status")
        if status:
            if status not in DeliveryStatus.values:
                raise RequestViolations(
                    [
                        RuleViolation(
                            WebhookCode.FILTER_INVALID,
                            f"status is one of {', '.join(DeliveryStatus.values)}",
                            "status",
                        )
                    ]
                )
            rows = rows.filter(status=status)
        paginator = DeliveryPagination()
        page = paginator.paginate_queryset(rows, request, view=self) or []
        return paginator.get_paginated_response([delivery_body(request, d) for d in page])


@schema.DELIVERY_DETAIL
class DeliveryDetailView(WebhookBase):
    def get(self, request: Request, pk: str, delivery: str) -> Response:
        found = _delivery_or_404(_subscription_or_404(pk), delivery)
        attempts = WebhookAttempt.objects.filter(delivery=found).order_by("-number")[
            :ATTEMPTS_SHOWN
        ]
        return Response(
            {
                **delivery_body(request, found),
                "payload": canonical.loads(found.payload),
                "attempt_log": [
                    {
                        "number": attempt.number,
                        "at": _time(attempt.at),
                        "status_code": attempt.status_code,
                        "error": attempt.error,
                        "next_attempt_at": _time(attempt.next_attempt_at),
                    }
                    for attempt in attempts
                ],
            }
        )


@schema.DELIVERY_REDELIVER
class DeliveryRedeliverView(WebhookBase):
    def post(self, request: Request, pk: str, delivery: str) -> Response:
        subscription = _subscription_or_404(pk)
        found = _delivery_or_404(subscription, delivery)
        subscriptions.deliveries_redeliver(
            user=request.user, subscription=subscription, delivery_ids=[found.pk]
        )
        found.refresh_from_db()
        return Response(delivery_body(request, found), status=202)


@schema.EVENT_TYPES
class EventTypesView(WebhookBase):
    def get(self, request: Request) -> Response:
        return Response(
            {
                "results": [
                    {"name": t.name, "description": t.description, "filtered": t.filtered}
                    for t in event_types
                ]
            }
        )
