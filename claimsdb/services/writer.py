"""The one write path (docs/write-path.md): validate, write, check scope, append revisions.

Every service (``case_update``, ``bundle_load``, ``revision_revert``, the importer…)
describes its change as a list of ``RecordWrite`` and hands it to ``write_records``, which
does the rest in one transaction: on PostgreSQL it checks the change before taking the
ledger lock and, under it, validates that nothing it read has changed, then appends the
revisions (docs/write-path.md, "The critical section"); on SQLite the lock comes first.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, connection, transaction

from claimsdb.codes import (
    CaseCode,
    ClaimCode,
    DocumentCode,
    FigureCode,
    RecordCode,
    RevisionCode,
    ScopeCode,
    StatusCode,
)
from claimsdb.lookalike import skeleton
from claimsdb.models import (
    AffectedEntry,
    Assessment,
    AssessmentMethod,
    Case,
    Figure,
    LedgerHead,
    Revision,
    ScopeRule,
)
from claimsdb.records import (
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
    changed_fields,
    diff,
    dumps_compact,
    record_date,
    sha256_text,
)
from claimsdb.records.kinds import record_kinds
from claimsdb.rules import ScopeState, run_field_rules, run_scope_rules
from claimsdb.rules.context import (
    CaseContextRequest,
    ComponentFacts,
    DocumentContext,
    component_facts,
)
from claimsdb.rules.context import case_contexts as load_case_contexts
from claimsdb.rules.scope import bridge_hits, non_attribution_hits
from claimsdb.rules.scoped import affected_cases, load_scoped
from claimsdb.selectors.cases import case_tags, tags_in_use

from . import apply, footprints, lookups
from .ledger import RevisionChain, lock_head
from .permissions import has_role, require_role
from .timing import WriteTimer

RecordId = tuple[str, str]  # (kind, key)
# Each written record's live document and latest revision before the change (None: none).
Previous = dict[RecordId, tuple[dict[str, Any] | None, Revision | None]]


@dataclass
class RecordWrite:
    """One record's new document and how it is being written.

    ``mode``: ``create`` (refused if the key exists), ``update`` (refused if it does not),
    or ``upsert`` (a fixture or bundle load). ``path`` is where the document stands in
    the input (``cases[1]`` in a bundle) so violations point into what the user sent.
    """

    kind: str
    document: dict[str, Any]
    mode: str = "upsert"
    action: str | None = None  # create/update chosen automatically unless withdraw/revert/import
    expected_revision: int | None = None
    check_expected: bool = False
    path: str = ""

    @property
    def key(self) -> str:
        return self.document["key"]

    @property
    def label(self) -> str:
        return f"{self.kind} {self.key}"


@dataclass
class WriteOutcome:
    """What happened to one record: ``created``, ``updated``, ``unchanged``…"""

    kind: str
    key: str
    outcome: str
    revision: Revision | None
    document: dict[str, Any] = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "outcome": self.outcome,
            "revision": self.revision.number if self.revision else None,
        }


def write_records(
    *,
    user: User,
    writes: Sequence[RecordWrite],
    summary: str,
    material: bool = True,
    role: str | None = None,
    before_apply: Callable[[], object] | None = None,
) -> list[WriteOutcome]:
    """Validate and write ``writes`` as one change; raise RuleViolations with every problem.

    Nothing is written unless everything holds. ``before_apply`` lets the importer write its
    run rows inside the same transaction, after validation and before the revision.
    """
    summary = (summary or "").strip()
    # The role, the summary and the order of the writes depend on the request alone: a
    # request refused for them reads no record (docs/write-path.md).
    for kind in {w.kind for w in writes}:
        require_role(user, role or record_kinds.get(kind).write_role, f"changing a {kind}")
    if not summary:
        raise RuleViolations(
            [
                RuleViolation(
                    RevisionCode.SUMMARY_REQUIRED,
                    "every change needs a summary saying what changed and why",
                    "summary",
                )
            ]
        )
    ordered = sorted(writes, key=lambda w: record_kinds.get(w.kind).write_rank)
    change = _Change(user, ordered, summary, material, before_apply, WriteTimer())
    try:
        if _checked_outside_the_lock(ordered, before_apply):
            for _ in range(OPTIMISTIC_ATTEMPTS):
                try:
                    return _write_checked_first(change)
                except _Retry:
                    continue
        # SQLite's single writer, the writes checked under the lock by their nature, and
        # a write that lost its validation OPTIMISTIC_ATTEMPTS times: the lock first.
        for attempt in range(LOCKED_ATTEMPTS):
            try:
                return _write_under_the_lock(change)
            except OperationalError as error:
                # holding the lock, it waited for a row that a writer waiting for the lock
                # had written: PostgreSQL ends one of the two
                deadlock = getattr(error.__cause__, "sqlstate", None) == "40P01"
                if not deadlock or attempt == LOCKED_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
    finally:
        change.timer.done()


# How often a write checked outside the lock is run again when something it read changed
# before it took the lock (or it met a concurrent writer in the database), before it runs
# once more with the lock held throughout, which always completes.
OPTIMISTIC_ATTEMPTS = 5
# How often a write holding the lock throughout is run again after a deadlock.
LOCKED_ATTEMPTS = 3
# A change of more records than this (a bundle load) is checked under the lock: its read
# set would be large and most concurrent writes would meet it.
OPTIMISTIC_MAX_RECORDS = 50
# Methods are checked against every assessment using them, which no read set names.
_LOCKED_KINDS = frozenset({"method"})
# Deadlock, serialization failure, unique violation: a concurrent writer got there first.
_RETRIED_SQLSTATES = frozenset({"40P01", "40001", "23505"})


@dataclass
class _Change:
    user: User
    writes: list[RecordWrite]
    summary: str
    material: bool
    before_apply: Any
    timer: WriteTimer


class _Retry(Exception):
    """Something the write read changed before it took the lock: roll back, run again."""


def _checked_outside_the_lock(
    writes: list[RecordWrite], before_apply: Callable[[], object] | None
) -> bool:
    return (
        connection.vendor == "postgresql"
        and before_apply is None
        and len(writes) <= OPTIMISTIC_MAX_RECORDS
        and not any(w.kind in _LOCKED_KINDS for w in writes)
    )


def _write_under_the_lock(change: _Change) -> list[WriteOutcome]:
    """Everything under the ledger lock, from the first read to the commit."""
    try:
        with transaction.atomic():
            head = lock_head()
            change.timer.locked()
            reads = _ReadSet(change.writes)
            checked = _check(change, reads)
            return _commit(change, head, checked, reads)
    finally:
        change.timer.released()


def _write_checked_first(change: _Change) -> list[WriteOutcome]:
    """Read and check without the ledger lock, then, under it, validate and append.

    The rows of the records written, locked first (in key order), make writers of the
    same record wait for one another rather than fail validation.
    """
    try:
        with transaction.atomic():
            _lock_written(change.writes)
            start = footprints.head_number()
            reads = _ReadSet(change.writes)
            try:
                checked = _check(change, reads)
            except (RuleViolations, RecordNotFound):
                # refused on what it read: unless that changed meanwhile, the refusal is
                # the one the write would have had under the lock
                if footprints.changed_since(start, reads.records):
                    raise _Retry from None
                raise
            head = lock_head()
            change.timer.locked()
            if footprints.changed_since(start, reads.records, head=head.number):
                raise _Retry
            return _commit(change, head, checked, reads)
    except (IntegrityError, OperationalError) as error:
        if getattr(error.__cause__, "sqlstate", None) in _RETRIED_SQLSTATES:
            raise _Retry from error
        raise
    finally:
        change.timer.released()


def _lock_written(writes: list[RecordWrite]) -> None:
    """Lock the rows of the existing cases and rules written, in key order."""
    for kind, model in (("case", Case), ("rule", ScopeRule)):
        keys = sorted(w.key for w in writes if w.kind == kind)
        if keys:
            list(
                model.objects.select_for_update()
                .filter(key__in=keys)
                .order_by("key")
                .values_list("pk", flat=True)
            )


class _ReadSet:
    """The records a write's checks depended on, and its footprint: the records it
    changed and the cases its scope check loaded or could affect (``services.footprints``).
    """

    def __init__(self, writes: list[RecordWrite]):
        self.footprint: set[footprints.Record] = {(w.kind, w.key) for w in writes}
        self.records: set[footprints.Record] = set(self.footprint)

    def cases(self, keys: Iterable[str]) -> None:
        found = {("case", key) for key in keys}
        self.footprint |= found
        self.records |= found

    def read(self, kind: str, keys: Iterable[str]) -> None:
        self.records |= {(kind, key) for key in keys}


@dataclass
class _Checked:
    previous: dict[tuple[str, str], Any]
    live: dict[tuple[str, str], dict[str, Any]]
    partners: set[str]


def _check(change: _Change, reads: _ReadSet) -> _Checked:
    """Steps 5–10 of docs/write-path.md: read, check, apply, check again, read back."""
    writes = change.writes
    previous = _check_existence_and_staleness(writes)
    _validate_fields(
        writes, previous, _ready_violations(change.user, writes, previous), reads=reads
    )
    before = _scope_violations(writes, previous)
    reads.cases(before.cases | before.owners)
    partners = _apply(writes, previous)
    if change.before_apply is not None:
        change.before_apply()
    reads.cases(_check_scope(writes, before))
    live = _check_round_trip(writes)
    partners -= {w.key for w in writes if w.kind == "case"}
    reads.cases(partners)
    return _Checked(previous, live, partners)


def _commit(
    change: _Change, head: LedgerHead, checked: _Checked, reads: _ReadSet
) -> list[WriteOutcome]:
    """Under the held ledger lock: number and chain the revisions, leave the footprint."""
    first = head.number + 1
    outcomes = _append_revisions(
        head,
        change.user,
        change.writes,
        checked.previous,
        checked.live,
        checked.partners,
        summary=change.summary,
        material=change.material,
    )
    if head.number >= first and connection.vendor == "postgresql":
        footprints.leave(head.number, reads.footprint, first=first)
    return outcomes


def _check_existence_and_staleness(writes: list[RecordWrite]) -> Previous:
    """The live document and latest revision of each record (None where there is none);
    refuse stale edits. A fixed number of queries per record kind, however many records."""
    documents: dict[str, dict[str, dict[str, Any]]] = {}
    revisions: dict[str, dict[str, Any]] = {}
    for kind in {w.kind for w in writes}:
        keys = {w.key for w in writes if w.kind == kind}
        documents[kind] = lookups.record_documents(kind, keys)
        revisions[kind] = lookups.latest_revisions(kind, keys)
    previous: Previous = {}
    for write in writes:
        current = documents[write.kind].get(write.key)
        if write.mode == "create" and current is not None:
            raise RecordExists(write.kind, write.key)
        if write.mode == "update" and current is None:
            raise RecordNotFound(write.kind, write.key)
        latest = revisions[write.kind].get(write.key)
        number = latest.number if latest else None
        if write.check_expected and write.expected_revision != number:
            raise StaleRevision(
                record=write.label, expected=write.expected_revision, current=number
            )
        previous[(write.kind, write.key)] = (current, latest)
    return previous


def _ready_violations(
    user: User, writes: list[RecordWrite], previous: Previous
) -> list[RuleViolation]:
    """Only a reviewer sets a case to ``ready`` (docs/releases.md, "Who sets a case
    ready"): a case written as ready that was not ready before (or is new) needs the
    reviewer role. Analysts propose a case by setting ``in_review``; they may move a ready
    case back, and edit one that stays ready (the release preview shows each change to the
    reviewer who publishes)."""
    setting_ready = [
        write
        for write in writes
        if write.kind == "case"
        and write.document.get("status") == "ready"
        and (previous[(write.kind, write.key)][0] or {}).get("status") != "ready"
    ]
    if not setting_ready or has_role(user, "reviewer"):
        return []
    return [
        RuleViolation(
            StatusCode.READY_NEEDS_REVIEWER,
            f"only a reviewer may set case {write.key} to ready: set it to in_review to "
            "propose it for the next release",
            f"{write.path}.status" if write.path else "status",
        )
        for write in setting_ready
    ]


def _validate_fields(
    writes: list[RecordWrite],
    previous: Previous,
    problems: list[RuleViolation] | None = None,
    *,
    reads: _ReadSet | None = None,
) -> None:
    pending = _PendingIndex(writes)
    contexts = _contexts(writes, previous, pending)
    if reads is not None:
        for context in contexts:
            # what the field rules looked up: the records named, and their owners
            reads.read("source", context.sources)
            reads.read("method", context.methods)
            reads.read("component", context.components)
            reads.cases(context.component_cases)
            reads.cases(
                context.cases
                | set(context.figures.values())
                | set(context.live_claims.values())
                | set(context.reserved_claims.values())
            )
    problems = list(problems or [])
    for write, context in zip(writes, contexts, strict=True):
        for violation in run_field_rules(write.kind, write.document, context):
            problems.append(violation.prefixed(write.path) if write.path else violation)
    problems.extend(pending.conflicts())
    problems.extend(_lookalikes(writes, previous))
    problems.extend(_near_duplicate_tags(writes))
    if problems:
        raise RuleViolations(problems)


def _loose_tag(tag: str) -> str:
    return skeleton(tag.translate(_TAG_SEPARATORS))


_TAG_SEPARATORS = str.maketrans("", "", "-_. ")


def _near_duplicate_tags(writes: list[RecordWrite]) -> list[RuleViolation]:
    """Tags no case has yet that look like a tag in use (``kvcache``, ``kv_cache`` or
    ``rdrna`` beside ``kv-cache`` and ``rdma``): refused, naming the tag to use. Tags are
    normalized first (``schema.normalize_tag``), so ``RDMA`` simply is ``rdma``. One query
    for the tags of the change, and one more, along the index of names, only when one of
    them is new."""
    cases = [w for w in writes if w.kind == "case" and w.document["tags"]]
    wanted = {tag for w in cases for tag in w.document["tags"]}
    if not wanted:
        return []
    used = tags_in_use(wanted)
    if not wanted - used:
        return []
    in_use: dict[str, str] = {}
    for name in case_tags():
        in_use.setdefault(_loose_tag(name), name)
    problems = []
    for write in cases:
        for index, tag in enumerate(write.document["tags"]):
            other = in_use.get(_loose_tag(tag)) if tag not in used else None
            if other is not None and other != tag:
                path = f"tags[{index}]"
                problems.append(
                    RuleViolation(
                        CaseCode.TAG_NEAR_DUPLICATE,
                        f"the tag {tag!r} looks like the tag {other!r}, which cases already "
                        f"have: use {other!r}",
                        f"{write.path}.{path}" if write.path else path,
                    )
                )
    return problems


def _lookalikes(writes: list[RecordWrite], previous: Previous) -> list[RuleViolation]:
    """New keys and figure IDs that differ from another only by characters that look alike
    (``claimsdb/lookalike.py``): one indexed lookup of skeletons per kind of record, and
    one for figures, however large the knowledge base."""
    problems = []

    def where(write: RecordWrite, path: str) -> str:
        return f"{write.path}.{path}" if write.path else path

    def refusal(new: str, noun: str, existing: str, path: str, here: bool = False) -> RuleViolation:
        what = f"{noun} written in this change" if here else f"existing {noun}"
        return RuleViolation(
            RecordCode.KEY_LOOKALIKE,
            f"{new} looks like the {what} {existing}: they differ only by characters that "
            f"look alike (0 and O; 1, I and l; m and rn). Use {existing}, or "
            f"{'an ID' if noun == 'figure' else 'a key'} that cannot be mistaken for it",
            path,
        )

    for kind in sorted({w.kind for w in writes}):
        new = [w for w in writes if w.kind == kind and previous[(kind, w.key)][0] is None]
        if not new:
            continue
        model = record_kinds.get(kind).model
        first: dict[str, str] = {}
        for write in new:
            first.setdefault(skeleton(write.key), write.key)
        taken = dict(
            model._default_manager.filter(key_skeleton__in=list(first))
            .exclude(key__in=[w.key for w in new])
            .values_list("key_skeleton", "key")
        )
        for write in new:
            shape = skeleton(write.key)
            if shape in taken:
                problems.append(refusal(write.key, kind, taken[shape], where(write, "key")))
            elif first[shape] != write.key:
                problems.append(
                    refusal(write.key, kind, first[shape], where(write, "key"), here=True)
                )
    cases = [w for w in writes if w.kind == "case"]
    figures = [
        (write, index, figure["id"])
        for write in cases
        for index, figure in enumerate(write.document["figures"])
    ]
    if not figures:
        return problems
    kept = {w.key: {f["id"] for f in w.document["figures"]} for w in cases}
    rows: dict[str, list[tuple[str, str]]] = {}
    for figure_id, shape, owner in Figure.objects.filter(
        id_skeleton__in={skeleton(figure_id) for _, _, figure_id in figures}
    ).values_list("figure_id", "id_skeleton", "case__key"):
        # a figure this change removes from its case is no longer in the way
        if owner not in kept or figure_id in kept[owner]:
            rows.setdefault(shape, []).append((figure_id, owner))
    existing = {figure_id for found in rows.values() for figure_id, _ in found}
    first = {}
    for write, index, figure_id in figures:
        if figure_id in existing:
            continue
        shape = skeleton(figure_id)
        others = [other for other, _ in rows.get(shape, []) if other != figure_id]
        if not others and first.setdefault(shape, figure_id) != figure_id:
            others = [first[shape]]
        if others:
            problems.append(
                refusal(figure_id, "figure", others[0], where(write, f"figures[{index}].id"))
            )
    return problems


class _PendingIndex:
    """Records written by this change, which count as existing for one another."""

    def __init__(self, writes: list[RecordWrite]):
        self.writes = writes
        self.sources = {w.key for w in writes if w.kind == "source"}
        self.methods = {
            w.key: AssessmentMethod(
                key=w.key, dimensions=w.document["dimensions"], impact=w.document["impact"]
            )
            for w in writes
            if w.kind == "method"
        }
        self.cases = {w.key for w in writes if w.kind == "case"}
        self.components = {
            w.key: ComponentFacts.of(w.document) for w in writes if w.kind == "component"
        }
        self.claims: dict[str, list[tuple[str, str]]] = {}
        self.figures: dict[str, list[tuple[str, str]]] = {}
        for w in writes:
            if w.kind != "case":
                continue
            for index, claim in enumerate(w.document["claims"]):
                self.claims.setdefault(claim["id"], []).append((w.key, f"claims[{index}].id"))
            for index, figure in enumerate(w.document["figures"]):
                self.figures.setdefault(figure["id"], []).append((w.key, f"figures[{index}].id"))

    def conflicts(self) -> list[RuleViolation]:
        """The same claim or figure ID in two cases of one change."""
        paths = {w.key: w.path for w in self.writes if w.kind == "case"}
        problems = []
        for code, index in ((ClaimCode.ID_TAKEN, self.claims), (FigureCode.ID_TAKEN, self.figures)):
            for item_id, owners in index.items():
                cases = {case for case, _ in owners}
                if len(cases) < 2:
                    continue
                first = owners[0][0]
                for case, path in owners:
                    if case != first:
                        prefix = paths[case]
                        problems.append(
                            RuleViolation(
                                code,
                                f"{item_id} is also used by case {first} in this change",
                                f"{prefix}.{path}" if prefix else path,
                            )
                        )
        return problems


def _contexts(
    writes: list[RecordWrite], previous: Previous, pending: _PendingIndex
) -> list[DocumentContext]:
    """Every write's context, each kind's looked up together (fixed queries per change)."""
    actions = {}
    for write in writes:
        current, _ = previous[(write.kind, write.key)]
        actions[id(write)] = write.action or ("update" if current is not None else "create")
    cases = [w for w in writes if w.kind == "case"]
    case_contexts = dict(
        zip(
            map(id, cases),
            load_case_contexts(
                [
                    CaseContextRequest(
                        w.document,
                        actions[id(w)],
                        _current_runs(previous[(w.kind, w.key)][0]),
                    )
                    for w in cases
                ]
            ),
            strict=True,
        )
    )
    rule_figures, rule_cases = _rule_lookups([w for w in writes if w.kind == "rule"])
    methods_in_use = _methods_in_use(
        [w for w in writes if w.kind == "method" and previous[(w.kind, w.key)][0]]
    )
    component_writes = [w for w in writes if w.kind == "component"]
    related_components = component_facts(
        {r["component"] for w in component_writes for r in w.document["relations"]}
    )
    component_cases = _components_in_use(
        [
            w
            for w in component_writes
            if w.document["status"] == "withdrawn" and previous[(w.kind, w.key)][0] is not None
        ]
    )
    contexts = []
    for write in writes:
        current, _ = previous[(write.kind, write.key)]
        action = actions[id(write)]
        if write.kind == "case":
            contexts.append(_pending_case_context(write, case_contexts[id(write)], pending))
            continue
        context = DocumentContext(
            kind=write.kind, key=write.key, exists=current is not None, action=action
        )
        if write.kind == "rule":
            # a rule names one figure and one case: only those are looked up
            figure = write.document["figure"]
            owners = pending.figures.get(figure)
            owner = rule_figures.get(figure) or (owners[0][0] if owners else None)
            context.figures = {figure: owner} if owner is not None else {}
            context.cases = {write.document["case"]} & (rule_cases | pending.cases)
        if write.kind == "component":
            named = {r["component"] for r in write.document["relations"]}
            context.components = {k: related_components[k] for k in named & set(related_components)}
            context.components.update(
                {k: pending.components[k] for k in named & set(pending.components)}
            )
            context.component_cases = component_cases.get(write.key, [])
        if write.kind == "method" and current is not None:
            changed = {k: v for k, v in write.document.items() if k != "status"} != {
                k: v for k, v in current.items() if k != "status"
            }
            context.method_in_use = changed and write.key in methods_in_use
        contexts.append(context)
    return contexts


def _rule_lookups(rules: list[RecordWrite]) -> tuple[dict[str, str], set[str]]:
    """The figures (with their cases) and the cases that the rules name and that exist."""
    if not rules:
        return {}, set()
    figures = Figure.objects.filter(figure_id__in={w.document["figure"] for w in rules})
    cases = Case.objects.filter(key__in={w.document["case"] for w in rules})
    return (
        dict(figures.values_list("figure_id", "case__key")),
        set(cases.values_list("key", flat=True)),
    )


def _methods_in_use(methods: list[RecordWrite]) -> set[str]:
    """Which of these existing methods some assessment uses."""
    if not methods:
        return set()
    return set(
        Assessment.objects.filter(method__key__in={w.key for w in methods})
        .values_list("method__key", flat=True)
        .distinct()
    )


def _components_in_use(withdrawing: list[RecordWrite]) -> dict[str, list[str]]:
    """For each component being withdrawn, the cases whose affected entries name it (a
    few of them, by key: the message names them). One query, none when none is withdrawn."""
    if not withdrawing:
        return {}
    found: dict[str, list[str]] = {}
    rows = (
        AffectedEntry.objects.filter(component__key__in={w.key for w in withdrawing})
        .order_by("component__key", "case__key")
        .values_list("component__key", "case__key")
        .distinct()
    )
    for component, case in rows:
        found.setdefault(component, []).append(case)
    return found


def _current_runs(current: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    return current["reproduction_runs"] if current is not None else None


def _pending_case_context(
    write: RecordWrite, context: DocumentContext, pending: _PendingIndex
) -> DocumentContext:
    """Records of the same change count as existing for a case document.

    Only the names the document uses are looked up, so the cost follows the document, not
    the size of the change; other cases' own conflicts are reported by
    ``_PendingIndex.conflicts``.
    """
    document = write.document
    context.sources |= pending.sources & _source_refs(document)
    for assessment in document["assessments"]:
        if assessment["method"] in pending.methods:
            context.methods[assessment["method"]] = pending.methods[assessment["method"]]
    context.cases |= pending.cases & {r["case"] for r in document["relations"]}
    for entry in document.get("affected", []):
        if entry["component"] in pending.components:
            context.components[entry["component"]] = pending.components[entry["component"]]
    claim_refs = (
        {c["id"] for c in document["claims"]}
        | {c for f in document["figures"] for c in f["claims"]}
        | {c for a in document["assessments"] for c in a["evidence_basis"]["claims"]}
    )
    for claim_id in claim_refs:
        owners = pending.claims.get(claim_id)
        if owners and owners[0][0] != write.key:
            context.live_claims.setdefault(claim_id, owners[0][0])
    figure_refs = {a["figure"] for a in document["attributions"]} | {
        f["id"] for f in document["figures"]
    }
    for figure_id in figure_refs:
        owners = pending.figures.get(figure_id)
        if owners and owners[0][0] != write.key:
            context.figures.setdefault(figure_id, owners[0][0])
    return context


def _source_refs(document: dict[str, Any]) -> set[str]:
    return {e["source"] for c in document["claims"] for e in c["evidence"]} | {
        s for a in document["assessments"] for s in a["evidence_basis"]["sources"]
    }


def _apply(writes: list[RecordWrite], previous: Previous) -> set[str]:
    """Write the live tables: each kind's records together, in a fixed number of queries.

    Returns the cases on the other side of a symmetric relation that changed (partners),
    whose documents change with it."""

    def documents(kind: str) -> list[dict[str, Any]]:
        return [w.document for w in writes if w.kind == kind]

    apply.apply_methods(documents("method"))
    apply.apply_sources(documents("source"))
    apply.apply_components(documents("component"))
    cases = documents("case")
    partners: set[str] = set()
    if cases:
        current = {d["key"]: previous[("case", d["key"])][0] for d in cases}
        written = apply.apply_case_contents(cases, current=current)
        partners = apply.apply_case_links(written, cases, current=current)
    apply.apply_rules(documents("rule"))
    return partners


@dataclass(frozen=True)
class ScopeBaseline:
    """The cases a change can affect and their scope violations before it is applied."""

    cases: frozenset[str]
    violations: frozenset[RuleViolation]
    # the cases owning the figures whose facts the check read
    owners: frozenset[str] = frozenset()


def _scope_violations(writes: list[RecordWrite], previous: Previous | None = None) -> ScopeBaseline:
    """The baseline for ``_check_scope``: only the cases the change can affect are loaded
    (``rules.scoped``), so the cost follows the change, not the knowledge base.

    A case that does not exist yet (``previous`` holds no document for it) has no rows, so
    no violations and no relations that could join other cases' events: the baseline is
    loaded for the affected cases that exist, and not at all if there are none (a load
    into an empty knowledge base)."""
    cases = affected_cases(
        cases={w.key: w.document for w in writes if w.kind == "case"},
        rules={w.key: w.document for w in writes if w.kind == "rule"},
    )
    new = {
        w.key
        for w in writes
        if w.kind == "case" and previous is not None and previous[("case", w.key)][0] is None
    }
    existing = cases - new
    if not existing:  # cases that do not exist yet break no rule before the change
        return ScopeBaseline(frozenset(cases), frozenset(), frozenset())
    state = load_scoped(existing)
    state.written = frozenset(w.key for w in writes if w.kind == "case")
    return ScopeBaseline(frozenset(cases), frozenset(run_scope_rules(state)), _figure_owners(state))


def _figure_owners(state: ScopeState) -> frozenset[str]:
    return frozenset(figure.case for figure in state.figures.values())


def _check_scope(writes: list[RecordWrite], before: ScopeBaseline) -> frozenset[str]:
    """Refuse what the change breaks: everything wrong in the written cases, and anything
    newly wrong elsewhere (a rule that existing data already breaks is a rule conflict).

    Violations outside ``before.cases`` are the same before and after the change, so the
    state after it is loaded, and compared, for those cases only. Returns the cases owning
    the figures whose facts that state read.
    """
    state = load_scoped(
        set(before.cases), figures={w.document["figure"] for w in writes if w.kind == "rule"}
    )
    written_cases = {w.key: w for w in writes if w.kind == "case"}
    written_rules = {w.key: w for w in writes if w.kind == "rule"}
    state.written = frozenset(written_cases)
    problems: list[RuleViolation] = []
    for violation in run_scope_rules(state):
        case_key = violation.record.removeprefix("case ")
        if case_key in written_cases:
            write = written_cases[case_key]
            bare = RuleViolation(violation.code, violation.message, violation.path)
            problems.append(bare.prefixed(write.path) if write.path else bare)
        elif violation not in before.violations:
            problems.append(
                _as_rule_conflict(violation, written_rules) if written_rules else violation
            )
    for write in written_rules.values():
        problems.extend(_rule_self_conflict(write, state))
        for rule, violation in [*non_attribution_hits(state), *bridge_hits(state)]:
            case_key = violation.record.removeprefix("case ")
            if (
                rule.key == write.key
                and case_key not in written_cases
                and violation in before.violations
            ):
                # the rule is being reactivated over data that already breaks it
                problems.append(_as_rule_conflict(violation, written_rules))
    if problems:
        raise RuleViolations(_unique(problems))
    return _figure_owners(state)


def _as_rule_conflict(
    violation: RuleViolation, written_rules: dict[str, RecordWrite]
) -> RuleViolation:
    keys = ", ".join(sorted(written_rules))
    return RuleViolation(
        ScopeCode.RULE_CONFLICT,
        f"{keys} cannot take effect: existing data already breaks it at "
        f"{violation.record} {violation.path} ({violation.code}: {violation.message}). "
        "Correct that record first.",
        violation.path,
        violation.record,
    )


def _rule_self_conflict(write: RecordWrite, state: ScopeState) -> list[RuleViolation]:
    figure = state.figures.get(write.document["figure"])
    if write.document["status"] == "active" and figure and figure.case == write.document["case"]:
        return [
            RuleViolation(
                ScopeCode.RULE_CONFLICT,
                f"{figure.describe()} belongs to {figure.case}: a rule cannot forbid attributing "
                "a figure to its own case",
                f"{write.path}.case" if write.path else "case",
            )
        ]
    return []


def _unique(problems: list[RuleViolation]) -> list[RuleViolation]:
    return list(dict.fromkeys(problems))


def _check_round_trip(writes: list[RecordWrite]) -> dict[RecordId, dict[str, Any]]:
    """What was written reads back as the document sent (e.g. both sides of a relation agree).

    Returns the documents read back (a fixed number of queries per kind), which the
    revisions then snapshot.
    """
    problems = []
    live = {
        kind: lookups.record_documents(kind, {w.key for w in writes if w.kind == kind})
        for kind in {w.kind for w in writes}
    }
    documents: dict[RecordId, dict[str, Any]] = {}
    for write in writes:
        document = live[write.kind].get(write.key)
        if document is not None and document == write.document:
            documents[(write.kind, write.key)] = document
            continue
        for change in diff(write.document, document):
            path = f"{write.path}.{change.path}" if write.path else change.path
            problems.append(
                RuleViolation(
                    DocumentCode.INCONSISTENT,
                    f"{write.label} would read back differently here ({change.op}: "
                    f"{json.dumps(change.old, ensure_ascii=False)} → "
                    f"{json.dumps(change.new, ensure_ascii=False)}); another document of the "
                    "same change says otherwise",
                    path,
                )
            )
    if problems:
        raise RuleViolations(problems)
    return documents


_OUTCOMES = {
    "create": "created",
    "update": "updated",
    "withdraw": "withdrawn",
    "revert": "reverted",
    "import": "imported",
}


def _brought_in_date(write: RecordWrite, action: str, document: dict[str, Any]) -> dt.date | None:
    """The date the document gives its record, for a revision that brings the document in
    from outside: a creation, or any write of a bundle or fixture load (``upsert``)."""
    if action == "create" or write.mode == "upsert":
        return record_date(write.kind, document)
    return None


def _append_revisions(
    head: LedgerHead,
    user: User,
    writes: list[RecordWrite],
    previous: Previous,
    live: dict[RecordId, dict[str, Any]],
    partners: set[str],
    *,
    summary: str,
    material: bool,
) -> list[WriteOutcome]:
    """One revision per changed record, then one per partner case whose document changed
    with a relation; chained in order and inserted together, the head advanced once."""
    outcomes = []
    chain = RevisionChain(head, author=user, summary=summary, material=material)
    for write in writes:
        current, latest = previous[(write.kind, write.key)]
        document = live[(write.kind, write.key)]
        snapshot = dumps_compact(document)
        if latest is not None and latest.snapshot_sha256 == sha256_text(snapshot):
            outcomes.append(WriteOutcome(write.kind, write.key, "unchanged", None, document))
            continue
        action = write.action or ("update" if latest is not None else "create")
        # the live document before the change is the latest snapshot (docs/write-path.md)
        revision = chain.add(
            write.kind,
            write.key,
            action,
            snapshot,
            changed=changed_fields(current, document) if latest is not None else [],
            dated_on=_brought_in_date(write, action, document),
        )
        outcomes.append(WriteOutcome(write.kind, write.key, _OUTCOMES[action], revision, document))
    partner_documents = lookups.record_documents("case", partners)
    partner_latest = lookups.latest_revisions("case", partners)
    partner_before = lookups.revision_snapshots(partner_latest.values())
    for key in sorted(partners):
        partner = partner_documents.get(key)
        if partner is None:
            continue
        snapshot = dumps_compact(partner)
        latest = partner_latest.get(key)
        if latest and latest.snapshot_sha256 == sha256_text(snapshot):
            continue
        chain.add(
            "case",
            key,
            "update" if latest else "create",
            snapshot,
            summary=f"{summary} (relation changed from the other case)",
            changed=changed_fields(partner_before.get(key), partner),
        )
    chain.save()
    return outcomes
