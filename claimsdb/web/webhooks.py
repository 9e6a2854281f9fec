"""Webhook pages for reviewers (docs/integrations.md): the subscriptions and a form to make
one; a subscription with its settings and a page of its deliveries; a delivery with its
payload and attempts; redelivery; the signing secret, for its owner.

Who may use them is ``access.may_manage_webhooks`` (and ``may_read_webhook_secret`` for the
secret); the services check the role again inside their transactions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from claimsdb import access
from claimsdb.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookSubscription
from claimsdb.records import PermissionDenied, RuleViolation, RuleViolations, canonical
from claimsdb.records.kinds import record_kinds
from claimsdb.webhooks import subscriptions
from claimsdb.webhooks.events import event_types

from .pagination import paginate

ATTEMPTS_SHOWN = 100
SPLIT = re.compile(r"[,\s]+")


def reviewer_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Anonymous users sign in first; users who may not manage webhooks get 403."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not access.may_manage_webhooks(request.user):
            raise DjangoPermissionDenied("webhooks need the reviewer role")
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as exc:
            raise DjangoPermissionDenied(str(exc)) from exc

    return wrapper


class SubscriptionForm(forms.Form):
    url = forms.CharField(
        label="Receiver URL",
        max_length=2000,
        help_text="An https:// URL at a public address; every delivery is POSTed there.",
        widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.org/claimsdb"}),
    )
    description = forms.CharField(label="Description", max_length=200, required=False)
    events = forms.MultipleChoiceField(
        label="Events",
        choices=[(t.name, f"{t.name}: {t.description}") for t in event_types],
        widget=forms.CheckboxSelectMultiple,
    )
    kinds = forms.MultipleChoiceField(
        label="Only records of these kinds",
        choices=[(name, name) for name in record_kinds.names()],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None ticked: every kind.",
    )
    case_keys = forms.CharField(
        label="Only these cases",
        required=False,
        help_text="Case keys, separated by spaces or commas (e.g. CP22-003). Empty: every case.",
    )
    tags = forms.CharField(
        label="Only cases with one of these tags",
        required=False,
        help_text="Tags, separated by commas. Empty: any.",
    )
    active = forms.BooleanField(
        label="Active (unticked: deliveries wait)", required=False, initial=True
    )

    def values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "url": data["url"],
            "description": data["description"],
            "events": list(data["events"]),
            "kinds": list(data["kinds"]),
            "case_keys": [key for key in SPLIT.split(data["case_keys"]) if key],
            "tags": [tag.strip() for tag in data["tags"].split(",") if tag.strip()],
            "active": data["active"],
        }

    def refuse(self, refusal: RuleViolations) -> list[RuleViolation]:
        """Put each violation at its field; return those that belong to none."""
        others = []
        for violation in refusal.violations:
            field = violation.path.split("[", 1)[0]
            if field in self.fields:
                self.add_error(field, f"{violation.message} ({violation.code})")
            else:
                others.append(violation)
        return others

    @classmethod
    def of(cls, subscription: WebhookSubscription) -> SubscriptionForm:
        return cls(
            initial={
                "url": subscription.url,
                "description": subscription.description,
                "events": subscription.events,
                "kinds": subscription.kinds,
                "case_keys": " ".join(subscription.case_keys),
                "tags": ", ".join(subscription.tags),
                "active": subscription.active,
            }
        )


def subscription_path(subscription: WebhookSubscription | int) -> str:
    pk = subscription if isinstance(subscription, int) else subscription.pk
    return f"/webhooks/{pk}/"


def _subscription_or_404(pk: int) -> WebhookSubscription:
    found = WebhookSubscription.objects.select_related("owner").filter(pk=pk).first()
    if found is None:
        raise Http404(f"no webhook subscription {pk}")
    return found


@reviewer_page
def subscription_list(request: HttpRequest) -> HttpResponse:
    """Every subscription, newest first, a page at a time, and the form to make one."""
    form = SubscriptionForm(request.POST if request.method == "POST" else None)
    violations: list[RuleViolation] = []
    if request.method == "POST" and form.is_valid():
        try:
            made = subscriptions.subscription_create(user=request.user, values=form.values())
        except RuleViolations as refusal:
            violations = form.refuse(refusal)
        else:
            messages.success(
                request,
                "Subscribed. Deliveries are signed with the secret shown on this page; "
                "keep it in the receiver's configuration.",
            )
            return HttpResponseRedirect(f"{subscription_path(made)}secret/")
    rows = WebhookSubscription.objects.select_related("owner").order_by("-pk")
    pages = paginate(request, rows, noun="subscription")
    return render(
        request,
        "webhooks/list.html",
        {"pages": pages, "subscriptions": pages.items, "form": form, "violations": violations},
        status=400 if request.method == "POST" else 200,
    )


@reviewer_page
def subscription_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A subscription: its settings (a form to change them), and a page of its deliveries,
    newest first (``?status=`` narrows them)."""
    subscription = _subscription_or_404(pk)
    violations: list[RuleViolation] = []
    if request.method == "POST":
        form = SubscriptionForm(request.POST)
        if form.is_valid():
            try:
                subscriptions.subscription_update(
                    user=request.user, subscription=subscription, values=form.values()
                )
            except RuleViolations as refusal:
                violations = form.refuse(refusal)
            else:
                messages.success(request, "The subscription is changed.")
                return HttpResponseRedirect(subscription_path(subscription))
    else:
        form = SubscriptionForm.of(subscription)
    status = request.GET.get("status", "")
    rows = WebhookDelivery.objects.filter(subscription=subscription).defer("payload")
    if status in DeliveryStatus.values:
        rows = rows.filter(status=status)
    else:
        status = ""
    pages = paginate(request, rows.order_by("-pk"), noun="delivery")
    return render(
        request,
        "webhooks/detail.html",
        {
            "subscription": subscription,
            "form": form,
            "violations": violations,
            "pages": pages,
            "deliveries": pages.items,
            "status": status,
            "statuses": DeliveryStatus.values,
            "is_owner": access.may_read_webhook_secret(request.user, subscription.owner_id),
        },
        status=400 if request.method == "POST" else 200,
    )


@reviewer_page
def subscription_delete(request: HttpRequest, pk: int) -> HttpResponse:
    subscription = _subscription_or_404(pk)
    if request.method != "POST":
        return HttpResponseRedirect(subscription_path(subscription))
    subscriptions.subscription_delete(user=request.user, subscription=subscription)
    messages.success(request, f"Subscription {pk} is deleted, with its deliveries.")
    return HttpResponseRedirect("/webhooks/")


@reviewer_page
def subscription_secret(request: HttpRequest, pk: int) -> HttpResponse:
    """The signing secret, for the reviewer who made the subscription; a POST rotates it."""
    subscription = _subscription_or_404(pk)
    if not access.may_read_webhook_secret(request.user, subscription.owner_id):
        raise DjangoPermissionDenied("only the reviewer who made a subscription reads its secret")
    if request.method == "POST":
        subscriptions.secret_rotate(user=request.user, subscription=subscription)
        messages.success(request, "A new secret: deliveries from now on are signed with it.")
        return HttpResponseRedirect(f"{subscription_path(subscription)}secret/")
    response = render(request, "webhooks/secret.html", {"subscription": subscription})
    response["Cache-Control"] = "no-store"
    return response


@reviewer_page
def delivery_detail(request: HttpRequest, pk: int, delivery: int) -> HttpResponse:
    """One delivery: its payload as sent, and its attempts, newest first."""
    subscription = _subscription_or_404(pk)
    found = WebhookDelivery.objects.filter(subscription=subscription, pk=delivery).first()
    if found is None:
        raise Http404(f"no delivery {delivery} of subscription {pk}")
    attempts = list(
        WebhookAttempt.objects.filter(delivery=found).order_by("-number")[:ATTEMPTS_SHOWN]
    )
    payload = canonical.dumps_pretty(canonical.loads(found.payload))
    return render(
        request,
        "webhooks/delivery.html",
        {
            "subscription": subscription,
            "delivery": found,
            "attempts": attempts,
            "payload": payload,
        },
    )


@reviewer_page
def delivery_redeliver(request: HttpRequest, pk: int, delivery: int) -> HttpResponse:
    subscription = _subscription_or_404(pk)
    if request.method == "POST":
        count = subscriptions.deliveries_redeliver(
            user=request.user, subscription=subscription, delivery_ids=[delivery]
        )
        if not count:
            raise Http404(f"no delivery {delivery} of subscription {pk}")
        messages.success(request, "The delivery will be sent again within seconds.")
    back = request.POST.get("next", "")
    if not back.startswith(subscription_path(subscription)):
        back = subscription_path(subscription)
    return HttpResponseRedirect(back)
