"""The revision ledger: chain, verification, revert, concurrent writers."""

import json
import threading

import pytest
from django.db import connections

from claimsdb.integrity import verify_history
from claimsdb.models import Approval, Case, Revision
from claimsdb.records import RuleViolations, bundle_document, record_document
from claimsdb.services import bundle_load, case_update, revision_revert

from .support import case_doc, load_seed_bundle, make_user

pytestmark = pytest.mark.django_db


def test_seed_history_verifies(seeded):
    numbers = list(Revision.objects.values_list("number", flat=True))
    assert numbers == list(range(1, len(numbers) + 1))
    assert verify_history() == []


def test_each_revision_chains_to_the_previous(seeded):
    revisions = list(Revision.objects.order_by("number"))
    assert revisions[0].previous_hash == "0" * 64
    for before, after in zip(revisions, revisions[1:], strict=False):
        assert after.previous_hash == before.chain_hash


def test_verify_catches_an_edited_snapshot(seeded):
    revision = Revision.objects.get(record_key="CP22-003")
    snapshot = json.loads(revision.snapshot)
    snapshot["title"] = "Tampered"
    Revision.objects.filter(pk=revision.pk).update(snapshot=json.dumps(snapshot))
    problems = verify_history()
    assert any(f"revision {revision.number}: the snapshot does not match" in p for p in problems)


def test_verify_catches_edited_metadata(seeded):
    revision = Revision.objects.get(record_key="CP22-003")
    Revision.objects.filter(pk=revision.pk).update(summary="Rewritten history")
    assert any("chain hash does not match" in p for p in verify_history())


@pytest.mark.parametrize(
    "field, value",
    [
        ("action", "revert"),
        ("material", False),
        ("record_key", "CP22-999"),
        ("summary", "Rewritten history"),
        ("created_at", "2020-01-01T00:00:00.000001Z"),
        ("snapshot_sha256", "f" * 64),
    ],
)
def test_verify_catches_each_chained_field_edited(seeded, field, value):
    revision = Revision.objects.get(record_key="CP22-003")
    Revision.objects.filter(pk=revision.pk).update(**{field: value})
    problems = verify_history()
    assert (
        f"revision {revision.number}: the chain hash does not match its contents "
        "(metadata or snapshot hash was edited)"
    ) in problems


def test_verify_catches_a_deleted_revision(seeded):
    # whoever deletes a revision must delete its approval first (it protects the revision)
    Approval.objects.filter(revision__number=3).delete()
    Revision.objects.filter(number=3).delete()
    problems = verify_history()
    assert any("revision 3 missing" in p for p in problems)


def test_verify_catches_a_live_row_changed_behind_the_services(seeded):
    number = Revision.objects.filter(record_key="CP22-003").latest("number").number
    Case.objects.filter(key="CP22-003").update(title="Changed behind the ledger")
    problems = verify_history()
    assert problems == [
        f"case CP22-003: the live record differs from its latest snapshot (revision {number}): "
        "changed behind the service layer"
    ]


def test_verify_catches_a_live_record_without_revisions(seeded, analyst):
    document = case_doc(seeded, "CP22-003")
    document["title"] = "A second revision"
    case_update(user=analyst, key="CP22-003", document=document, summary="Retitle")
    numbers = list(
        Revision.objects.filter(record_key="CP22-003")
        .order_by("number")
        .values_list("number", flat=True)
    )
    assert len(numbers) == 2
    # the latest of its revisions is the one compared: the record equals it
    assert verify_history() == []
    Approval.objects.filter(record_key="CP22-003").delete()
    Revision.objects.filter(record_key="CP22-003").delete()
    problems = verify_history()
    assert "case CP22-003: exists but has no revision (written behind the ledger)" in problems


def test_revert_restores_an_old_revision_as_a_new_one(seeded, analyst, reviewer):
    original = Revision.objects.get(record_key="CP22-003")
    document = case_doc(seeded, "CP22-003")
    document["title"] = "A worse title"
    case_update(user=analyst, key="CP22-003", document=document, summary="Retitle")
    outcome = revision_revert(user=reviewer, number=original.number, summary="Undo retitle")
    assert outcome.revision.action == "revert"
    assert outcome.revision.number == Revision.objects.count()
    assert record_document("case", "CP22-003") == case_doc(seeded, "CP22-003")
    assert verify_history() == []


def test_revert_restores_removed_claims(seeded, analyst, reviewer):
    original = Revision.objects.get(record_key="CP22-003")
    document = case_doc(seeded, "CP22-003")
    removed = document["claims"].pop()
    document["assessments"][0]["evidence_basis"]["claims"].remove(removed["id"])
    case_update(user=analyst, key="CP22-003", document=document, summary="Drop")
    revision_revert(user=reviewer, number=original.number, summary="Restore")
    assert [c["id"] for c in record_document("case", "CP22-003")["claims"]][-1] == removed["id"]


def test_revert_that_todays_rules_forbid_is_refused(seeded, reviewer):
    # An old revision that attributed the 155 responses to CP22-003, written before the rule
    # existed: reverting to it today is refused.
    bundle = load_seed_bundle()
    rule = bundle["rules"][0]
    rule["status"] = "withdrawn"
    bundle_load(
        user=reviewer,
        bundle={**bundle, "cases": [], "sources": [], "methods": []},
        summary="Withdraw rule",
    )
    document = case_doc(bundle, "CP22-003")
    document["relations"] = [{"case": "CP22-002", "kind": "same_event", "note": "merged"}]
    document["attributions"] = [{"figure": "FIG-CP22-002-RESPONSES", "role": "context", "note": ""}]
    other = case_doc(bundle, "CP22-002")
    other["relations"] = document["relations"][:1]
    other["relations"][0] = {"case": "CP22-003", "kind": "same_event", "note": "merged"}
    bundle_load(
        user=reviewer,
        bundle={
            "format": "claimsdb.bundle/1",
            "methods": [],
            "sources": [],
            "rules": [],
            "cases": [other, document],
        },
        summary="Treat as one event",
    )
    attributed = Revision.objects.filter(record_key="CP22-003").latest("number").number
    bundle_load(user=reviewer, bundle=load_seed_bundle(), summary="Back to the seed")
    assert record_document("rule", rule["key"])["status"] == "active"
    before = bundle_document()
    count = Revision.objects.count()
    with pytest.raises(RuleViolations) as refused:
        revision_revert(user=reviewer, number=attributed, summary="Revert to the merged view")
    assert {"scope.non_attribution", "scope.relation_conflict"} <= set(refused.value.codes)
    assert bundle_document() == before and Revision.objects.count() == count


@pytest.mark.postgres(
    reason="concurrent writers are checked on PostgreSQL (SQLite serializes writers)"
)
@pytest.mark.django_db(transaction=True)
def test_parallel_writers_get_unique_gapless_numbers(request):
    reviewer = make_user("reviewer", "reviewer")
    bundle = load_seed_bundle()
    bundle_load(user=reviewer, bundle=bundle, summary="Seed")
    # one revision a record of the seed (its components included: 18 since they joined it)
    seeded = sum(len(records) for records in bundle.values() if isinstance(records, list))
    assert Revision.objects.count() == seeded == 18
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(index: int) -> None:
        try:
            barrier.wait()
            for round_ in range(3):
                document = record_document("case", "CP22-003")
                document["summary"] = f"writer {index} round {round_}"
                case_update(
                    user=reviewer, key="CP22-003", document=document, summary=f"w{index} r{round_}"
                )
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    numbers = list(Revision.objects.order_by("number").values_list("number", flat=True))
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(numbers) == seeded + 8 * 3
    assert verify_history() == []
