"""services/records.py: merge patches, withdrawals and reverts made to a record as it is,
with the one guard against lost updates (the expected revision, retried when none is named)."""

from __future__ import annotations

import json

import pytest

from claimsdb.models import Revision
from claimsdb.records import RecordNotFound, RuleViolations, StaleRevision, record_document
from claimsdb.services import (
    ANY_REVISION,
    record_patch,
    record_withdraw,
    revision_revert,
)
from claimsdb.services.records import STALE_RETRIES, merge_patch

from .concurrent_writes import latest, limits_set_by, meddle

pytestmark = pytest.mark.django_db

CASE = "CP22-003"


# --- merge_patch ----------------------------------------------------------------------------


def test_merge_patch_merges_objects_removes_nulls_and_replaces_the_rest():
    target = {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "f": "x"}
    patch = {"a": None, "b": {"c": None, "g": 4}, "e": [3], "h": {"i": None}}
    assert merge_patch(target, patch) == {"b": {"d": 3, "g": 4}, "e": [3], "f": "x", "h": {}}
    assert target == {"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "f": "x"}  # left as it was
    assert merge_patch(target, [1]) == [1]
    assert merge_patch("text", {"a": 1}) == {"a": 1}


# --- record_patch ---------------------------------------------------------------------------


def test_patch_without_an_expected_revision_applies_to_the_latest(seeded, analyst):
    before = Revision.objects.count()
    outcome = record_patch(
        user=analyst, kind="case", key=CASE, patch={"title": "Patched"}, summary="Patch"
    )
    assert outcome.revision.number == latest() and Revision.objects.count() == before + 1
    assert outcome.document["title"] == "Patched"
    assert record_document("case", CASE)["title"] == "Patched"


def test_patch_with_the_latest_revision_applies(seeded, analyst):
    outcome = record_patch(
        user=analyst,
        kind="case",
        key=CASE,
        patch={"tags": ["patched"]},
        summary="Patch",
        expected_revision=latest(),
    )
    assert outcome.outcome == "updated"
    assert record_document("case", CASE)["tags"] == ["patched"]


def test_patch_with_an_older_revision_is_refused_as_stale(seeded, analyst):
    base = latest()
    limits_set_by(analyst, "Theirs")(1)
    before = Revision.objects.count()
    with pytest.raises(StaleRevision) as stale:
        record_patch(
            user=analyst,
            kind="case",
            key=CASE,
            patch={"title": "Mine"},
            summary="Patch",
            expected_revision=base,
        )
    assert (stale.value.expected, stale.value.current) == (base, latest())
    assert stale.value.codes == ["revision.stale"]
    assert Revision.objects.count() == before
    assert record_document("case", CASE)["limits"] == "Theirs 1"


def test_a_change_landing_between_the_read_and_the_write_of_a_patch_is_not_lost(
    seeded, analyst, reviewer, monkeypatch
):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    outcome = record_patch(
        user=analyst, kind="case", key=CASE, patch={"title": "Mine"}, summary="Patch"
    )
    assert len(reads) == 2  # refused as stale once, read and applied again
    document = record_document("case", CASE)
    assert document["title"] == "Mine"
    assert document["limits"] == "Theirs 1"
    concurrent = Revision.objects.get(summary="Theirs 1")
    assert outcome.revision.number == concurrent.number + 1


def test_a_patch_based_on_a_revision_is_refused_when_a_change_lands_in_between(
    seeded, analyst, reviewer, monkeypatch
):
    base = latest()
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    with pytest.raises(StaleRevision):
        record_patch(
            user=analyst,
            kind="case",
            key=CASE,
            patch={"title": "Mine"},
            summary="Patch",
            expected_revision=base,
        )
    assert len(reads) == 1  # the caller named the revision: never retried
    document = record_document("case", CASE)
    assert document["limits"] == "Theirs 1" and document["title"] != "Mine"


def test_retries_are_bounded_and_every_concurrent_change_is_kept(
    seeded, analyst, reviewer, monkeypatch
):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"), times=STALE_RETRIES)
    with pytest.raises(StaleRevision):
        record_patch(user=analyst, kind="case", key=CASE, patch={"title": "Mine"}, summary="Patch")
    assert len(reads) == STALE_RETRIES
    assert record_document("case", CASE)["limits"] == f"Theirs {STALE_RETRIES}"
    assert not Revision.objects.filter(summary="Patch").exists()


def test_patch_checks_the_merged_document(seeded, analyst):
    before = Revision.objects.count()
    with pytest.raises(RuleViolations) as refused:
        record_patch(
            user=analyst, kind="case", key=CASE, patch={"key": "CP22-999"}, summary="Rekey"
        )
    assert [(v.code, v.path) for v in refused.value.violations] == [("record.key_mismatch", "key")]
    with pytest.raises(RuleViolations) as refused:
        record_patch(user=analyst, kind="case", key=CASE, patch={"title": None}, summary="x")
    assert refused.value.codes == ["document.missing_field"]
    assert Revision.objects.count() == before


def test_patch_of_a_missing_record_is_not_found(seeded, analyst):
    with pytest.raises(RecordNotFound):
        record_patch(user=analyst, kind="case", key="CP99-999", patch={}, summary="x")
    with pytest.raises(RecordNotFound):  # not stale: there is nothing to be stale against
        record_patch(
            user=analyst, kind="case", key="CP99-999", patch={}, summary="x", expected_revision=3
        )


# --- record_withdraw and revision_revert ----------------------------------------------------


def test_withdrawal_keeps_a_change_landing_before_it(seeded, analyst, reviewer, monkeypatch):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    outcome = record_withdraw(user=analyst, kind="case", key=CASE, summary="Withdraw")
    assert len(reads) == 2
    assert outcome.revision.action == "withdraw"
    document = record_document("case", CASE)
    assert (document["status"], document["limits"]) == ("withdrawn", "Theirs 1")


def test_withdrawal_on_an_older_revision_is_refused(seeded, analyst):
    base = latest()
    limits_set_by(analyst, "Theirs")(1)
    with pytest.raises(StaleRevision):
        record_withdraw(
            user=analyst, kind="case", key=CASE, summary="Withdraw", expected_revision=base
        )
    assert record_document("case", CASE)["status"] != "withdrawn"


def test_revert_retries_on_a_concurrent_change_and_refuses_a_stale_base(
    seeded, analyst, reviewer, monkeypatch
):
    first = Revision.objects.filter(record_kind="case", record_key=CASE).earliest("number")
    record_patch(user=analyst, kind="case", key=CASE, patch={"title": "Later"}, summary="x")
    base = latest()
    limits_set_by(analyst, "Theirs")(1)
    with pytest.raises(StaleRevision):
        revision_revert(
            user=reviewer, number=first.number, summary="Revert", expected_revision=base
        )
    reads = meddle(monkeypatch, limits_set_by(analyst, "Again"))
    outcome = revision_revert(
        user=reviewer, number=first.number, summary="Revert", expected_revision=ANY_REVISION
    )
    assert len(reads) == 2
    assert outcome.revision.action == "revert"
    assert outcome.revision.number == Revision.objects.get(summary="Again 1").number + 1
    assert record_document("case", CASE)["title"] == json.loads(first.snapshot)["title"]
