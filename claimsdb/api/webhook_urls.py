"""REST API for webhook subscriptions and their deliveries (``api/webhooks.py``).

Ids are matched as any text and checked by the views, so that a malformed one still gets
a 404 in the API's error shape."""

from django.urls import re_path

from . import webhooks

ID = r"(?P<pk>[^/]+)"
DELIVERY = r"(?P<delivery>[^/]+)"

urlpatterns = [
    re_path(r"^webhooks/$", webhooks.SubscriptionListView.as_view(), name="api-webhook-list"),
    re_path(r"^webhooks/events/$", webhooks.EventTypesView.as_view(), name="api-webhook-events"),
    re_path(
        rf"^webhooks/{ID}/$", webhooks.SubscriptionDetailView.as_view(), name="api-webhook-detail"
    ),
    re_path(
        rf"^webhooks/{ID}/secret/$",
        webhooks.SubscriptionSecretView.as_view(),
        name="api-webhook-secret",
    ),
    re_path(
        rf"^webhooks/{ID}/deliveries/$",
        webhooks.DeliveryListView.as_view(),
        name="api-webhook-deliveries",
    ),
    re_path(
        rf"^webhooks/{ID}/deliveries/{DELIVERY}/$",
        webhooks.DeliveryDetailView.as_view(),
        name="api-webhook-delivery",
    ),
    re_path(
        rf"^webhooks/{ID}/deliveries/{DELIVERY}/redeliver/$",
        webhooks.DeliveryRedeliverView.as_view(),
        name="api-webhook-redeliver",
    ),
]
