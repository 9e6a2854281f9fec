"""The events a subscription may ask for: one registry, and ``emit`` for those that are not
revisions (docs/integrations.md, "Events").

A revision needs nothing emitted: the ledger itself is the outbox, read after its commit by
the fan-out (``claimsdb.webhooks.fanout``), so a rolled-back write, which leaves no
revision, is never reported, and a committed one always is. Every other event is a row
written by ``emit`` inside the transaction of the change it reports (a release, an import's
report): it commits with that change or not at all.

A new event is one registration here, and one ``emit`` call in the service that makes the
change, inside its transaction, as ``record.approved`` is: registered below, and recorded
by ``emit_approvals`` from ``services.approvals`` in the approval's own transaction.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from claimsdb.models import (
    Approval,
    CaseTag,
    LedgerHead,
    Release,
    WebhookEvent,
    WebhookSubscription,
)
from claimsdb.records.schema import normalized_tags
from claimsdb.services.ledger import GENESIS_HASH, format_time


@dataclass(frozen=True)
class EventType:
    """One kind of event: what it is about and what happened to it (its name,
    ``revision.written``, joins the two), what it means, and whether the subscription
    filters (kinds, case keys, tags) apply to it (``filtered``; an event that concerns no
    record, such as a release, reaches every subscription that asks for it)."""

    subject: str
    happened: str
    description: str
    filtered: bool = True

    @property
    def name(self) -> str:
        return f"{self.subject}.{self.happened}"


class EventTypes:
    """The registry of event types, in the order they were registered."""

    def __init__(self) -> None:
        self._types: dict[str, EventType] = {}

    def register(self, event_type: EventType) -> EventType:
        if event_type.name in self._types:
            raise ValueError(f"event type {event_type.name!r} is registered already")
        self._types[event_type.name] = event_type
        return event_type

    def get(self, name: str) -> EventType:
        return self._types[name]

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def __iter__(self) -> Iterator[EventType]:
        return iter(self._types.values())

    def names(self) -> list[str]:
        return list(self._types)


event_types = EventTypes()

REVISION_WRITTEN = event_types.register(
    EventType(
        "revision",
        "written",
        "a revision was written to the ledger (any record, any action: create, update, "
        "withdraw, revert, import)",
    )
)
RELEASE_PUBLISHED = event_types.register(
    EventType(
        "release",
        "published",
        "a release was published (not narrowed by filters: it concerns every record)",
        filtered=False,
    )
)
IMPORT_FINISHED = event_types.register(
    EventType(
        "import",
        "finished",
        "a results file was imported, replaced a run, restored its rows, or was already "
        "imported (outcome imported, replaced, restored or unchanged); not dry runs",
    )
)
IMPORT_FAILED = event_types.register(
    EventType(
        "import",
        "failed",
        "an import was refused (outcome refused, with its problems) or its background job "
        "failed (outcome failed); nothing was written; not dry runs",
    )
)
RECORD_APPROVED = event_types.register(
    EventType(
        "record",
        "approved",
        "a reviewer approved a record at a revision, covering every change since its "
        "previous approved revision (docs/review.md); a release publishes approved revisions",
    )
)


def time_text(moment: dt.datetime) -> str:
    """UTC, RFC 3339 with ``Z``, as the API writes times."""
    return format_time(moment)


def site_url(path: str) -> str:
    """``path`` under ``WEBHOOKS_SITE_URL`` (absolute when it is set)."""
    return f"{getattr(settings, 'WEBHOOKS_SITE_URL', '')}{path}"


def ledger_head() -> tuple[int, str]:
    """The ledger head as the current transaction sees it: its number and chain hash."""
    head = LedgerHead.objects.filter(pk=1).values_list("number", "chain_hash").first()
    return head if head is not None else (0, GENESIS_HASH)


def emit(
    event_type: EventType,
    *,
    data: dict[str, Any],
    record_kind: str = "",
    case_key: str = "",
    tags: Iterable[str] = (),
    ledger: tuple[int, str] | None = None,
) -> WebhookEvent:
    """Record an event in the current transaction, to be fanned out once it commits.

    ``record_kind``, ``case_key`` and ``tags`` are what subscription filters match;
    ``ledger`` the ledger head after the change (read here when not given).
    """
    if event_type.name not in event_types:
        raise ValueError(f"event type {event_type.name!r} is not registered")
    with transaction.atomic():
        number, chain_hash = ledger if ledger is not None else ledger_head()
        return WebhookEvent.objects.create(
            type=event_type.name,
            occurred_at=timezone.now(),
            data=data,
            ledger_revision=number,
            ledger_chain_hash=chain_hash,
            record_kind=record_kind,
            case_key=case_key[:100],
            tags=normalized_tags(list(tags)),
        )


# --- the events of imports and releases -----------------------------------------------------

FINISHED_OUTCOMES = ("imported", "replaced", "restored", "unchanged")
FAILED_OUTCOMES = ("refused", "failed")


def emit_import(
    *,
    report_id: int,
    outcome: str,
    filename: str,
    run_id: str,
    case_key: str,
    revision: int | None,
    message: str,
    codes: Iterable[str] = (),
) -> WebhookEvent | None:
    """The event of an import's outcome (``import.finished`` or ``import.failed``), in the
    transaction that stores its report; None for an outcome that is neither (a dry run's,
    a queued one's)."""
    if outcome in FINISHED_OUTCOMES:
        event_type = IMPORT_FINISHED
    elif outcome in FAILED_OUTCOMES:
        event_type = IMPORT_FAILED
    else:
        return None
    tags: list[str] = []
    if case_key:
        tags = list(CaseTag.objects.filter(case__key=case_key).values_list("name", flat=True))
    data = {
        "import": {
            "id": report_id,
            "outcome": outcome,
            "filename": filename,
            "run_id": run_id,
            "case_key": case_key,
            "revision": revision,
            "message": message,
            "codes": sorted(set(codes)),
            "url": site_url(f"/api/v1/imports/{report_id}/"),
        }
    }
    return emit(event_type, data=data, record_kind="case", case_key=case_key, tags=tags)


def emit_release(release: Release, *, chain_hash: str) -> WebhookEvent:
    """The event of a release just published, in its transaction (``chain_hash``: the
    ledger head's, which the release was taken at)."""
    number = release.number
    data = {
        "release": {
            "number": number,
            "published_at": time_text(release.published_at),
            "notes": release.notes,
            "last_revision": release.last_revision,
            "counts": release.change_counts,
            "url": site_url(f"/api/v1/releases/{number}/"),
            "bundle": site_url(f"/api/v1/releases/{number}/bundle.json"),
        }
    }
    return emit(RELEASE_PUBLISHED, data=data, ledger=(release.last_revision, chain_hash))


def emit_approvals(approvals: Sequence[Approval]) -> None:
    """The events of approvals just written, in their transaction: one per approval, in
    one insert (``approve_pending`` may approve a whole load at once). Nothing is recorded
    while no subscription exists: a subscription hears of what happens after it is made."""
    if not approvals or not WebhookSubscription.objects.exists():
        return
    number, chain_hash = ledger_head()
    now = timezone.now()
    WebhookEvent.objects.bulk_create(
        WebhookEvent(
            type=RECORD_APPROVED.name,
            occurred_at=now,
            data={
                "approval": {
                    "number": approval.number,
                    "record_kind": approval.record_kind,
                    "record_key": approval.record_key,
                    "revision": approval.revision_number,
                    "since_revision": approval.since_number,
                    "reviewer": approval.reviewer.get_username(),
                    "self_approved": approval.self_approved,
                    "approved_at": time_text(approval.created_at),
                    "note": approval.note,
                    "chain_hash": approval.chain_hash,
                }
            },
            ledger_revision=number,
            ledger_chain_hash=chain_hash,
            record_kind=approval.record_kind,
            case_key=approval.record_key if approval.record_kind == "case" else "",
        )
        for approval in approvals
    )
