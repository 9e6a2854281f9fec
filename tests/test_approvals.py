"""Approvals (docs/review.md): the service, four eyes, stale approvals, the selectors."""

import pytest

from claimsdb.models import Approval, LedgerHead
from claimsdb.records import PermissionDenied, RecordNotFound, RuleViolations, StaleApproval
from claimsdb.selectors.approvals import (
    latest_approved_revision_number,
    review_range,
    revisions_since_approved,
)
from claimsdb.services.approvals import approve, approve_pending

from .support import edit_case, latest, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def second(db):
    return make_user("second", "reviewer")


def written() -> tuple[int, int]:
    """How many approvals there are, and the approval chain's head."""
    head = LedgerHead.objects.get(pk=1)
    return Approval.objects.count(), head.approval_number


def test_a_second_reviewer_approves_an_analysts_change(seeded, analyst, second):
    number = edit_case(analyst, "CP22-003", summary="Sharper lede", limits="Sharper.")
    approval = approve(
        user=second, record_kind="case", record_key="CP22-003", revision_number=number, note="ok"
    )
    assert approval.revision_number == number
    assert approval.revision.number == number
    assert approval.reviewer == second
    assert approval.note == "ok"
    assert not approval.self_approved
    assert approval.status == "ready"
    assert latest_approved_revision_number("case", "CP22-003") == number
    assert list(revisions_since_approved("case", "CP22-003")) == []


def test_an_approval_covers_every_change_since_the_previous(seeded, analyst, second):
    first = edit_case(analyst, "CP22-003", summary="One", limits="First limits.")
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=first)
    a = edit_case(analyst, "CP22-003", summary="Two", limits="Second limits.")
    b = edit_case(analyst, "CP22-003", summary="Three", title="A new title")
    pending = review_range("case", "CP22-003")
    assert pending.approved == first
    assert pending.latest == b
    assert [r.number for r in pending.revisions] == [a, b]
    assert pending.authors == ["analyst"]
    assert {change.path for change in pending.changes} == {"limits", "title"}
    approval = approve(user=second, record_kind="case", record_key="CP22-003", revision_number=b)
    assert approval.since_number == first
    assert not review_range("case", "CP22-003").pending


def test_four_eyes_refuses_a_reviewer_approving_their_own_change(seeded, reviewer, second):
    number = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    before = written()
    with pytest.raises(RuleViolations) as refused:
        approve(user=reviewer, record_kind="case", record_key="CP22-003", revision_number=number)
    assert refused.value.codes == ["approval.own_change"]
    assert str(number) in refused.value.violations[0].message
    assert written() == before
    # a second reviewer may
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=number)


def test_four_eyes_looks_at_the_whole_range(seeded, reviewer, analyst, second):
    """An own change earlier in the range is still the reviewer's own, even when the
    latest revision is somebody else's."""
    edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    number = edit_case(analyst, "CP22-003", summary="Theirs", title="Their title")
    with pytest.raises(RuleViolations) as refused:
        approve(user=reviewer, record_kind="case", record_key="CP22-003", revision_number=number)
    assert refused.value.codes == ["approval.own_change"]


def test_without_four_eyes_an_own_change_is_self_approved(seeded, reviewer, settings):
    settings.FOUR_EYES = False
    number = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    approval = approve(
        user=reviewer, record_kind="case", record_key="CP22-003", revision_number=number
    )
    assert approval.self_approved


@pytest.mark.parametrize("role", ["analyst", "viewer", None])
def test_only_reviewers_approve(seeded, analyst, role):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="Changed.")
    user = analyst if role == "analyst" else make_user(f"u-{role}", role)
    before = written()
    with pytest.raises(PermissionDenied) as refused:
        approve(user=user, record_kind="case", record_key="CP22-003", revision_number=number)
    assert refused.value.violation.code == "permission.denied"
    assert written() == before


def test_a_stale_approval_writes_nothing(seeded, analyst, second):
    seen = edit_case(analyst, "CP22-003", summary="One", limits="One.")
    edit_case(analyst, "CP22-003", summary="Two", limits="Two.")
    before = written()
    with pytest.raises(StaleApproval) as refused:
        approve(user=second, record_kind="case", record_key="CP22-003", revision_number=seen)
    assert refused.value.codes == ["approval.stale"]
    assert refused.value.current == latest("case", "CP22-003")
    assert written() == before


def test_approving_an_approved_revision_again_is_refused(seeded, analyst, second):
    number = edit_case(analyst, "CP22-003", summary="One", limits="One.")
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=number)
    with pytest.raises(RuleViolations) as refused:
        approve(user=second, record_kind="case", record_key="CP22-003", revision_number=number)
    assert refused.value.codes == ["approval.already_approved"]


def test_an_unknown_record_is_not_found(seeded, second):
    with pytest.raises(RecordNotFound):
        approve(user=second, record_kind="case", record_key="CP99-404", revision_number=1)


def test_approve_pending_leaves_own_changes_for_another_reviewer(seeded, reviewer, analyst, second):
    # the seed was loaded by ``reviewer``: its revisions are theirs
    assert ("case", "CP22-002") in approve_pending(user=reviewer).left
    approve_pending(user=second)
    mine = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    theirs = edit_case(analyst, "CP22-002", summary="Theirs", limits="Theirs.")
    outcome = approve_pending(user=reviewer)
    assert ("case", "CP22-003") in outcome.left
    assert latest_approved_revision_number("case", "CP22-002") == theirs
    assert latest_approved_revision_number("case", "CP22-003") != mine
    approve_pending(user=second)
    assert latest_approved_revision_number("case", "CP22-003") == mine


def test_approvals_chain_without_gaps(seeded, analyst, second):
    for n in range(3):
        number = edit_case(analyst, "CP22-003", summary=f"Edit {n}", limits=f"Limits {n}.")
        approve(user=second, record_kind="case", record_key="CP22-003", revision_number=number)
    approvals = list(Approval.objects.order_by("number"))
    assert [a.number for a in approvals] == list(range(1, len(approvals) + 1))
    for before, after in zip(approvals, approvals[1:], strict=False):
        assert after.previous_hash == before.chain_hash
    head = LedgerHead.objects.get(pk=1)
    assert (head.approval_number, head.approval_hash) == (
        approvals[-1].number,
        approvals[-1].chain_hash,
    )
