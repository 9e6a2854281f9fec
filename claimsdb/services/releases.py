"""Publishing releases (DESIGN.md §4): what the public sees, one entry per record.

A release is the complete public view of the knowledge base at one moment: it has an entry
for every record the public can see, so the latest release alone answers "what is public".
Each entry points at the revision the public sees and says how it changed against the
previous release:

* a publishable record — a case whose status is ``ready``; a source, scope rule or
  assessment method whose status is ``active`` (they have no review step, so being active
  is their "ready") — is published at its latest revision: ``new`` if it was never
  released, ``updated`` if the public saw an older revision, ``unchanged`` otherwise;
* a withdrawn record that was released before is published at its latest (withdrawal)
  revision: ``withdrawn`` the first time, ``updated``/``unchanged`` afterwards. A record
  withdrawn before it was ever released stays out of releases;
* a record that was released before but is now a draft or in review keeps the revision
  the public saw: ``unchanged``, pointing at the previous release's revision. A record
  that was never released and is not publishable gets no entry;
* a publishable record whose latest revision has the same snapshot as the one the public
  sees (made a draft and ready again without a change) stays at the public revision, so
  cited revision numbers do not churn.

Releases never change once written: nothing here or elsewhere updates them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from claimsdb.models import (
    AssessmentMethod,
    Case,
    Release,
    ReleaseChange,
    ReleaseEntry,
    Revision,
    ScopeRule,
    Source,
)
from claimsdb.records import RuleViolation, RuleViolations

from . import search_index
from .ledger import lock_head
from .permissions import require_role

# The statuses a record is published in. Sources, rules and methods have no review step.
PUBLISHABLE = {"case": "ready", "source": "active", "rule": "active", "method": "active"}
WITHDRAWN = "withdrawn"
STATUS_MODELS = {"case": Case, "source": Source, "rule": ScopeRule, "method": AssessmentMethod}
# The order in which entries are listed: what readers care about first.
KIND_ORDER = {"case": 0, "source": 1, "rule": 2, "method": 3}
_CHUNK = 500  # keeps IN (...) lists well under every database's parameter limit


@dataclass(frozen=True)
class PlannedEntry:
    """One record's entry in the release about to be published."""

    kind: str
    key: str
    revision_id: int
    revision: int  # its number
    change: str
    previous_revision: int | None  # the revision the previous release published


@dataclass(frozen=True)
class ReleasePlan:
    """What publishing now would record: the next number and one entry per public record."""

    number: int
    previous: Release | None
    last_revision: int
    entries: list[PlannedEntry]

    @property
    def changed(self) -> list[PlannedEntry]:
        return [e for e in self.entries if e.change != ReleaseChange.UNCHANGED]

    def counts(self) -> dict[str, int]:
        counts = {change: 0 for change in ReleaseChange.values}
        for entry in self.entries:
            counts[entry.change] += 1
        return counts


def release_plan() -> ReleasePlan:
    """The release that publishing now would record (nothing is written).

    Called by ``release_publish`` under the ledger lock; called on its own (the preview
    of the publishing page, ``publish_release --dry-run``) it may be overtaken by a write.
    Runs a fixed number of queries whatever the size of the knowledge base.
    """
    previous = Release.objects.order_by("-number").first()
    released = _previous_entries(previous)
    latest = _latest_revisions()
    statuses = {
        (kind, key): status
        for kind, model in STATUS_MODELS.items()
        for key, status in model.objects.values_list("key", "status")
    }
    withdrawn_before = _withdrawn_in_public(released, latest, statuses)
    entries = []
    for record in sorted(set(latest) | set(released), key=_entry_order):
        entry = _plan_entry(
            record,
            latest.get(record),
            released.get(record),
            statuses.get(record),
            withdrawn_before,
        )
        if entry is not None:
            entries.append(entry)
    last_revision = Revision.objects.aggregate(last=Max("number"))["last"] or 0
    return ReleasePlan(
        number=previous.number + 1 if previous else 1,
        previous=previous,
        last_revision=last_revision,
        entries=entries,
    )


def release_publish(*, user: AbstractBaseUser, notes: str) -> Release:
    """Publish a release of every publishable record (see the module docstring).

    Runs in one transaction under the ledger lock, so no revision lands between reading
    the records and recording the entries. Refused without notes
    (``release.notes_required``) or when nothing changed since the previous release
    (``release.nothing_changed``); needs the reviewer role (``PermissionDenied``).
    """
    notes = (notes or "").strip()
    with transaction.atomic():
        head = lock_head()
        require_role(user, "reviewer", "publishing a release")
        plan = release_plan()
        problems = []
        if not notes:
            problems.append(
                RuleViolation(
                    "release.notes_required",
                    "a release needs notes saying what it publishes and why",
                    "notes",
                )
            )
        if not plan.changed:
            problems.append(_nothing_changed(plan))
        if problems:
            raise RuleViolations(problems)
        release = Release.objects.create(
            number=plan.number,
            published_at=timezone.now(),
            published_by=user,
            notes=notes,
            last_revision=head.number,
        )
        entries = [
            ReleaseEntry(
                release=release,
                record_kind=entry.kind,
                record_key=entry.key,
                revision_id=entry.revision_id,
                change=entry.change,
            )
            for entry in plan.entries
        ]
        ReleaseEntry.objects.bulk_create(entries, batch_size=_CHUNK)
        search_index.index_release_entries(entries)
        return release


def _nothing_changed(plan: ReleasePlan) -> RuleViolation:
    if plan.previous is None:
        message = (
            "there is nothing to publish: no case is ready and no source, scope rule or "
            "assessment method is active"
        )
    else:
        message = (
            f"nothing has changed since release {plan.previous.number}: no record has a new "
            "ready (or active) revision and none was withdrawn; a release would repeat it"
        )
    return RuleViolation("release.nothing_changed", message, "")


def _entry_order(record: tuple[str, str]) -> tuple[int, str]:
    return KIND_ORDER[record[0]], record[1]


@dataclass(frozen=True)
class _Latest:
    revision_id: int
    number: int
    sha: str


@dataclass(frozen=True)
class _Released:
    revision_id: int
    number: int
    sha: str


def _previous_entries(previous: Release | None) -> dict[tuple[str, str], _Released]:
    if previous is None:
        return {}
    rows = ReleaseEntry.objects.filter(release=previous).values_list(
        "record_kind",
        "record_key",
        "revision_id",
        "revision__number",
        "revision__snapshot_sha256",
    )
    return {(kind, key): _Released(rid, number, sha) for kind, key, rid, number, sha in rows}


def _latest_revisions() -> dict[tuple[str, str], _Latest]:
    """The latest revision of every record in the ledger."""
    numbers = [
        row["last"]
        for row in Revision.objects.order_by()
        .values("record_kind", "record_key")
        .annotate(last=Max("number"))
    ]
    latest = {}
    for start in range(0, len(numbers), _CHUNK):
        rows = Revision.objects.filter(number__in=numbers[start : start + _CHUNK]).values_list(
            "record_kind", "record_key", "id", "number", "snapshot_sha256"
        )
        for kind, key, rid, number, sha in rows:
            latest[(kind, key)] = _Latest(rid, number, sha)
    return latest


def _withdrawn_in_public(released, latest, statuses) -> set[tuple[str, str]]:
    """Records whose released revision is already a withdrawn one, among those withdrawn
    again since (the few snapshots it takes to tell ``withdrawn`` from ``updated``)."""
    wanted = [
        p.revision_id
        for record, p in released.items()
        if statuses.get(record) == WITHDRAWN
        and record in latest
        and latest[record].revision_id != p.revision_id
    ]
    if not wanted:
        return set()
    return {
        (kind, key)
        for kind, key, snapshot in Revision.objects.filter(id__in=wanted).values_list(
            "record_kind", "record_key", "snapshot"
        )
        if json.loads(snapshot).get("status") == WITHDRAWN
    }


def _plan_entry(
    record: tuple[str, str],
    latest: _Latest | None,
    released: _Released | None,
    status: str | None,
    withdrawn_before: set[tuple[str, str]],
) -> PlannedEntry | None:
    kind, key = record

    def entry(revision_id: int, number: int, change: str) -> PlannedEntry:
        return PlannedEntry(
            kind, key, revision_id, number, change, released.number if released else None
        )

    def keep() -> PlannedEntry:
        return entry(released.revision_id, released.number, ReleaseChange.UNCHANGED)

    publishable = status == PUBLISHABLE[kind]
    if latest is None or not (publishable or status == WITHDRAWN):
        # a draft or a record in review: the public keeps what it saw, if anything
        return keep() if released else None
    if released is None:
        if status == WITHDRAWN:
            return None  # withdrawn before the public ever saw it
        return entry(latest.revision_id, latest.number, ReleaseChange.NEW)
    if latest.revision_id == released.revision_id or latest.sha == released.sha:
        return keep()
    if status == WITHDRAWN and record not in withdrawn_before:
        return entry(latest.revision_id, latest.number, ReleaseChange.WITHDRAWN)
    return entry(latest.revision_id, latest.number, ReleaseChange.UPDATED)
