"""The released state passes every rule as a whole (docs/review.md, "The release as a
whole").

Records are approved one at a time, so the revisions a release would publish can disagree
even though every write was checked: a case approved while it attributed figure F, the
attribution removed later (unapproved), then a rule barring F from the case created and
approved. The working state passes every rule (every write is checked); the released
state differs from it only in the *lagging* records: those a release publishes at another
revision than their latest, or not at all. So the check is the one a write makes
(``services/writer.py``): the cases whose violations the lagging records' published
documents can change (``rules.scoped.affected_cases``, then closed under the published
``same_event`` relations) are checked on a scope state built from the documents the
release would publish for them, and the lagging documents also pass the field rules.
Its cost follows the lagging records and their neighbourhoods, not the knowledge base.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from claimsdb.choices import SYMMETRIC_RELATIONS
from claimsdb.codes import ApprovalCode
from claimsdb.integrity import case_check_contexts, rule_check_contexts
from claimsdb.models import Figure, Revision, ScopeRule
from claimsdb.records import RuleViolation
from claimsdb.rules import ScopeState, run_field_rules, run_scope_rules
from claimsdb.rules.scoped import _supporting, affected_cases
from claimsdb.rules.state import FigureFact, RuleFact

# A case the release does not publish, as ``affected_cases`` reads a document.
_ABSENT: dict[str, Any] = {"relations": [], "figures": []}


@dataclass
class Lagging:
    """The records a release publishes at another revision than their latest (or not at
    all): ``(kind, key) → (published revision id or None, published number or None,
    latest number)``. Scope rules and cases only (the kinds the scope rules read)."""

    records: dict[tuple[str, str], tuple[int | None, int | None, int]] = field(default_factory=dict)

    # those whose published revision is new to this release (not what the public sees now)
    changing: set[tuple[str, str]] = field(default_factory=set)

    def add(
        self,
        kind: str,
        key: str,
        revision_id: int | None,
        number: int | None,
        latest: int,
        *,
        changing: bool = False,
    ) -> None:
        self.records[(kind, key)] = (revision_id, number, latest)
        if changing:
            self.changing.add((kind, key))

    def __bool__(self) -> bool:
        return bool(self.records)


def release_violations(lagging: Lagging) -> list[RuleViolation]:
    """The violations the released state would hold, each naming its record, the revision
    published and the approvals that would resolve it; led by one ``approval.conflict``
    saying so. Empty when the state passes. A fixed number of queries per round of the
    ``same_event`` closure."""
    if not lagging:
        return []
    published = _Published(lagging)
    cases = {key: doc for (kind, key), doc in published.lagging_docs().items() if kind == "case"}
    rules = {key: doc for (kind, key), doc in published.lagging_docs().items() if kind == "rule"}
    seeds = affected_cases(
        cases={key: doc or _ABSENT for key, doc in cases.items()},
        rules={key: doc for key, doc in rules.items() if doc is not None},
    )
    absent_rules = [key for key, doc in rules.items() if doc is None]
    seeds |= set(ScopeRule.objects.filter(key__in=absent_rules).values_list("case", flat=True))
    # closed under the same_event relations the release would publish
    candidates: set[str] = set()
    frontier = set(seeds)
    while frontier:
        candidates |= frontier
        docs = published.cases(frontier)
        frontier = {
            relation["case"]
            for doc in docs.values()
            if doc is not None
            for relation in doc["relations"]
            if relation["kind"] == "same_event"
        } - candidates
    state = _state(published, candidates, rules)
    found: list[RuleViolation] = []
    for violation in run_scope_rules(state):
        case = violation.record.removeprefix("case ")
        if published.cases([case]).get(case) is not None:
            found.append(_explained(violation, published, state, [("case", case)]))
    found += _field_violations(published)
    if not found:
        return []
    unique = list(dict.fromkeys(found))
    lead = RuleViolation(
        ApprovalCode.CONFLICT,
        f"the revisions this release would publish break {len(unique)} rule"
        f"{'s' if len(unique) != 1 else ''} together, though each was approved: publishing "
        "is refused; the problems below name the records, the revisions and the approvals "
        "that would resolve them",
        "",
    )
    return [lead, *unique]


class _Published:
    """The documents the release would publish, read on demand and kept: the published
    revision of a lagging record, the latest revision of any other."""

    def __init__(self, lagging: Lagging) -> None:
        self.lagging = lagging
        self.docs: dict[tuple[str, str], dict[str, Any] | None] = {}

    def lagging_docs(self) -> dict[tuple[str, str], dict[str, Any] | None]:
        wanted = [record for record in self.lagging.records if record not in self.docs]
        self._read(wanted)
        return {record: self.docs[record] for record in self.lagging.records}

    def cases(self, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        records = [("case", key) for key in keys]
        self._read([record for record in records if record not in self.docs])
        return {key: self.docs[("case", key)] for _, key in records}

    def rules(self, keys: Iterable[str]) -> dict[str, dict[str, Any] | None]:
        records = [("rule", key) for key in keys]
        self._read([record for record in records if record not in self.docs])
        return {key: self.docs[("rule", key)] for _, key in records}

    def _read(self, records: list[tuple[str, str]]) -> None:
        """Two queries: the lagging records' published snapshots, the others' latest."""
        if not records:
            return
        ids = {}
        latest: dict[str, list[str]] = {}
        for record in records:
            self.docs[record] = None
            if record in self.lagging.records:
                revision_id = self.lagging.records[record][0]
                if revision_id is not None:
                    ids[revision_id] = record
            else:
                latest.setdefault(record[0], []).append(record[1])
        for revision_id, snapshot in Revision.objects.filter(id__in=list(ids)).values_list(
            "id", "snapshot"
        ):
            self.docs[ids[revision_id]] = json.loads(snapshot)
        for kind, keys in latest.items():
            from .releases import _latest_revisions

            heads = _latest_revisions(kind, keys, "", None)
            by_id = {head.revision_id: key for key, head in heads.items()}
            for revision_id, snapshot in Revision.objects.filter(id__in=list(by_id)).values_list(
                "id", "snapshot"
            ):
                self.docs[(kind, by_id[revision_id])] = json.loads(snapshot)


def _state(
    published: _Published,
    candidates: set[str],
    lagging_rules: dict[str, dict[str, Any] | None],
) -> ScopeState:
    """The scope state of ``candidates`` as the release would publish them."""
    docs = {key: doc for key, doc in published.cases(sorted(candidates)).items() if doc}
    state = ScopeState(report=set(docs))
    triples: dict[tuple[str, str, str], None] = {}
    for key in sorted(docs):
        doc = docs[key]
        for position, attribution in enumerate(doc["attributions"]):
            state.attributions.append((key, position, attribution["figure"], attribution["role"]))
        for relation in doc["relations"]:
            case, other = key, relation["case"]
            if relation["kind"] in SYMMETRIC_RELATIONS and other < key:
                case, other = other, case
            triples[(case, other, relation["kind"])] = None
        for position, assessment in enumerate(doc["assessments"]):
            state.assessments.append(
                (
                    key,
                    position,
                    assessment["impact"],
                    frozenset(assessment["evidence_basis"]["claims"]),
                )
            )
    state.relations = sorted(triples)
    # the active rules naming a candidate case, as published
    live_rules = ScopeRule.objects.filter(status="active", case__in=candidates).exclude(
        key__in=list(lagging_rules)
    )
    rules = [RuleFact(*row) for row in live_rules.values_list("key", "figure", "case", "reason")]
    for key, rule in lagging_rules.items():
        if rule is not None and rule["status"] == "active" and rule["case"] in candidates:
            rules.append(RuleFact(key, rule["figure"], rule["case"], rule["reason"]))
    state.rules = sorted(rules, key=lambda rule: rule.key)
    # figure facts: the candidates' own, and those of the figures named or supporting a
    # graded assessment's basis, from the documents of the cases owning them
    wanted = {figure for _, _, figure, _ in state.attributions} | {r.figure for r in state.rules}
    basis = set().union(
        *(claims for _, _, impact, claims in state.assessments if impact is not None)
    )
    owners = set(Figure.objects.filter(figure_id__in=wanted).values_list("case__key", flat=True))
    if basis:
        owners |= set(Figure.objects.filter(_supporting(basis)).values_list("case__key", flat=True))
    every = {**docs, **{k: d for k, d in published.cases(sorted(owners - set(docs))).items() if d}}
    for key in sorted(every):
        for figure in every[key]["figures"]:
            if key in docs or figure["id"] in wanted or set(figure["claims"]) & basis:
                state.figures[figure["id"]] = FigureFact(
                    figure["id"],
                    key,
                    figure["value"],
                    figure["unit"],
                    figure["scope"],
                    frozenset(figure["claims"]),
                )
    state._build_indexes()
    return state


def _field_violations(published: _Published) -> list[RuleViolation]:
    """The field rules over the published documents of the lagging records this release
    changes (the others are the working state, which passes them, or what the public reads
    already). Their references are looked up in the working state, as ``check_rules``
    does; what they name in other records is the scope check's."""
    found: list[RuleViolation] = []
    changing = published.lagging.changing
    for kind, contexts in (("case", case_check_contexts), ("rule", rule_check_contexts)):
        docs = [
            doc
            for (record_kind, key), doc in published.lagging_docs().items()
            if record_kind == kind and doc is not None and (kind, key) in changing
        ]
        if not docs:
            continue
        for doc, context in zip(docs, contexts(docs), strict=True):
            for violation in run_field_rules(kind, doc, context):
                record = f"{kind} {doc['key']}"
                violation = RuleViolation(violation.code, violation.message, violation.path, record)
                found.append(_explained(violation, published, None, [(kind, doc["key"])]))
    return found


def _explained(
    violation: RuleViolation,
    published: _Published,
    state: ScopeState | None,
    records: list[tuple[str, str]],
) -> RuleViolation:
    """The violation with what the release would publish of the records involved and the
    approvals that would resolve it."""
    involved = set(records)
    if state is not None:
        case = records[0][1]
        component = {c for c in state.report or () if state.same_event(c, case)} | {case}
        involved |= {("case", c) for c in component}
        involved |= {("rule", r.key) for r in state.rules if r.case in component}
        doc = published.cases([case]).get(case) or {}
        owned = {f.figure_id: f.case for f in state.figures.values()}
        involved |= {
            ("case", owned[a["figure"]])
            for a in doc.get("attributions", [])
            if a["figure"] in owned
        }
    lagging = sorted(record for record in involved if record in published.lagging.records)
    where = []
    for kind, key in sorted(involved & set(records)) or records:
        entry = published.lagging.records.get((kind, key))
        number = entry[1] if entry else None
        where.append(f"{kind} {key} at revision {number}" if number else f"{kind} {key}")
    if lagging:
        steps = "; ".join(
            f"approving {kind} {key} at its latest revision {latest} (the release would "
            f"publish {f'revision {number}' if number else 'none of it'})"
            for kind, key in lagging
            for _, number, latest in [published.lagging.records[(kind, key)]]
        )
        resolve = f"Resolve it by {steps}: the working state passes this rule."
    else:
        resolve = "The working state breaks it too: correct the record (check_rules names it)."
    message = f"{violation.message} — in this release: {', '.join(where)}. {resolve}"
    return RuleViolation(violation.code, message, violation.path, violation.record)
