"""Publishing releases (docs/releases.md): what the public sees, one entry per record.

A release publishes what was reviewed (docs/review.md): every rule below speaks of each
record's latest *approved* revision and the status of its document, never of the working
state. Revisions after it wait for approval (the preview lists them, ``AwaitingReview``).

A release is the complete public view of the knowledge base at one moment: it has an entry
for every record the public can see, so the latest release alone answers "what is public".
Each entry points at the revision the public sees and says how it changed against the
previous release:

* a publishable record — one in its kind's ``published_status`` (records/kinds.py): a
  case whose status is ``ready``; a source, scope rule or assessment method whose status
  is ``active`` (they have no review step, so being active is their "ready") — is
  published at its latest approved revision: ``new`` if it was never released, ``updated`` if the
  public saw an older revision, ``unchanged`` otherwise;
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

Publishing walks the records kind by kind in key order, ``BATCH_SIZE`` records at a time
(keyset pagination over each kind's unique key), merging each batch's statuses, latest
revisions (the ledger's ``(record_kind, record_key, number)`` index) and previous entries,
and writes the batch's entries before reading the next: memory and queries per batch stay
fixed however many records there are (docs/releases.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, F, Max, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from claimsdb import release_facets
from claimsdb.choices import CaseStatus
from claimsdb.codes import ReleaseCode
from claimsdb.models import (
    Approval,
    Figure,
    Release,
    ReleaseChange,
    ReleasedRevision,
    ReleasedTerm,
    ReleaseEntry,
    Revision,
)
from claimsdb.records import RuleViolation, RuleViolations
from claimsdb.records.kinds import record_kinds
from claimsdb.webhooks.events import emit_release

from . import search_index
from .ledger import lock_head
from .permissions import require_role
from .release_rules import Lagging, release_violations

WITHDRAWN = "withdrawn"
# Records planned and written per batch: bounds memory, and IN (...) lists stay well under
# every database's parameter limit.
BATCH_SIZE = 500
# Changed entries a preview keeps (its counts cover every entry).
PREVIEW_SIZE = 200


@dataclass(frozen=True)
class PlannedEntry:
    """One record's entry in the release about to be published."""

    kind: str
    key: str
    revision_id: int
    revision: int  # its number
    change: str
    previous_revision: int | None  # the revision the previous release published
    withdrawn: bool = False  # the revision withdraws the record


@dataclass(frozen=True)
class Waiting:
    """A record this release leaves out, or holds at the revision the public saw, because
    it names a case the release does not make public (``case``; or a figure the public
    document of its case does not have)."""

    kind: str
    key: str
    case: str  # the case (or, if no case has it, the figure) it waits for
    kept: bool  # the public keeps an earlier revision of it meanwhile

    @property
    def message(self) -> str:
        what = "its new revision waits" if self.kept else "it waits"
        return (
            f"{what} for {self.case}, which it names: this release does not make "
            f"{self.case} public (or the figure it names is not in its public document)"
        )


@dataclass(frozen=True)
class AwaitingReview:
    """A record whose latest revisions wait for approval: the release publishes its latest
    approved revision (``approved``; None: none yet, so it has none) and not the ``count``
    revisions after it, up to ``latest``."""

    kind: str
    key: str
    approved: int | None
    latest: int
    count: int

    @property
    def message(self) -> str:
        since = f"since the approved revision {self.approved}" if self.approved else "so far"
        return (
            f"{self.count} change{'s' if self.count != 1 else ''} {since} (up to revision "
            f"{self.latest}), awaiting review"
        )


@dataclass
class ReleasePlan:
    """What publishing now would record: the next number, how many entries of each change,
    and ``PREVIEW_SIZE`` changed entries (in listing order) from ``preview_offset`` on."""

    number: int
    previous: Release | None
    last_revision: int
    change_counts: dict[str, int] = field(
        default_factory=lambda: {change: 0 for change in ReleaseChange.values}
    )
    changed: list[PlannedEntry] = field(default_factory=list)
    preview_offset: int = 0
    # the records that wait for a case they name (the first ``PREVIEW_SIZE``), and how many
    waiting: list[Waiting] = field(default_factory=list)
    waiting_count: int = 0
    # the records with revisions awaiting review (the first ``PREVIEW_SIZE``), how many,
    # and how many revisions they hold back in all
    awaiting: list[AwaitingReview] = field(default_factory=list)
    awaiting_count: int = 0
    awaiting_revisions: int = 0
    # what the whole-release rule check found (``release_rules``): empty when it passes
    conflicts: list[RuleViolation] = field(default_factory=list)
    lagging: Lagging = field(default_factory=Lagging)

    def lag(self, kind: str, key: str, entry: PlannedEntry | None, latest: int) -> None:
        self.lagging.add(
            kind,
            key,
            entry.revision_id if entry else None,
            entry.revision if entry else None,
            latest,
            changing=entry is not None and entry.change != ReleaseChange.UNCHANGED,
        )

    def wait(self, waiting: Waiting) -> None:
        if len(self.waiting) < PREVIEW_SIZE:
            self.waiting.append(waiting)
        self.waiting_count += 1

    def await_review(self, awaiting: AwaitingReview) -> None:
        if len(self.awaiting) < PREVIEW_SIZE:
            self.awaiting.append(awaiting)
        self.awaiting_count += 1
        self.awaiting_revisions += awaiting.count

    def counts(self) -> dict[str, int]:
        return dict(self.change_counts)

    @property
    def changed_count(self) -> int:
        return sum(n for c, n in self.change_counts.items() if c != ReleaseChange.UNCHANGED)

    @property
    def total(self) -> int:
        return sum(self.change_counts.values())

    def add(self, entry: PlannedEntry, preview: int) -> None:
        if entry.change != ReleaseChange.UNCHANGED:
            index = self.changed_count  # of this entry among the changed ones
            if self.preview_offset <= index < self.preview_offset + preview:
                self.changed.append(entry)
        self.change_counts[entry.change] += 1


def release_plan(*, preview: int | None = None, preview_offset: int = 0) -> ReleasePlan:
    """The release that publishing now would record (nothing is written): its counts and
    ``preview`` (``PREVIEW_SIZE``) changed entries, skipping the first ``preview_offset``
    (a page of the preview).

    Called on its own (the preview of the publishing page) it may be overtaken by a
    write. Reads the records in batches: a fixed number of
    queries per ``BATCH_SIZE`` records, memory bounded by the batch and ``preview``.
    """
    preview = PREVIEW_SIZE if preview is None else preview
    previous = latest_release()
    plan = ReleasePlan(
        number=previous.number + 1 if previous else 1,
        previous=previous,
        last_revision=Revision.objects.aggregate(last=Max("number"))["last"] or 0,
        preview_offset=preview_offset,
    )
    for batch in planned_batches(previous, plan.wait, plan.await_review, plan.lag):
        for entry in batch:
            plan.add(entry, preview)
    plan.conflicts = release_violations(plan.lagging)
    return plan


def planned_entries(
    on_wait: Callable[[Waiting], None] | None = None,
    on_review: Callable[[AwaitingReview], None] | None = None,
) -> Iterator[PlannedEntry]:
    """Every entry publishing now would record, in listing order, read batch by batch
    (``publish_release --dry-run`` prints the changed ones as they come, what waits:
    ``on_wait``, and what awaits review: ``on_review``)."""
    for batch in planned_batches(latest_release(), on_wait, on_review):
        yield from batch


def release_publish(*, user: User, notes: str) -> Release:
    """Publish a release of every publishable record (see the module docstring).

    Runs in one transaction under the ledger lock, so no revision lands between reading
    the records and recording the entries; entries are planned and written batch by
    batch. Refused without notes (``release.notes_required``) or when nothing changed since
    the previous release (``release.nothing_changed``: the rows written so far are rolled
    back); needs the reviewer role (``PermissionDenied``). Refused too when the revisions it
    would publish break a scope or field rule together (``release_rules``: an
    ``approval.conflict`` and the rules' own codes, naming the records, revisions and the
    approvals that would resolve it).
    """
    notes = (notes or "").strip()
    with transaction.atomic():
        head = lock_head()
        require_role(user, "reviewer", "publishing a release")
        previous = latest_release()
        if not notes:
            problems = [
                RuleViolation(
                    ReleaseCode.NOTES_REQUIRED,
                    "a release needs notes saying what it publishes and why",
                    "notes",
                )
            ]
            if not release_plan(preview=0).changed_count:
                problems.append(_nothing_changed(previous))
            raise RuleViolations(problems)
        release = Release.objects.create(
            number=previous.number + 1 if previous else 1,
            published_at=timezone.now(),
            published_by=user,
            notes=notes,
            last_revision=head.number,
        )
        counts = {change: 0 for change in ReleaseChange.values}
        lagging = Lagging()
        for batch in planned_batches(previous, on_lag=_lagging_of(lagging)):
            _publish_batch(release, batch)
            for entry in batch:
                counts[entry.change] += 1
        if counts[ReleaseChange.UNCHANGED] == sum(counts.values()):
            raise RuleViolations([_nothing_changed(previous)])
        # the released state passes every rule as a whole, or nothing is published
        conflicts = release_violations(lagging)
        if conflicts:
            raise RuleViolations(conflicts)
        # counted while writing: the release is complete once they are in (same transaction)
        release.change_counts = counts
        release.save(update_fields=["change_counts"])
        # subscribers are told with the same commit (docs/integrations.md)
        emit_release(release, chain_hash=head.chain_hash)
        return release


def _lagging_of(lagging: Lagging) -> Callable[[str, str, PlannedEntry | None, int], None]:
    def lag(kind: str, key: str, entry: PlannedEntry | None, latest: int) -> None:
        lagging.add(
            kind,
            key,
            entry.revision_id if entry else None,
            entry.revision if entry else None,
            latest,
            changing=entry is not None and entry.change != ReleaseChange.UNCHANGED,
        )

    return lag


def latest_release() -> Release | None:
    return Release.objects.order_by("-number").first()


def _publish_batch(release: Release, batch: list[PlannedEntry]) -> None:
    """Write one batch's entries, and what the public lists filter by for the revisions
    it publishes for the first time. Whatever else follows the published entries (an
    index of the public record) is kept current here, batch by batch."""
    entries = [
        ReleaseEntry(
            release=release,
            record_kind=entry.kind,
            record_key=entry.key,
            revision_id=entry.revision_id,
            change=entry.change,
            withdrawn=entry.withdrawn,
        )
        for entry in batch
    ]
    ReleaseEntry.objects.bulk_create(entries, batch_size=BATCH_SIZE)
    search_index.index_release_entries(entries)
    index_released_revisions(
        [entry.revision_id for entry in batch if entry.change != ReleaseChange.UNCHANGED]
    )


def index_released_revisions(revision_ids: list[int]) -> None:
    """Record what the public lists filter by (``claimsdb.release_facets``) for the given
    revisions that no release published before. Three queries."""
    if not revision_ids:
        return
    rows = Revision.objects.filter(id__in=revision_ids, released__isnull=True).values_list(
        "id", "record_kind", "snapshot"
    )
    documents, terms = [], []
    for revision_id, kind, snapshot in rows.iterator(chunk_size=100):
        document = json.loads(snapshot)
        documents.append(
            ReleasedRevision(
                revision_id=revision_id, **release_facets.revision_fields(kind, document)
            )
        )
        terms += [
            ReleasedTerm(revision_id=revision_id, name=name, value=value, number=number)
            for name, value, number in release_facets.revision_terms(kind, document)
        ]
    ReleasedRevision.objects.bulk_create(documents, batch_size=BATCH_SIZE)
    ReleasedTerm.objects.bulk_create(terms, batch_size=BATCH_SIZE)


def _nothing_changed(previous: Release | None) -> RuleViolation:
    if previous is None:
        message = (
            "there is nothing to publish: no approved revision of a case is ready and none "
            "of a source, scope rule or assessment method is active (changes awaiting "
            "review are not published: docs/review.md)"
        )
    else:
        message = (
            f"nothing has changed since release {previous.number}: no record has a new "
            "approved ready (or active) revision and none was withdrawn; a release would "
            "repeat it (changes awaiting review are not published: docs/review.md)"
        )
    return RuleViolation(ReleaseCode.NOTHING_CHANGED, message, "")


# --- planning, batch by batch ------------------------------------------------------------


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
    withdrawn: bool


def planned_batches(
    previous: Release | None,
    on_wait: Callable[[Waiting], None] | None = None,
    on_review: Callable[[AwaitingReview], None] | None = None,
    on_lag: Callable[[str, str, PlannedEntry | None, int], None] | None = None,
) -> Iterator[list[PlannedEntry]]:
    """The entries of the release following ``previous``, ``BATCH_SIZE`` records at a time,
    kind by kind in listing order (``record_kinds``) and by key: a fixed number of queries
    per batch (three, and the names of cases and rules: ``_held_cases``,
    ``_without_unreleased_names``).

    The records are walked through their rows (keyset over the unique key index: records
    are never deleted, so every record with revisions or a previous entry has one), and
    ``previous``'s entries are taken in the same key range, so each record is met once.
    ``on_wait`` is told of each record that waits for a case it names (``Waiting``), and
    ``on_review`` of each record with revisions awaiting review (``AwaitingReview``: one
    more query per batch, only when it is given). ``on_lag`` is told of each case and
    scope rule the release would publish at another revision than its latest, or not at
    all (with its entry, or None, and its latest number): what the whole-release rule check
    starts from (``release_rules``; one more query per batch).
    """
    held = _held_cases(previous)
    tell = on_wait or (lambda waiting: None)
    for record_kind in record_kinds:
        kind = record_kind.name
        for rows in _kind_batches(kind, previous, on_review):
            batch = []
            for key, latest, released, status in rows:
                if kind == "case" and key in held:
                    # its new revision names what is not public: the public keeps what it saw
                    entry = _keep(kind, key, released) if released else None
                    tell(Waiting(kind, key, held[key], kept=released is not None))
                else:
                    entry = _plan_entry((kind, key), latest, released, status)
                if entry is not None:
                    batch.append(entry)
            if kind == "rule":
                batch = _without_unreleased_names(batch, previous, held, tell)
            if on_lag is not None and kind in ("case", "rule"):
                _tell_lagging(kind, [row[0] for row in rows], batch, on_lag)
            if batch:
                yield batch


_Row = tuple[str, "_Latest | None", "_Released | None", str | None]


def _tell_lagging(
    kind: str,
    keys: list[str],
    batch: list[PlannedEntry],
    on_lag: Callable[[str, str, PlannedEntry | None, int], None],
) -> None:
    latest = _latest_revisions(kind, keys, "", None)
    entries = {entry.key: entry for entry in batch}
    for key in keys:
        head = latest.get(key)
        entry = entries.get(key)
        if head is not None and (entry is None or entry.revision != head.number):
            on_lag(kind, key, entry, head.number)


def _kind_batches(
    kind: str,
    previous: Release | None,
    on_review: Callable[[AwaitingReview], None] | None = None,
) -> Iterator[list[_Row]]:
    """The records of ``kind`` in key order, ``BATCH_SIZE`` at a time, each with its latest
    approved revision, ``previous``'s entry and the status of the approved revision's
    document (None: none approved). Three queries per batch, and two for ``on_review``
    (told of each record whose latest revision is not approved)."""
    model = record_kinds.get(kind).model
    after = ""
    while True:
        rows = list(
            model._default_manager.filter(key__gt=after)
            .order_by("key")
            .values_list("key", flat=True)[:BATCH_SIZE]
        )
        # a full batch ends at its last key (in the database's order); a short one is the
        # kind's last
        upto = rows[-1] if len(rows) == BATCH_SIZE else None
        approved = _approved_revisions(kind, rows, after, upto)
        released = _previous_entries(previous, kind, after, upto)
        if on_review is not None:
            _awaiting_review(kind, rows, after, upto, approved, on_review)
        yield [
            (
                key,
                approved[key][0] if key in approved else None,
                released.get(key),
                approved[key][1] if key in approved else None,
            )
            for key in sorted(set(rows) | set(released))
        ]
        if upto is None:
            break
        after = upto


def _held_cases(previous: Release | None) -> dict[str, str]:
    """The cases whose new revision this release holds back, each with a case it names that
    this release does not make public.

    A case document names other cases — a relation's ``case``, an attribution's figure,
    which belongs to a case — and the public view reveals nothing of work in progress, not
    even that it exists. So a case's new revision is published only when every case it
    names is public in the same release, and every figure it names is in the public
    document of its case. Otherwise the public keeps the revision it saw (or, if it saw
    none, the case waits), and a case held so may in turn hold the cases naming it: the
    held set is the least one closed under that (cases naming one another, all ready, are
    published together).

    One pass over the cases, batch by batch (a fixed number of queries per batch: those of
    ``_kind_batches``, the new revisions' snapshots, the figures' cases, and the named
    cases' statuses, revisions, entries and snapshots), keeps only what cannot be decided
    yet: a case naming another whose own new revision may be held. The closure is then
    computed in memory over those, each name followed once. (A figure that only the
    revision the public saw has, removed by the new one, makes the case naming it wait
    whatever happens to that revision: whether it stays public is not known before the
    closure, and waiting reveals nothing.)
    """
    held: dict[str, str] = {}
    # case → the cases naming it that wait if it waits (it changes, and they need its new
    # revision: the name, or a figure only that revision has)
    dependents: dict[str, list[str]] = {}
    for rows in _kind_batches("case", previous):
        changing: dict[str, PlannedEntry] = {}
        plans: dict[str, tuple[PlannedEntry | None, _Released | None]] = {}
        for key, latest, released, status in rows:
            entry = _plan_entry(("case", key), latest, released, status)
            if entry is not None and entry.change != ReleaseChange.UNCHANGED:
                changing[key] = entry
                plans[key] = (entry, released)
        if not changing:
            continue
        snapshots = dict(
            Revision.objects.filter(
                id__in=[entry.revision_id for entry in changing.values()]
            ).values_list("id", "snapshot")
        )
        names: dict[str, list[tuple[str, str | None]]] = {}  # case → [(case, figure)]
        figures: set[str] = set()
        for key, entry in changing.items():
            document = json.loads(snapshots[entry.revision_id])
            named: list[tuple[str, str | None]] = [
                (relation["case"], None) for relation in document.get("relations", [])
            ]
            for attribution in document.get("attributions", []):
                figures.add(attribution["figure"])
                named.append(("", attribution["figure"]))
            names[key] = named
        owners = dict(
            Figure.objects.filter(figure_id__in=figures).values_list("figure_id", "case__key")
        )
        names = {
            key: [(case or owners.get(figure or "", ""), figure) for case, figure in named]
            for key, named in names.items()
        }
        others = {case for named in names.values() for case, _ in named if case} - set(changing)
        plans.update(_plans_of(previous, others))
        figured = {case for named in names.values() for case, figure in named if figure}
        revision_ids = {
            revision_id
            for case in figured
            for entry, released in [plans.get(case, (None, None))]
            for revision_id in [
                entry.revision_id if entry else None,
                released.revision_id if released else None,
            ]
            if revision_id is not None
        }
        seen = {
            revision_id: {figure["id"] for figure in json.loads(snapshot).get("figures", [])}
            for revision_id, snapshot in Revision.objects.filter(id__in=revision_ids)
            .values_list("id", "snapshot")
            .iterator(chunk_size=100)
        }

        for key, named in names.items():
            needs: list[str] = []
            for case, figure in named:
                if case == key:
                    continue  # its own figures are published with it
                entry, released = plans.get(case, (None, None))
                if entry is None:
                    held.setdefault(key, case or figure or "")
                    continue
                if entry.change == ReleaseChange.UNCHANGED:
                    if not _shows(seen, entry.revision_id, figure):
                        held.setdefault(key, case)
                    continue
                if not _shows(seen, entry.revision_id, figure):
                    # not in its new revision: waits (even if the public keeps a revision
                    # that has it, whether it does is decided below; waiting is safe)
                    held.setdefault(key, case)
                elif not _shows(seen, released.revision_id if released else None, figure):
                    needs.append(case)  # public only if that case's new revision is
            if key not in held:
                for case in needs:
                    dependents.setdefault(case, []).append(key)
    # the closure: whatever needs the new revision of a case that waits waits too
    waiting = list(held)
    while waiting:
        case = waiting.pop()
        for key in dependents.pop(case, ()):
            if key not in held:
                held[key] = case
                waiting.append(key)
    return held


def _shows(seen: dict[int, set[str]], revision_id: int | None, figure: str | None) -> bool:
    """Whether the revision (if any) names what ``figure`` needs: none, or its figure."""
    return revision_id is not None and (figure is None or figure in seen[revision_id])


def _plans_of(
    previous: Release | None, keys: set[str]
) -> dict[str, tuple[PlannedEntry | None, _Released | None]]:
    """How the release plans the named cases (before holding any): their entries and
    previous entries. Two queries."""
    if not keys:
        return {}
    approved = _approved_revisions("case", list(keys), "", None)
    released: dict[str, _Released] = {}
    if previous is not None:
        released = {
            key: _Released(rid, number, sha, withdrawn)
            for key, rid, number, sha, withdrawn in ReleaseEntry.objects.filter(
                release=previous, record_kind="case", record_key__in=keys
            ).values_list(
                "record_key",
                "revision_id",
                "revision__number",
                "revision__snapshot_sha256",
                "withdrawn",
            )
        }
    return {
        key: (
            _plan_entry(
                ("case", key),
                approved[key][0] if key in approved else None,
                released.get(key),
                approved[key][1] if key in approved else None,
            ),
            released.get(key),
        )
        for key in keys
    }


def _without_unreleased_names(
    batch: list[PlannedEntry],
    previous: Release | None,
    held: dict[str, str],
    tell: Callable[[Waiting], None],
) -> list[PlannedEntry]:
    """The rules of ``batch`` that name only what the release makes public.

    A scope rule names a case and a figure of a case ("FIG-HX-202-42 must not be attributed
    to HX-201"), and its reason speaks of both. The public view reveals nothing of work in
    progress, not even that it exists, so a rule is published only once the case it names
    is public, and the figure it names is in the public document of its case. Until then it
    has no entry at all — published without its names it would still say that something
    unreleased exists — and one released before this held gets none either. It is
    published, as ``new``, by the first release that makes both public. A case is public in
    this release if its approved revision is ready and not ``held`` (it is published at
    that revision, with its figures) or an earlier release published it (it keeps that
    revision, or its withdrawal). Six queries per batch.
    """
    if not batch:
        return batch
    snapshots = dict(
        Revision.objects.filter(id__in=[entry.revision_id for entry in batch]).values_list(
            "id", "snapshot"
        )
    )
    named = {
        entry.revision_id: (document["case"], document["figure"])
        for entry in batch
        for document in [json.loads(snapshots[entry.revision_id])]
    }
    owners = dict(
        Figure.objects.filter(figure_id__in={figure for _, figure in named.values()}).values_list(
            "figure_id", "case__key"
        )
    )
    cases = {case for case, _ in named.values()} | set(owners.values())
    # each public case → the figures the public sees in it: those of its approved ready
    # revision, or (a case whose new revision is held, or not ready) of the revision the
    # public saw, if any
    approved = _approved_revisions("case", list(cases), "", None)
    ready = {
        latest.revision_id: key
        for key, (latest, status) in approved.items()
        if status == CaseStatus.READY and key not in held
    }
    public: dict[str, set[str] | None] = {
        ready[revision_id]: {figure["id"] for figure in json.loads(snapshot)["figures"]}
        for revision_id, snapshot in Revision.objects.filter(id__in=list(ready)).values_list(
            "id", "snapshot"
        )
    }
    if previous is not None:
        kept = ReleaseEntry.objects.filter(
            release=previous, record_kind="case", record_key__in=cases - set(public)
        ).values_list("record_key", "revision__snapshot")
        for key, snapshot in kept:
            public[key] = {figure["id"] for figure in json.loads(snapshot)["figures"]}

    def figure_is_public(figure: str) -> bool:
        owner = owners.get(figure)
        if owner is None or owner not in public:
            return False
        seen = public[owner]
        return seen is None or figure in seen

    published = []
    for entry in batch:
        case, figure = named[entry.revision_id]
        if case not in public:
            tell(Waiting(entry.kind, entry.key, case, kept=False))
        elif not figure_is_public(figure):
            tell(Waiting(entry.kind, entry.key, owners.get(figure, figure), kept=False))
        else:
            published.append(entry)
    return published


def _latest_revisions(
    kind: str, keys: list[str], after: str, upto: str | None
) -> dict[str, _Latest]:
    """The latest revisions of the named records of ``kind`` (keys in (after, upto]), by
    key. One query, read along the ledger's (record_kind, record_key, number) index: its
    cost follows the revisions of these records, not the size of the ledger. (The key
    range says so to the planner even before it has statistics on the keys.)"""
    if not keys:
        return {}
    revisions = Revision.objects.filter(record_kind=kind, record_key__gt=after)
    if upto is not None:
        revisions = revisions.filter(record_key__lte=upto)
    heads = (
        revisions.filter(record_key__in=keys)
        .order_by()
        .values("record_key")
        .annotate(last=Max("number"))
        .values("last")
    )
    rows = Revision.objects.filter(number__in=Subquery(heads)).values_list(
        "record_key", "id", "number", "snapshot_sha256"
    )
    return {key: _Latest(rid, number, sha) for key, rid, number, sha in rows}


def _approved_revisions(
    kind: str, keys: list[str], after: str, upto: str | None
) -> dict[str, tuple[_Latest, str]]:
    """The latest approved revision of each named record of ``kind`` (keys in (after,
    upto]) and the status of its document, by key. One query, along the approvals'
    (record_kind, record_key, revision_number) index."""
    if not keys:
        return {}
    approvals = Approval.objects.filter(record_kind=kind, record_key__gt=after)
    if upto is not None:
        approvals = approvals.filter(record_key__lte=upto)
    heads = (
        approvals.filter(record_key__in=keys)
        .order_by()
        .values("record_key")
        .annotate(last=Max("revision_number"))
        .values("last")
    )
    rows = Approval.objects.filter(
        record_kind=kind, revision_number__in=Subquery(heads)
    ).values_list(
        "record_key", "revision_id", "revision_number", "revision__snapshot_sha256", "status"
    )
    return {key: (_Latest(rid, number, sha), status) for key, rid, number, sha, status in rows}


def _awaiting_review(
    kind: str,
    keys: list[str],
    after: str,
    upto: str | None,
    approved: dict[str, tuple[_Latest, str]],
    on_review: Callable[[AwaitingReview], None],
) -> None:
    """Tell ``on_review`` of each named record whose latest revision is after its latest
    approved one, with how many revisions wait. Two queries (the latest revisions, and
    the count of those waiting, only for records that have some)."""
    latest = _latest_revisions(kind, keys, after, upto)
    pending = {
        key: head.number
        for key, head in latest.items()
        if key not in approved or approved[key][0].number < head.number
    }
    if not pending:
        return
    approved_number = (
        Approval.objects.filter(record_kind=kind, record_key=OuterRef("record_key"))
        .order_by("-revision_number")
        .values("revision_number")[:1]
    )
    counts = dict(
        Revision.objects.filter(record_kind=kind, record_key__in=list(pending))
        .annotate(approved=Coalesce(Subquery(approved_number), 0))
        .filter(number__gt=F("approved"))
        .order_by()
        .values("record_key")
        .annotate(waiting=Count("id"))
        .values_list("record_key", "waiting")
    )
    for key in sorted(pending):
        on_review(
            AwaitingReview(
                kind,
                key,
                approved[key][0].number if key in approved else None,
                pending[key],
                counts.get(key, 0),
            )
        )


def _previous_entries(
    previous: Release | None, kind: str, after: str, upto: str | None
) -> dict[str, _Released]:
    """``previous``'s entries of ``kind`` with keys in (after, upto], by key. One query."""
    if previous is None:
        return {}
    rows = ReleaseEntry.objects.filter(release=previous, record_kind=kind, record_key__gt=after)
    if upto is not None:
        rows = rows.filter(record_key__lte=upto)
    return {
        key: _Released(rid, number, sha, withdrawn)
        for key, rid, number, sha, withdrawn in rows.values_list(
            "record_key",
            "revision_id",
            "revision__number",
            "revision__snapshot_sha256",
            "withdrawn",
        )
    }


def _plan_entry(
    record: tuple[str, str],
    latest: _Latest | None,
    released: _Released | None,
    status: str | None,
) -> PlannedEntry | None:
    kind, key = record
    previous_number = released.number if released else None

    def publish(latest: _Latest, change: str) -> PlannedEntry:
        return PlannedEntry(
            kind,
            key,
            latest.revision_id,
            latest.number,
            change,
            previous_number,
            withdrawn=status == WITHDRAWN,
        )

    def keep(released: _Released) -> PlannedEntry:
        return _keep(kind, key, released)

    publishable = status == record_kinds.get(kind).published_status
    if latest is None or not (publishable or status == WITHDRAWN):
        # a draft or a record in review: the public keeps what it saw, if anything
        return keep(released) if released else None
    if released is None:
        if status == WITHDRAWN:
            return None  # withdrawn before the public ever saw it
        return publish(latest, ReleaseChange.NEW)
    if latest.revision_id == released.revision_id or latest.sha == released.sha:
        return keep(released)
    if status == WITHDRAWN and not released.withdrawn:
        return publish(latest, ReleaseChange.WITHDRAWN)
    return publish(latest, ReleaseChange.UPDATED)


def _keep(kind: str, key: str, released: _Released) -> PlannedEntry:
    """The entry of a record whose public revision stays the one ``released`` published."""
    return PlannedEntry(
        kind,
        key,
        released.revision_id,
        released.number,
        ReleaseChange.UNCHANGED,
        released.number,
        withdrawn=released.withdrawn,
    )
