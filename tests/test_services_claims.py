"""services/claims.py: claims one at a time, each change one revision of its case, made to
the case as it is; refusals point into the case and say where the claim stands."""

from __future__ import annotations

import pytest

from claimsdb.models import Revision
from claimsdb.records import RecordNotFound, RuleViolation, StaleRevision, record_document
from claimsdb.services import (
    ClaimRefused,
    claim_add,
    claim_move,
    claim_patch,
    claim_update,
    claim_withdraw,
    claims_add,
)

from .concurrent_writes import latest, limits_set_by, meddle

pytestmark = pytest.mark.django_db

CASE = "CP22-003"
A, B, C = "CLM-CP22-003-A", "CLM-CP22-003-B", "CLM-ENRICH-20261028-014"


def claim_ids() -> list[str]:
    return [claim["id"] for claim in record_document("case", CASE)["claims"]]


def claim_of(claim_id: str) -> dict:
    return next(c for c in record_document("case", CASE)["claims"] if c["id"] == claim_id)


@pytest.fixture
def case_claims(seeded) -> list[str]:
    """The seed's claims of the case, in their order (the tests below move them)."""
    assert claim_ids() == [A, B, C]
    return claim_ids()


# --- moving -----------------------------------------------------------------------------


def test_move_a_claim_down_and_up_one_revision_each(case_claims, analyst):
    before = Revision.objects.count()
    down = claim_move(user=analyst, claim_id=A, offset=1, summary="Down", material=False)
    assert claim_ids() == [B, A, C]
    assert down.revision.material is False and down.revision.record_key == CASE
    claim_move(user=analyst, claim_id=C, offset=-2, summary="To the top")
    assert claim_ids() == [C, B, A]
    assert Revision.objects.count() == before + 2


def test_a_move_past_either_end_stops_there(case_claims, analyst):
    outcome = claim_move(user=analyst, claim_id=A, offset=-1, summary="Up")
    assert outcome.outcome == "unchanged" and outcome.revision is None
    claim_move(user=analyst, claim_id=A, offset=5, summary="Far down")
    assert claim_ids() == [B, C, A]


def test_moving_an_unknown_claim_is_not_found(case_claims, analyst):
    with pytest.raises(RecordNotFound):
        claim_move(user=analyst, claim_id="CLM-NOPE", offset=1, summary="x")


def test_a_move_on_an_older_revision_is_refused(case_claims, analyst):
    base = latest()
    claim_patch(user=analyst, claim_id=B, patch={"statement": "Theirs"}, summary="B")
    with pytest.raises(StaleRevision):
        claim_move(user=analyst, claim_id=A, offset=1, summary="Down", expected_revision=base)
    assert claim_ids() == [A, B, C]


# --- withdrawing ------------------------------------------------------------------------


def test_withdraw_keeps_the_claim_with_its_reason(case_claims, analyst):
    outcome = claim_withdraw(
        user=analyst, claim_id=A, reason="The report was retracted.", summary="Withdraw A"
    )
    assert outcome.revision.summary == "Withdraw A"
    assert claim_ids() == [A, B, C]
    withdrawn = claim_of(A)
    assert (withdrawn["status"], withdrawn["status_note"]) == (
        "withdrawn",
        "The report was retracted.",
    )


def test_withdraw_without_a_reason_keeps_the_status_note(case_claims, analyst):
    note = claim_of(A)["status_note"]
    claim_withdraw(user=analyst, claim_id=A, summary="Withdraw A")
    assert (claim_of(A)["status"], claim_of(A)["status_note"]) == ("withdrawn", note)


def test_withdraw_on_an_older_revision_is_refused(case_claims, analyst):
    base = latest()
    claim_patch(user=analyst, claim_id=B, patch={"statement": "Theirs"}, summary="B")
    with pytest.raises(StaleRevision):
        claim_withdraw(
            user=analyst, claim_id=A, reason="r", summary="Withdraw", expected_revision=base
        )
    assert claim_of(A)["status"] != "withdrawn"


# --- patching and replacing -------------------------------------------------------------


def test_patch_merges_into_the_claim(case_claims, analyst):
    evidence = claim_of(A)["evidence"]
    claim_patch(user=analyst, claim_id=A, patch={"statement": "Patched."}, summary="Patch A")
    patched = claim_of(A)
    assert patched["statement"] == "Patched." and patched["evidence"] == evidence


def test_a_change_to_the_case_landing_before_a_claim_patch_is_not_lost(
    case_claims, analyst, reviewer, monkeypatch
):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    claim_patch(user=analyst, claim_id=A, patch={"statement": "Mine."}, summary="Patch A")
    assert len(reads) == 2
    document = record_document("case", CASE)
    assert document["limits"] == "Theirs 1"
    assert document["claims"][0]["statement"] == "Mine."


@pytest.mark.parametrize(
    "change",
    [
        lambda user, **kw: claim_add(
            user=user, case_key=CASE, claim={**claim_of(A), "id": "CLM-CP22-003-D"}, **kw
        ),
        lambda user, **kw: claim_update(user=user, claim_id=A, claim=claim_of(A), **kw),
        lambda user, **kw: claim_withdraw(user=user, claim_id=A, reason="r", **kw),
        lambda user, **kw: claim_move(user=user, claim_id=A, offset=1, **kw),
    ],
    ids=["add", "update", "withdraw", "move"],
)
def test_every_claim_change_keeps_a_concurrent_change(
    case_claims, analyst, reviewer, monkeypatch, change
):
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    change(analyst, summary="Mine")
    assert len(reads) == 2
    assert record_document("case", CASE)["limits"] == "Theirs 1"


def test_a_claim_change_based_on_a_revision_is_not_retried(
    case_claims, analyst, reviewer, monkeypatch
):
    base = latest()
    reads = meddle(monkeypatch, limits_set_by(reviewer, "Theirs"))
    with pytest.raises(StaleRevision):
        claim_patch(
            user=analyst,
            claim_id=A,
            patch={"statement": "Mine."},
            summary="Patch A",
            expected_revision=base,
        )
    assert len(reads) == 1
    assert claim_of(A)["statement"] != "Mine."


# --- refusals ---------------------------------------------------------------------------


def test_a_refusal_points_into_the_case_and_knows_the_claim(case_claims, analyst):
    before = Revision.objects.count()
    with pytest.raises(ClaimRefused) as refused:
        claim_patch(
            user=analyst,
            claim_id=B,
            patch={"status": "supported", "evidence": []},
            summary="Break B",
        )
    assert (refused.value.case_key, refused.value.index) == (CASE, 1)
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("claim.evidence_required", "claims[1].evidence")
    ]
    assert [(v.code, v.path, v.record) for v in refused.value.seen_from_the_claim()] == [
        ("claim.evidence_required", "evidence", "")
    ]
    assert Revision.objects.count() == before


def test_seen_from_the_claim_problems_elsewhere_name_the_case():
    refused = ClaimRefused(
        [
            RuleViolation("claim.evidence_required", "the claim", "claims[2]"),
            RuleViolation("evidence.source_unknown", "inside", "claims[2].evidence[0].source"),
            RuleViolation("claim.id_taken", "another claim", "claims[20].id"),
            RuleViolation("figure.id_taken", "elsewhere", "figures[0]"),
            RuleViolation(
                "scope.relation_conflict", "another record", "relations[0]", "case CP22-002"
            ),
        ],
        case_key=CASE,
        index=2,
    )
    assert [(v.path, v.record) for v in refused.seen_from_the_claim()] == [
        ("", ""),
        ("evidence[0].source", ""),
        ("claims[20].id", f"case {CASE}"),
        ("figures[0]", f"case {CASE}"),
        ("relations[0]", "case CP22-002"),
    ]


def test_a_claim_added_at_a_position_is_refused_at_that_position(case_claims, analyst):
    claim = {**claim_of(A), "id": "CLM-CP22-003-D", "evidence": []}
    for position, index in ((1, 1), (99, 3), (None, 3)):
        with pytest.raises(ClaimRefused) as refused:
            claim_add(user=analyst, case_key=CASE, claim=claim, position=position, summary="x")
        assert refused.value.index == index
        assert refused.value.codes == ["claim.evidence_required"]


def test_a_claim_that_is_not_an_object_or_changes_its_id_is_refused(case_claims, analyst):
    with pytest.raises(ClaimRefused) as refused:
        claim_update(user=analyst, claim_id=A, claim=["not", "a", "claim"], summary="x")
    assert refused.value.codes == ["document.type"]
    with pytest.raises(ClaimRefused) as refused:
        claim_patch(user=analyst, claim_id=A, patch={"id": "CLM-OTHER"}, summary="x")
    assert [(v.code, v.path) for v in refused.value.violations] == [("record.key_mismatch", "id")]
    assert claim_ids() == [A, B, C]


# --- several at once --------------------------------------------------------------------


def test_several_claims_are_added_as_one_revision(case_claims, analyst):
    before = Revision.objects.count()
    new = [
        {**claim_of(A), "id": "CLM-CP22-003-D", "statement": "First of the batch."},
        {**claim_of(A), "id": "CLM-CP22-003-E", "statement": "Second of the batch."},
    ]
    outcome = claims_add(user=analyst, case_key=CASE, claims=new, summary="Two claims")
    assert Revision.objects.count() == before + 1
    assert outcome.revision.summary == "Two claims"
    assert claim_ids() == [A, B, C, "CLM-CP22-003-D", "CLM-CP22-003-E"]


def test_a_refused_batch_writes_none_of_its_claims_and_says_where_they_stand(case_claims, analyst):
    before = Revision.objects.count()
    new = [
        {**claim_of(A), "id": "CLM-CP22-003-D"},
        {**claim_of(A), "id": "CLM-CP22-003-E", "evidence": []},
    ]
    with pytest.raises(ClaimRefused) as refused:
        claims_add(user=analyst, case_key=CASE, claims=new, summary="x")
    assert refused.value.index == 3
    assert [(v.code, v.path) for v in refused.value.violations] == [
        ("claim.evidence_required", "claims[4].evidence")
    ]
    assert Revision.objects.count() == before
    assert claim_ids() == [A, B, C]
