"""The one write path (DESIGN.md §2): validate, write, check scope, append revisions.

Every service (``case_update``, ``bundle_load``, ``revision_revert``, the importer…)
describes its change as a list of ``RecordWrite`` and hands it to ``write_records``, which
does the rest in one transaction under the ledger lock.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from claimsdb.models import Assessment, AssessmentMethod, Case, Figure, Revision
from claimsdb.records import (
    RecordExists,
    RecordNotFound,
    RuleViolation,
    RuleViolations,
    StaleRevision,
    diff,
    dumps_compact,
    record_document,
)
from claimsdb.rules import ScopeState, run_field_rules, run_scope_rules
from claimsdb.rules.context import DocumentContext, case_context
from claimsdb.rules.scope import bridge_hits, non_attribution_hits
from claimsdb.rules.scoped import affected_cases, load_scoped

from . import apply
from .ledger import append_revision, latest_revision, lock_head
from .permissions import require_role

KIND_ORDER = {"method": 0, "source": 1, "case": 2, "rule": 3}
KIND_ROLE = {"case": "analyst", "source": "analyst", "rule": "reviewer", "method": "reviewer"}


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
    user: AbstractBaseUser,
    writes: list[RecordWrite],
    summary: str,
    material: bool = True,
    role: str | None = None,
    before_apply=None,
) -> list[WriteOutcome]:
    """Validate and write ``writes`` as one change; raise RuleViolations with every problem.

    Nothing is written unless everything holds. ``before_apply`` lets the importer write its
    run rows inside the same transaction, after validation and before the revision.
    """
    summary = (summary or "").strip()
    # Nothing before the ledger lock reads a record another writer could change: the
    # role, the summary and the order of the writes depend on the request alone, so a
    # refused request never waits for the lock (docs/write-path.md).
    for kind in {w.kind for w in writes}:
        require_role(user, role or KIND_ROLE[kind], f"changing a {kind}")
    if not summary:
        raise RuleViolations(
            [
                RuleViolation(
                    "revision.summary_required",
                    "every change needs a summary saying what changed and why",
                    "summary",
                )
            ]
        )
    writes = sorted(writes, key=lambda w: KIND_ORDER[w.kind])
    with transaction.atomic():
        head = lock_head()
        previous = _check_existence_and_staleness(writes)
        _validate_fields(writes, previous)
        before = _scope_violations(writes)
        partners_before = _partners(writes)
        _apply(writes, previous)
        if before_apply is not None:
            before_apply()
        _check_scope(writes, before)
        live = _check_round_trip(writes)
        partners = (partners_before | _partners(writes)) - {
            w.key for w in writes if w.kind == "case"
        }
        return _append_revisions(
            head, user, writes, previous, live, partners, summary=summary, material=material
        )


def _check_existence_and_staleness(writes: list[RecordWrite]) -> dict[tuple[str, str], Any]:
    """The latest revision number of each record (None if it has none); refuse stale edits."""
    previous = {}
    for write in writes:
        current = record_document(write.kind, write.key)
        if write.mode == "create" and current is not None:
            raise RecordExists(write.kind, write.key)
        if write.mode == "update" and current is None:
            raise RecordNotFound(write.kind, write.key)
        latest = latest_revision(write.kind, write.key)
        number = latest.number if latest else None
        if write.check_expected and write.expected_revision != number:
            raise StaleRevision(
                record=write.label, expected=write.expected_revision, current=number
            )
        previous[(write.kind, write.key)] = (current, latest)
    return previous


def _validate_fields(writes: list[RecordWrite], previous) -> None:
    pending = _PendingIndex(writes)
    problems: list[RuleViolation] = []
    for write in writes:
        current, _ = previous[(write.kind, write.key)]
        context = _context(write, current, pending)
        for violation in run_field_rules(write.kind, write.document, context):
            problems.append(violation.prefixed(write.path) if write.path else violation)
    problems.extend(pending.conflicts())
    if problems:
        raise RuleViolations(problems)


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
        for code, index in (("claim.id_taken", self.claims), ("figure.id_taken", self.figures)):
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


def _context(write: RecordWrite, current, pending: _PendingIndex) -> DocumentContext:
    action = write.action or ("update" if current is not None else "create")
    if write.kind == "case":
        context = case_context(
            write.document,
            action=action,
            current_runs=current["reproduction_runs"] if current is not None else None,
        )
        context.sources |= pending.sources & _source_refs(write.document)
        context.methods.update(pending.methods)
        context.cases |= pending.cases
        # other cases of the same change count as existing (their own conflicts are
        # reported by _PendingIndex.conflicts)
        for claim_id, owners in pending.claims.items():
            if owners[0][0] != write.key:
                context.live_claims.setdefault(claim_id, owners[0][0])
        for figure_id, owners in pending.figures.items():
            if owners[0][0] != write.key:
                context.figures.setdefault(figure_id, owners[0][0])
        return context
    context = DocumentContext(
        kind=write.kind, key=write.key, exists=current is not None, action=action
    )
    if write.kind == "rule":
        context.figures = dict(
            Figure.objects.filter(figure_id=write.document["figure"]).values_list(
                "figure_id", "case__key"
            )
        )
        for figure_id, owners in pending.figures.items():
            context.figures.setdefault(figure_id, owners[0][0])
        context.cases = (
            set(Case.objects.filter(key=write.document["case"]).values_list("key", flat=True))
            | pending.cases
        )
    if write.kind == "method" and current is not None:
        changed = {k: v for k, v in write.document.items() if k != "status"} != {
            k: v for k, v in current.items() if k != "status"
        }
        context.method_in_use = (
            changed and Assessment.objects.filter(method__key=write.key).exists()
        )
    return context


def _source_refs(document: dict[str, Any]) -> set[str]:
    return {e["source"] for c in document["claims"] for e in c["evidence"]} | {
        s for a in document["assessments"] for s in a["evidence_basis"]["sources"]
    }


def _apply(writes: list[RecordWrite], previous) -> None:
    cases = {}
    for write in writes:
        if write.kind == "method":
            apply.apply_method(write.document)
        elif write.kind == "source":
            apply.apply_source(write.document)
        elif write.kind == "case":
            current, _ = previous[(write.kind, write.key)]
            cases[write.key] = apply.apply_case_content(
                write.document, restore_runs=current is None
            )
    for write in writes:
        if write.kind == "case":
            apply.apply_case_links(cases[write.key], write.document)
    for write in writes:
        if write.kind == "rule":
            apply.apply_rule(write.document)


@dataclass(frozen=True)
class ScopeBaseline:
    """The cases a change can affect and their scope violations before it is applied."""

    cases: frozenset[str]
    violations: frozenset[RuleViolation]


def _scope_violations(writes: list[RecordWrite]) -> ScopeBaseline:
    """The baseline for ``_check_scope``: only the cases the change can affect are loaded
    (``rules.scoped``), so the cost follows the change, not the knowledge base."""
    cases = affected_cases(
        cases={w.key: w.document for w in writes if w.kind == "case"},
        rules={w.key: w.document for w in writes if w.kind == "rule"},
    )
    state = load_scoped(cases)
    return ScopeBaseline(frozenset(cases), frozenset(run_scope_rules(state)))


def _check_scope(writes: list[RecordWrite], before: ScopeBaseline) -> None:
    """Refuse what the change breaks: everything wrong in the written cases, and anything
    newly wrong elsewhere (a rule that existing data already breaks is a rule conflict).

    Violations outside ``before.cases`` are the same before and after the change, so the
    state after it is loaded, and compared, for those cases only.
    """
    state = load_scoped(
        set(before.cases), figures={w.document["figure"] for w in writes if w.kind == "rule"}
    )
    written_cases = {w.key: w for w in writes if w.kind == "case"}
    written_rules = {w.key: w for w in writes if w.kind == "rule"}
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


def _as_rule_conflict(
    violation: RuleViolation, written_rules: dict[str, RecordWrite]
) -> RuleViolation:
    keys = ", ".join(sorted(written_rules))
    return RuleViolation(
        "scope.rule_conflict",
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
                "scope.rule_conflict",
                f"{figure.describe()} belongs to {figure.case}: a rule cannot forbid attributing "
                "a figure to its own case",
                f"{write.path}.case" if write.path else "case",
            )
        ]
    return []


def _unique(problems: list[RuleViolation]) -> list[RuleViolation]:
    return list(dict.fromkeys(problems))


def _check_round_trip(writes: list[RecordWrite]) -> dict[tuple[str, str], dict[str, Any]]:
    """What was written reads back as the document sent (e.g. both sides of a relation agree).

    Returns the documents read back, which the revisions then snapshot.
    """
    problems = []
    documents = {}
    for write in writes:
        live = documents[(write.kind, write.key)] = record_document(write.kind, write.key)
        if live == write.document:
            continue
        for change in diff(write.document, live):
            path = f"{write.path}.{change.path}" if write.path else change.path
            problems.append(
                RuleViolation(
                    "document.inconsistent",
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


def _partners(writes: list[RecordWrite]) -> set[str]:
    partners: set[str] = set()
    for write in writes:
        if write.kind == "case":
            partners |= apply.relation_partners(write.key)
    return partners


def _append_revisions(
    head, user, writes, previous, live, partners, *, summary: str, material: bool
) -> list[WriteOutcome]:
    outcomes = []
    for write in writes:
        _, latest = previous[(write.kind, write.key)]
        document = live[(write.kind, write.key)]
        if latest is not None and latest.snapshot == dumps_compact(document):
            outcomes.append(WriteOutcome(write.kind, write.key, "unchanged", None, document))
            continue
        action = write.action or ("update" if latest is not None else "create")
        revision = append_revision(
            head=head,
            record_kind=write.kind,
            record_key=write.key,
            action=action,
            material=material,
            summary=summary,
            author=user,
            document=document,
        )
        outcome = {
            "create": "created",
            "update": "updated",
            "withdraw": "withdrawn",
            "revert": "reverted",
            "import": "imported",
        }[action]
        outcomes.append(WriteOutcome(write.kind, write.key, outcome, revision, document))
    for key in sorted(partners):
        document = record_document("case", key)
        latest = latest_revision("case", key)
        if document is None or (latest and latest.snapshot == dumps_compact(document)):
            continue
        append_revision(
            head=head,
            record_kind="case",
            record_key=key,
            action="update" if latest else "create",
            material=material,
            summary=f"{summary} (relation changed from the other case)",
            author=user,
            document=document,
        )
    return outcomes
