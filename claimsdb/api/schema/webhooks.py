"""The OpenAPI description of webhooks (``api/webhooks.py``): a subscription, a delivery,
the requests that make and change a subscription, and each operation."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)

from claimsdb.choices import CASE_KEY_PATTERN
from claimsdb.models import DeliveryStatus
from claimsdb.records.kinds import record_kinds
from claimsdb.webhooks.events import RELEASE_PUBLISHED, REVISION_WRITTEN, event_types

from .. import openapi

URI = {"type": "string", "format": "uri"}
TIME = {"type": "string", "format": "date-time"}
NULLABLE_TIME = {**TIME, "nullable": True}
STRINGS = {"type": "array", "items": {"type": "string"}}
EVENT_TYPE = openapi.component("WebhookEventType", {"type": "string", "enum": event_types.names()})
RECORD_KIND = openapi.component("RecordKind", {"type": "string", "enum": record_kinds.names()})
DELIVERY_STATUS = openapi.component(
    "WebhookDeliveryStatus", {"type": "string", "enum": list(DeliveryStatus.values)}
)

SUBSCRIPTION_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "url": {"type": "string", "format": "uri", "description": "where deliveries go"},
        "description": {"type": "string"},
        "events": {"type": "array", "items": EVENT_TYPE},
        "kinds": {
            "type": "array",
            "items": RECORD_KIND,
            "description": "only events about records of these kinds (empty: any)",
        },
        "case_keys": {**STRINGS, "description": "only events about these cases (empty: any)"},
        "tags": {**STRINGS, "description": "only events about cases with one of these tags"},
        "active": {"type": "boolean", "description": "false: deliveries wait"},
        "owner": {"type": "string"},
        "created_at": TIME,
        "from_revision": {
            "type": "integer",
            "description": "the ledger head when it was made: revisions after it are sent",
        },
        "sequence": {"type": "integer", "description": "the sequence of its latest delivery"},
        "self": URI,
        "deliveries": URI,
        "secret": {**URI, "description": "where its owner reads its secret"},
    },
}
SUBSCRIPTION_SCHEMA = openapi.component("WebhookSubscription", SUBSCRIPTION_BODY)
CREATED_SCHEMA = openapi.component(
    "WebhookSubscriptionCreated",
    {
        "allOf": [
            SUBSCRIPTION_SCHEMA,
            {
                "type": "object",
                "properties": {
                    "secret_value": {
                        "type": "string",
                        "description": "the signing secret (`whsec_…`), in this response only; "
                        "its owner reads it again at `secret`",
                    }
                },
            },
        ]
    },
)
SUBSCRIPTION_PAGE_SCHEMA = openapi.component(
    "WebhookSubscriptionPage",
    {
        "type": "object",
        "properties": {
            "count": {"type": "integer"},
            "next": {**URI, "nullable": True},
            "previous": {**URI, "nullable": True},
            "results": {"type": "array", "items": SUBSCRIPTION_SCHEMA},
        },
    },
)
SECRET_SCHEMA = openapi.component(
    "WebhookSecret",
    {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "secret": {"type": "string"}},
    },
)
DELIVERY_BODY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "message_id": {"type": "string", "description": "the `webhook-id` header it is sent with"},
        "event_type": EVENT_TYPE,
        "sequence": {"type": "integer"},
        "revision": {"type": "integer", "nullable": True},
        "status": DELIVERY_STATUS,
        "created_at": TIME,
        "attempts": {"type": "integer"},
        "last_attempt_at": NULLABLE_TIME,
        "last_status_code": {"type": "integer", "nullable": True},
        "last_error": {"type": "string"},
        "next_attempt_at": NULLABLE_TIME,
        "self": URI,
        "redeliver": URI,
    },
}
DELIVERY_SCHEMA = openapi.component("WebhookDelivery", DELIVERY_BODY)
DELIVERY_DETAIL_SCHEMA = openapi.component(
    "WebhookDeliveryDetail",
    {
        "allOf": [
            DELIVERY_SCHEMA,
            {
                "type": "object",
                "properties": {
                    "payload": {"type": "object", "description": "the body it is sent with"},
                    "attempt_log": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "number": {"type": "integer"},
                                "at": TIME,
                                "status_code": {"type": "integer", "nullable": True},
                                "error": {"type": "string"},
                                "next_attempt_at": NULLABLE_TIME,
                            },
                        },
                    },
                },
            },
        ]
    },
)
DELIVERY_PAGE_SCHEMA = openapi.component(
    "WebhookDeliveryPage",
    {
        "type": "object",
        "properties": {
            "next": {**URI, "nullable": True},
            "previous": {**URI, "nullable": True},
            "results": {"type": "array", "items": DELIVERY_SCHEMA},
        },
    },
)
EVENT_TYPES_SCHEMA = openapi.component(
    "WebhookEventTypes",
    {
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "description": {"type": "string"},
                        "filtered": {"type": "boolean"},
                    },
                },
            }
        },
    },
)


SUBSCRIPTION_FIELDS: dict[str, Any] = {
    "url": {
        "type": "string",
        "format": "uri",
        "maxLength": 2000,
        "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@]",
        "description": "an http(s) URL at a public address (no credentials, no fragment)",
    },
    "events": {"type": "array", "items": EVENT_TYPE, "minItems": 1},
    "description": {"type": "string", "maxLength": 200},
    "kinds": {"type": "array", "items": RECORD_KIND},
    "case_keys": {
        "type": "array",
        "items": {"type": "string", "pattern": CASE_KEY_PATTERN, "maxLength": 40},
    },
    "tags": {
        "type": "array",
        "items": {"type": "string", "minLength": 1, "maxLength": 100, "pattern": "\\S"},
    },
    "active": {"type": "boolean"},
}
# The bodies that make and change a subscription (the view reads them itself): closed, as
# a field a subscription does not have is refused.
SUBSCRIPTION_REQUEST = openapi.component(
    "WebhookSubscriptionRequest",
    {
        "type": "object",
        "properties": SUBSCRIPTION_FIELDS,
        "required": ["url", "events"],
        "additionalProperties": False,
    },
)
SUBSCRIPTION_PATCH = openapi.component(
    "WebhookSubscriptionPatch",
    {"type": "object", "properties": SUBSCRIPTION_FIELDS, "additionalProperties": False},
)


# the URL's ``pk`` is published as ``id`` (drf-spectacular's SCHEMA_COERCE_PATH_PK):
# declaring it under that name describes the one path parameter, never a second
ID_PARAMETER = OpenApiParameter(
    "id", OpenApiTypes.INT, OpenApiParameter.PATH, description="the subscription's id"
)
DELIVERY_PARAMETER = OpenApiParameter(
    "delivery", OpenApiTypes.INT, OpenApiParameter.PATH, description="the delivery's id"
)
TAGS = ["webhooks"]


def _errors(*statuses: int) -> dict[tuple[int, str], OpenApiResponse]:
    return openapi.error_responses(*statuses, family="webhook")


SUBSCRIPTION_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_list",
        summary="List webhook subscriptions",
        description="Every subscription, newest first, 50 a page (reviewers).",
        tags=TAGS,
        parameters=[
            OpenApiParameter("page", OpenApiTypes.INT, OpenApiParameter.QUERY),
            OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
        ],
        responses={200: SUBSCRIPTION_PAGE_SCHEMA, **_errors(401, 403, 404)},
    ),
    post=extend_schema(
        operation_id="webhooks_create",
        summary="Subscribe to events",
        description="Makes a subscription (reviewers): deliveries of the events it names, "
        "narrowed by its filters, signed with a secret generated for it (in the response "
        "this once; its owner reads it again at `secret`). A URL at a private, loopback or "
        "link-local address is refused (`webhook.url_refused`).",
        tags=TAGS,
        request={"application/json": SUBSCRIPTION_REQUEST},
        responses={
            201: OpenApiResponse(CREATED_SCHEMA, description="the subscription made"),
            **_errors(400, 401, 403),
        },
        examples=[
            OpenApiExample(
                "subscription",
                value={
                    "url": "https://hooks.example.org/claimsdb",
                    "events": [REVISION_WRITTEN.name, RELEASE_PUBLISHED.name],
                    "kinds": ["case"],
                    "tags": ["rdma"],
                },
                request_only=True,
            )
        ],
    ),
)

SUBSCRIPTION_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_retrieve",
        summary="Read a webhook subscription",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        responses={200: SUBSCRIPTION_SCHEMA, **_errors(401, 403, 404)},
    ),
    patch=extend_schema(
        operation_id="webhooks_update",
        summary="Change a webhook subscription",
        description="Changes the fields sent (`active: false` pauses it: its deliveries "
        "wait). Deliveries already made are not changed.",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        request={"application/json": SUBSCRIPTION_PATCH},
        responses={200: SUBSCRIPTION_SCHEMA, **_errors(400, 401, 403, 404)},
    ),
    delete=extend_schema(
        operation_id="webhooks_destroy",
        summary="Delete a webhook subscription",
        description="Deletes it with its deliveries; pending ones are never sent.",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        responses={204: None, **_errors(401, 403, 404)},
    ),
)

SUBSCRIPTION_SECRET = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_secret",
        summary="Read a subscription's signing secret",
        description="The `whsec_…` secret its deliveries are signed with (its owner only: "
        "another reviewer gets 403 `webhook.not_owner`).",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        responses={200: SECRET_SCHEMA, **_errors(401, 403, 404)},
    ),
    post=extend_schema(
        operation_id="webhooks_secret_rotate",
        summary="Rotate a subscription's signing secret",
        description="A new secret (its owner only); every delivery from now on, retries "
        "included, is signed with it.",
        tags=TAGS,
        parameters=[ID_PARAMETER],
        request=None,
        responses={200: SECRET_SCHEMA, **_errors(401, 403, 404)},
    ),
)

DELIVERY_LIST = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_deliveries_list",
        summary="List a subscription's deliveries",
        description="Newest first, 50 a page (`page_size` up to 200), in keyset pages: "
        "follow `next`. `status` narrows them.",
        tags=TAGS,
        parameters=[
            ID_PARAMETER,
            OpenApiParameter(
                "status",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                enum=list(DeliveryStatus.values),
            ),
            OpenApiParameter("cursor", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter("page_size", OpenApiTypes.INT, OpenApiParameter.QUERY),
        ],
        responses={200: DELIVERY_PAGE_SCHEMA, **_errors(400, 401, 403, 404)},
    ),
)

DELIVERY_DETAIL = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_deliveries_retrieve",
        summary="Read a delivery",
        description="One delivery with its payload and its latest 100 attempts.",
        tags=TAGS,
        parameters=[ID_PARAMETER, DELIVERY_PARAMETER],
        responses={200: DELIVERY_DETAIL_SCHEMA, **_errors(401, 403, 404)},
    ),
)

DELIVERY_REDELIVER = extend_schema_view(
    post=extend_schema(
        operation_id="webhooks_deliveries_redeliver",
        summary="Send a delivery again",
        description="Makes the delivery pending and due now, with a new retry window (a "
        "failed one, or one that succeeded); the worker sends it within seconds, with the "
        "same `webhook-id`.",
        tags=TAGS,
        parameters=[ID_PARAMETER, DELIVERY_PARAMETER],
        request=None,
        responses={202: DELIVERY_SCHEMA, **_errors(401, 403, 404)},
    ),
)

EVENT_TYPES = extend_schema_view(
    get=extend_schema(
        operation_id="webhooks_events",
        summary="List the event types",
        description="The events a subscription may name, with what each means and whether "
        "filters narrow it.",
        tags=TAGS,
        responses={200: EVENT_TYPES_SCHEMA, **_errors(401, 403)},
    ),
)
