"""Webhook pages (reviewers)."""

from django.urls import path

from . import webhooks

urlpatterns = [
    path("webhooks/", webhooks.subscription_list, name="webhook-list"),
    path("webhooks/<int:pk>/", webhooks.subscription_detail, name="webhook-detail"),
    path("webhooks/<int:pk>/delete/", webhooks.subscription_delete, name="webhook-delete"),
    path("webhooks/<int:pk>/secret/", webhooks.subscription_secret, name="webhook-secret"),
    path(
        "webhooks/<int:pk>/deliveries/<int:delivery>/",
        webhooks.delivery_detail,
        name="webhook-delivery",
    ),
    path(
        "webhooks/<int:pk>/deliveries/<int:delivery>/redeliver/",
        webhooks.delivery_redeliver,
        name="webhook-redeliver",
    ),
]
