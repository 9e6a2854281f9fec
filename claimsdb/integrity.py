"""Read-only checks of the whole knowledge base: the ledger chain and the rules."""

from __future__ import annotations

from claimsdb.models import Case, Figure, LedgerHead, Revision
from claimsdb.records import (
    RuleViolation,
    bundle_document,
    dumps_compact,
    sha256_text,
)
from claimsdb.rules import ScopeState, run_field_rules, run_scope_rules
from claimsdb.rules.context import DocumentContext, case_context
from claimsdb.services.ledger import GENESIS_HASH, chain_hash


def verify_history() -> list[str]:
    """Recompute the chain and compare live records with their latest snapshots.

    Returns one sentence per problem (empty when the history verifies).
    """
    problems: list[str] = []
    expected_number = 1
    previous_hash = GENESIS_HASH
    latest: dict[tuple[str, str], Revision] = {}
    for revision in Revision.objects.order_by("number").iterator(chunk_size=500):
        if revision.number != expected_number:
            problems.append(
                f"revision {expected_number}"
                + (f"–{revision.number - 1}" if revision.number - 1 > expected_number else "")
                + f" missing: the ledger jumps to revision {revision.number}"
            )
        if revision.previous_hash != previous_hash:
            problems.append(
                f"revision {revision.number}: its previous hash does not match revision "
                f"{revision.number - 1}'s chain hash"
            )
        if sha256_text(revision.snapshot) != revision.snapshot_sha256:
            problems.append(
                f"revision {revision.number}: the snapshot does not match its SHA-256 "
                "(the snapshot was edited)"
            )
        recomputed = chain_hash(
            previous_hash=revision.previous_hash,
            number=revision.number,
            record_kind=revision.record_kind,
            record_key=revision.record_key,
            action=revision.action,
            material=revision.material,
            summary=revision.summary,
            author_id=revision.author_id,
            created_at=revision.created_at,
            snapshot_sha256=revision.snapshot_sha256,
        )
        if recomputed != revision.chain_hash:
            problems.append(
                f"revision {revision.number}: the chain hash does not match its contents "
                "(metadata or snapshot hash was edited)"
            )
        previous_hash = revision.chain_hash
        expected_number = revision.number + 1
        latest[(revision.record_kind, revision.record_key)] = revision
    head = LedgerHead.objects.filter(pk=1).first()
    if head and head.number != expected_number - 1:
        problems.append(
            f"the ledger head says revision {head.number}, but the last revision is "
            f"{expected_number - 1}"
        )
    if head and head.number and head.chain_hash != previous_hash:
        problems.append("the ledger head's hash does not match the last revision")
    bundle = bundle_document()
    live: dict[tuple[str, str], dict] = {}
    for name, kind in (
        ("methods", "method"),
        ("sources", "source"),
        ("cases", "case"),
        ("rules", "rule"),
    ):
        for document in bundle[name]:
            live[(kind, document["key"])] = document
    for (kind, key), document in sorted(live.items()):
        revision = latest.get((kind, key))
        if revision is None:
            problems.append(f"{kind} {key}: exists but has no revision (written behind the ledger)")
        elif dumps_compact(document) != revision.snapshot:
            problems.append(
                f"{kind} {key}: the live record differs from its latest snapshot (revision "
                f"{revision.number}): changed behind the service layer"
            )
    for kind, key in sorted(set(latest) - set(live)):
        problems.append(
            f"{kind} {key}: has revisions but no live record (deleted behind the ledger)"
        )
    return problems


def check_rules() -> list[RuleViolation]:
    """Every rule over every record: data that predates a rule or was written behind the
    service layer. Each violation names its record."""
    violations: list[RuleViolation] = []
    bundle = bundle_document()
    for document in bundle["cases"]:
        context = case_context(document, action="check", current_runs=None)
        context.live_claims.update({c["id"]: document["key"] for c in document["claims"]})
        for violation in run_field_rules("case", document, context):
            violations.append(_in_record(violation, f"case {document['key']}"))
    for document in bundle["rules"]:
        context = DocumentContext(kind="rule", key=document["key"], exists=True, action="check")

        context.figures = dict(Figure.objects.values_list("figure_id", "case__key"))
        context.cases = set(Case.objects.values_list("key", flat=True))
        for violation in run_field_rules("rule", document, context):
            violations.append(_in_record(violation, f"rule {document['key']}"))
    violations.extend(run_scope_rules(ScopeState.load(None)))
    return violations


def _in_record(violation: RuleViolation, record: str) -> RuleViolation:
    return RuleViolation(violation.code, violation.message, violation.path, record)


__all__ = ["check_rules", "verify_history"]
