"""Read-only checks of the whole knowledge base: the ledger chain and the rules."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, QuerySet, Subquery

from claimsdb.models import (
    AssessmentMethod,
    Case,
    Claim,
    ClaimIdReservation,
    Figure,
    LedgerHead,
    Revision,
    Source,
)
from claimsdb.records import (
    RuleViolation,
    dumps_compact,
)
from claimsdb.records.kinds import record_kinds
from claimsdb.records.stream import (
    BATCH_SIZE,
    NO_PROGRESS,
    Progress,
    document_batches,
    in_key_order,
    keyset_batches,
    record_count,
    reported_batches,
)
from claimsdb.rules import run_field_rules, run_scope_rules
from claimsdb.rules.context import DocumentContext, component_facts
from claimsdb.rules.scoped import load_scoped, same_event_closure
from claimsdb.services.ledger import GENESIS_HASH, row_chain_hash


def verify_history(*, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS) -> list[str]:
    """Recompute the chain and compare live records with their latest snapshots.

    Returns one sentence per problem (empty when the history verifies).
    """
    return list(history_problems(batch_size=batch_size, progress=progress))


def history_problems(
    *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[str]:
    """The problems of ``verify_history`` as they are found.

    Three passes, each in batches of ``batch_size`` (memory follows it, not the number of
    revisions or records): the revisions in number order, recomputing the chain; every
    live record against its latest revision; the record keys of the ledger that have no
    live record. Nothing per record is kept between batches. Kinds are checked in the
    order an export lists them.
    """
    yield from _chain_problems(batch_size, progress)
    kinds = record_kinds.in_bundle_file_order()
    for kind in kinds:
        yield from _live_record_problems(kind.name, batch_size, progress)
    for kind in kinds:
        yield from _deleted_record_problems(kind.name)


# What a chain check reads of each revision (everything but the id).
CHAIN_FIELDS = (
    "number",
    "record_kind",
    "record_key",
    "action",
    "material",
    "summary",
    "author_id",
    "created_at",
    "snapshot",
    "snapshot_sha256",
    "previous_hash",
    "chain_hash",
)


def _chain_problems(batch_size: int, progress: Progress) -> Iterator[str]:
    """The revisions in number order, streamed as plain tuples: one query over a
    server-side cursor on PostgreSQL (``batch_size`` rows fetched at a time), no model
    instance per revision, each snapshot hashed from the text as stored.

    The loop hashes each snapshot in line and each chain with ``ledger.row_chain_hash``
    (positional arguments): calls per revision, paid for every revision of the ledger,
    were a large part of the pass.
    """
    expected_number = 1
    previous_hash = GENESIS_HASH
    sha256 = hashlib.sha256
    rows = Revision.objects.order_by("number").values_list(*CHAIN_FIELDS)
    for batch in reported_batches(
        "revisions", Revision.objects.count, _chunks(rows, batch_size), progress
    ):
        for (
            number,
            record_kind,
            record_key,
            action,
            material,
            summary,
            author_id,
            created_at,
            snapshot,
            snapshot_sha256,
            stored_previous,
            stored_chain,
        ) in batch:
            if number != expected_number:
                yield (
                    f"revision {expected_number}"
                    + (f"–{number - 1}" if number - 1 > expected_number else "")
                    + f" missing: the ledger jumps to revision {number}"
                )
            if stored_previous != previous_hash:
                yield (
                    f"revision {number}: its previous hash does not match revision "
                    f"{number - 1}'s chain hash"
                )
            if sha256(snapshot.encode()).hexdigest() != snapshot_sha256:
                yield (
                    f"revision {number}: the snapshot does not match its SHA-256 "
                    "(the snapshot was edited)"
                )
            chained = row_chain_hash(
                stored_previous,
                number,
                record_kind,
                record_key,
                action,
                material,
                summary,
                author_id,
                created_at,
                snapshot_sha256,
            )
            if chained != stored_chain:
                yield (
                    f"revision {number}: the chain hash does not match its contents "
                    "(metadata or snapshot hash was edited)"
                )
            previous_hash = stored_chain
            expected_number = number + 1
    head = LedgerHead.objects.filter(pk=1).first()
    if head and head.number != expected_number - 1:
        yield (
            f"the ledger head says revision {head.number}, but the last revision is "
            f"{expected_number - 1}"
        )
    if head and head.number and head.chain_hash != previous_hash:
        yield "the ledger head's hash does not match the last revision"


def _live_record_problems(kind: str, batch_size: int, progress: Progress) -> Iterator[str]:
    """Each live record of ``kind`` against its latest snapshot: a fixed number of queries
    for a batch's documents (``document_batches``) and one for its latest revisions."""
    batches = in_key_order(document_batches(kind, batch_size=batch_size))
    for documents in reported_batches(
        record_kinds.get(kind).plural, lambda: record_count(kind), batches, progress
    ):
        latest = _latest_snapshots(kind, [document["key"] for document in documents])
        for document in documents:
            found = latest.get(document["key"])
            if found is None:
                yield (
                    f"{kind} {document['key']}: exists but has no revision (written behind "
                    "the ledger)"
                )
            elif dumps_compact(document) != found[1]:
                yield (
                    f"{kind} {document['key']}: the live record differs from its latest "
                    f"snapshot (revision {found[0]}): changed behind the service layer"
                )


def _latest_snapshots(kind: str, keys: list[str]) -> dict[str, tuple[int, str]]:
    """``{key: (number, snapshot)}`` of the latest revision of each record. One query.

    On PostgreSQL each key's latest revision is one backward step of the (kind, key,
    number) index (a lateral join over the batch's keys, passed as one array), whatever
    the table's statistics say: the planner otherwise may scan every revision of ``kind``
    for each batch, which makes the pass grow with the square of the records.
    """
    if not keys:
        return {}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_latest_snapshots_sql(), [keys, kind])
            return {key: (number, snapshot) for key, number, snapshot in cursor.fetchall()}
    latest_number = (
        Revision.objects.filter(record_kind=kind, record_key=OuterRef("record_key"))
        .order_by("-number")
        .values("number")[:1]
    )
    rows = Revision.objects.filter(
        record_kind=kind, record_key__in=keys, number=Subquery(latest_number)
    ).values_list("record_key", "number", "snapshot")
    return {key: (number, snapshot) for key, number, snapshot in rows}


def _latest_snapshots_sql() -> str:
    field = {
        name: connection.ops.quote_name(Revision._meta.get_field(name).column)
        for name in ("number", "record_kind", "record_key", "snapshot")
    }
    return (
        "SELECT batch.key, latest.{number}, latest.{snapshot} "
        "FROM unnest(%s::text[]) AS batch(key) CROSS JOIN LATERAL ("
        "SELECT {number}, {snapshot} FROM {table} "
        "WHERE {record_kind} = %s AND {record_key} = batch.key "
        "ORDER BY {number} DESC LIMIT 1) AS latest"
    ).format(table=connection.ops.quote_name(Revision._meta.db_table), **field)


def _deleted_record_problems(kind: str) -> Iterator[str]:
    """Record keys with revisions but no live record: found by the database (an anti-join),
    so only the problems, never every key, come back."""
    model = record_kinds.get(kind).model
    orphans = (
        Revision.objects.filter(record_kind=kind)
        .filter(~Exists(model.objects.filter(key=OuterRef("record_key"))))
        .order_by("record_key")
        .values_list("record_key", flat=True)
        .distinct()
    )
    for key in orphans.iterator(chunk_size=BATCH_SIZE):
        yield f"{kind} {key}: has revisions but no live record (deleted behind the ledger)"


def _chunks(rows: QuerySet, size: int) -> Iterator[list[Any]]:
    """The rows of one query in lists of ``size``, fetched ``size`` at a time (a
    server-side cursor on PostgreSQL): memory follows ``size``, and the query runs once."""
    chunk: list[Any] = []
    for row in rows.iterator(chunk_size=size):
        chunk.append(row)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def check_rules(
    *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> list[RuleViolation]:
    """Every rule over every record: data that predates a rule or was written behind the
    service layer. Each violation names its record."""
    return list(rule_violations(batch_size=batch_size, progress=progress))


def rule_violations(
    *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[RuleViolation]:
    """The violations of ``check_rules`` as they are found: the field rules of every case
    and every scope rule, a batch of documents at a time (a fixed number of queries per
    batch), then the scope rules, a batch of cases at a time (``scope_violations``)."""
    cases = in_key_order(document_batches("case", batch_size=batch_size))
    for documents in reported_batches("cases", lambda: record_count("case"), cases, progress):
        for document, context in zip(documents, case_check_contexts(documents), strict=True):
            for violation in run_field_rules("case", document, context):
                yield _in_record(violation, f"case {document['key']}")
    components = in_key_order(document_batches("component", batch_size=batch_size))
    for documents in reported_batches(
        "components", lambda: record_count("component"), components, progress
    ):
        for document, context in zip(documents, component_check_contexts(documents), strict=True):
            for violation in run_field_rules("component", document, context):
                yield _in_record(violation, f"component {document['key']}")
    rules = in_key_order(document_batches("rule", batch_size=batch_size))
    for documents in reported_batches("rules", lambda: record_count("rule"), rules, progress):
        for document, context in zip(documents, rule_check_contexts(documents), strict=True):
            for violation in run_field_rules("rule", document, context):
                yield _in_record(violation, f"rule {document['key']}")
    yield from scope_violations(batch_size=batch_size, progress=progress)


def scope_violations(
    *, batch_size: int = BATCH_SIZE, progress: Progress = NO_PROGRESS
) -> Iterator[RuleViolation]:
    """The scope rules over every case, ``batch_size`` cases at a time, in key order.

    Each batch is checked on the scope state of its ``same_event`` closure
    (``rules.scoped.load_scoped``, the loader of the write path), which holds everything
    those cases' violations depend on: so each batch reports exactly what a scan of the
    whole knowledge base (``ScopeState.load(None)``) reports for its cases, and memory
    follows the batch and its neighbourhood (its events, the figures they attribute or
    rest on, the rules naming them), not the knowledge base. Violations come case by case
    in key order; a case's in the order the full scan gives them (rule by rule).

    Queries per batch: the case keys, one per round of the ``same_event`` closure (the
    distance to the farthest case of the batch's events, plus one) and the five of
    ``load_scoped``.
    """
    keys = keyset_batches(Case.objects.only("key"), batch_size=batch_size)
    for batch in reported_batches("scope", lambda: record_count("case"), keys, progress):
        yield from batch_scope_violations([case.key for case in batch])


def batch_scope_violations(keys: list[str]) -> list[RuleViolation]:
    """The scope violations of the cases ``keys`` (in that order, each case's as the full
    scan orders them). Violations of the other cases of their events are computed too
    (they share the state) but left to the batch those cases belong to."""
    state = load_scoped(same_event_closure(keys))
    position = {key: n for n, key in enumerate(keys)}
    found = [v for v in run_scope_rules(state) if v.record.removeprefix("case ") in position]
    # a stable sort: within a case, the order of the rules and of the rows they read
    found.sort(key=lambda v: position[v.record.removeprefix("case ")])
    return found


def case_check_contexts(documents: list[dict[str, Any]]) -> list[DocumentContext]:
    """What ``case_context`` looks up for each document checked in place (action "check",
    nothing being replaced), for a whole batch at once: one query per kind of lookup over
    the union of the batch's references, then each document gets its own share."""
    refs = [_case_refs(document) for document in documents]
    every = {name: set().union(*(r[name] for r in refs)) for name in _CASE_REF_NAMES}
    sources = set(Source.objects.filter(key__in=every["sources"]).values_list("key", flat=True))
    methods = {m.key: m for m in AssessmentMethod.objects.filter(key__in=every["methods"])}
    cases = set(Case.objects.filter(key__in=every["cases"]).values_list("key", flat=True))
    reserved = dict(
        ClaimIdReservation.objects.filter(claim_id__in=every["claims"]).values_list(
            "claim_id", "case_key"
        )
    )
    live = dict(
        Claim.objects.filter(claim_id__in=every["claims"] | every["figure_claims"]).values_list(
            "claim_id", "case__key"
        )
    )
    figures = dict(
        Figure.objects.filter(figure_id__in=every["figures"]).values_list("figure_id", "case__key")
    )
    components = component_facts(every["components"])
    contexts = []
    for document, ref in zip(documents, refs, strict=True):
        context = DocumentContext(
            kind="case", key=document["key"], exists=False, action="check", current_runs=None
        )
        context.sources = sources & ref["sources"]
        context.methods = {key: methods[key] for key in ref["methods"] if key in methods}
        context.cases = cases & ref["cases"]
        context.reserved_claims = _share(reserved, ref["claims"])
        context.live_claims = _share(live, ref["claims"] | ref["figure_claims"])
        context.figures = _share(figures, ref["figures"])
        context.components = {k: components[k] for k in ref["components"] if k in components}
        # the document's own claims are live: it is checked where it stands
        context.live_claims.update({claim_id: document["key"] for claim_id in ref["claims"]})
        contexts.append(context)
    return contexts


_CASE_REF_NAMES = (
    "sources",
    "methods",
    "cases",
    "claims",
    "figure_claims",
    "figures",
    "components",
)


def _case_refs(document: dict[str, Any]) -> dict[str, set[str]]:
    """The keys a case document refers to, as ``case_context`` gathers them."""
    return {
        "sources": {e["source"] for c in document["claims"] for e in c["evidence"]}
        | {s for a in document["assessments"] for s in a["evidence_basis"]["sources"]},
        "methods": {a["method"] for a in document["assessments"]},
        "cases": {r["case"] for r in document["relations"]},
        "claims": {c["id"] for c in document["claims"]},
        "figure_claims": {c for f in document["figures"] for c in f["claims"]},
        "figures": {a["figure"] for a in document["attributions"]}
        | {f["id"] for f in document["figures"]},
        "components": {a["component"] for a in document.get("affected", [])},
    }


def _share(found: dict[str, str], keys: set[str]) -> dict[str, str]:
    return {key: found[key] for key in keys if key in found}


def component_check_contexts(documents: list[dict[str, Any]]) -> list[DocumentContext]:
    """For each component, the components its relations name that exist: one query for
    the batch."""
    found = component_facts({r["component"] for d in documents for r in d["relations"]})
    contexts = []
    for document in documents:
        context = DocumentContext(
            kind="component", key=document["key"], exists=True, action="check"
        )
        named = {r["component"] for r in document["relations"]}
        context.components = {k: found[k] for k in named if k in found}
        contexts.append(context)
    return contexts


def rule_check_contexts(documents: list[dict[str, Any]]) -> list[DocumentContext]:
    """For each scope rule, whether the figure and the case it names exist: two queries
    for the batch."""
    figures = dict(
        Figure.objects.filter(figure_id__in={d["figure"] for d in documents}).values_list(
            "figure_id", "case__key"
        )
    )
    cases = set(
        Case.objects.filter(key__in={d["case"] for d in documents}).values_list("key", flat=True)
    )
    contexts = []
    for document in documents:
        context = DocumentContext(kind="rule", key=document["key"], exists=True, action="check")
        context.figures = _share(figures, {document["figure"]})
        context.cases = cases & {document["case"]}
        contexts.append(context)
    return contexts


def _in_record(violation: RuleViolation, record: str) -> RuleViolation:
    return RuleViolation(violation.code, violation.message, violation.path, record)


__all__ = [
    "check_rules",
    "history_problems",
    "rule_violations",
    "scope_violations",
    "verify_history",
]
