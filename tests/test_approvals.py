"""Approvals (docs/review.md): the service, four eyes, stale approvals, the selectors."""

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from claimsdb import public
from claimsdb.integrity import verify_history
from claimsdb.models import Approval, Case, LedgerHead, ReleaseEntry, ReviewState
from claimsdb.records import PermissionDenied, RecordNotFound, RuleViolations, StaleApproval
from claimsdb.selectors.approvals import (
    latest_approved_revision_number,
    review_range,
    revisions_since_approved,
)
from claimsdb.services import bundle_load, bundle_load_file
from claimsdb.services.approvals import approve, approve_pending
from claimsdb.services.releases import release_plan, release_publish

from .support import approve_all, create_source, edit_case, latest, make_user, new_case, text_of

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
    mine = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    theirs = edit_case(analyst, "CP22-002", summary="Theirs", limits="Theirs.")
    outcome = approve_pending(user=reviewer)
    assert outcome.left == [("case", "CP22-003")]
    assert latest_approved_revision_number("case", "CP22-002") == theirs
    assert latest_approved_revision_number("case", "CP22-003") != mine
    approve_pending(user=second)
    assert latest_approved_revision_number("case", "CP22-003") == mine


def test_approve_pending_costs_the_same_queries_for_more_records_without_a_review_state(
    analyst, second
):
    """Records written before the review queue kept their state (or restored) have none:
    approving them costs a fixed number of queries per batch, not a few per record."""

    def approve_sources(first: int, count: int) -> int:
        for index in range(first, first + count):
            create_source(analyst, f"SRC-PENDING-{index:03}")
        ReviewState.objects.all().delete()
        with CaptureQueriesContext(connection) as captured:
            outcome = approve_pending(user=second, kinds=["source"])
        assert len(outcome.approved) == count and not outcome.left
        return len(captured)

    assert approve_sources(0, 3) == approve_sources(3, 30)
    states = ReviewState.objects.filter(record_kind="source")  # the thirty approved last
    assert states.count() == 30
    assert not states.filter(waiting_from__isnull=False).exists()
    assert all(state.approved_number == state.latest_number for state in states)


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


# --- tamper evidence ------------------------------------------------------------------------


@pytest.fixture
def approved_three(seeded, analyst, second):
    """Three approvals of CP22-003, each of a new analyst's edit."""
    for n in range(3):
        number = edit_case(analyst, "CP22-003", summary=f"Edit {n}", limits=f"Limits {n}.")
        approve(user=second, record_kind="case", record_key="CP22-003", revision_number=number)
    assert verify_history() == []
    return list(Approval.objects.order_by("number"))


@pytest.mark.parametrize(
    "field, value",
    [
        ("note", "Looks fine to me"),
        ("self_approved", True),
        ("status", "draft"),
        ("since_number", 1),
        ("created_at", "2020-01-01T00:00:00.000001Z"),
    ],
)
def test_verify_catches_an_edited_approval(approved_three, field, value):
    middle = approved_three[1]
    Approval.objects.filter(pk=middle.pk).update(**{field: value})
    problems = verify_history()
    assert any(f"approval {middle.number} " in p and "edited" in p for p in problems), problems


def test_verify_catches_an_approval_given_another_reviewer(approved_three, reviewer):
    middle = approved_three[1]
    Approval.objects.filter(pk=middle.pk).update(reviewer=reviewer)
    assert any(f"approval {middle.number} " in p for p in verify_history())


def test_verify_catches_an_approval_moved_to_another_revision(approved_three):
    first, middle = approved_three[0], approved_three[1]
    Approval.objects.filter(pk=middle.pk).update(revision=first.revision)
    assert any(f"approval {middle.number}:" in p for p in verify_history())


def test_verify_catches_a_deleted_approval(approved_three):
    middle = approved_three[1]
    Approval.objects.filter(pk=middle.pk).delete()
    problems = verify_history()
    assert any(f"approval {middle.number} missing" in p for p in problems), problems


def test_verify_catches_the_last_approval_deleted(approved_three):
    Approval.objects.filter(pk=approved_three[-1].pk).delete()
    problems = verify_history()
    assert any("the ledger head says approval" in p for p in problems), problems


def test_verify_catches_an_inserted_approval(approved_three, reviewer):
    last = approved_three[-1]
    forged = Approval.objects.get(pk=last.pk)
    forged.pk = None
    forged.number = last.number + 1
    forged.previous_hash = last.chain_hash
    forged.chain_hash = "f" * 64
    forged.reviewer = reviewer
    forged.save()
    problems = verify_history()
    assert any(f"approval {forged.number} " in p for p in problems), problems


# --- releases publish what was approved ------------------------------------------------------


def test_an_analysts_edit_waits_for_approval_before_it_is_released(
    seeded, reviewer, analyst, second
):
    first = release_publish(user=reviewer, notes="Release 1")
    released = public.released_revision("case", "CP22-003")
    before = released.snapshot
    number = edit_case(analyst, "CP22-003", summary="New lede", limits="Rewritten limits.")
    edit_case(analyst, "CP22-003", summary="Another", title="A retitled case")

    plan = release_plan()
    awaiting = {(a.kind, a.key): a for a in plan.awaiting}
    assert awaiting[("case", "CP22-003")].count == 2
    assert awaiting[("case", "CP22-003")].approved == released.number
    assert "2 changes since the approved revision" in awaiting[("case", "CP22-003")].message
    assert plan.awaiting_count == 1 and plan.awaiting_revisions == 2
    # nothing but the waiting edit changed: there is nothing to publish
    with pytest.raises(RuleViolations) as refused:
        release_publish(user=reviewer, notes="Release 2")
    assert refused.value.codes == ["release.nothing_changed"]
    edit_case(analyst, "CP22-002", summary="Elsewhere", limits="Approved limits.")
    approve(
        user=second,
        record_kind="case",
        record_key="CP22-002",
        revision_number=latest("case", "CP22-002"),
    )
    second_release = release_publish(user=reviewer, notes="Release 2")
    entry = ReleaseEntry.objects.get(release=second_release, record_key="CP22-003")
    assert entry.change == "unchanged" and entry.revision.number == released.number
    # the released revision stays citable and unchanged
    assert public.released_revision("case", "CP22-003").snapshot == before
    assert (
        ReleaseEntry.objects.get(release=first, record_key="CP22-003").revision.snapshot == before
    )

    approve(
        user=second,
        record_kind="case",
        record_key="CP22-003",
        revision_number=latest("case", "CP22-003"),
    )
    third = release_publish(user=reviewer, notes="Release 3")
    entry = ReleaseEntry.objects.get(release=third, record_key="CP22-003")
    assert entry.change == "updated" and entry.revision.number == latest("case", "CP22-003")
    assert entry.revision.number > number
    assert not release_plan().awaiting


def test_a_release_publishes_the_approved_revision_not_a_later_one(
    seeded, reviewer, analyst, second
):
    approved = edit_case(analyst, "CP22-003", summary="Reviewed", limits="Reviewed limits.")
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=approved)
    edit_case(analyst, "CP22-003", summary="Not yet", limits="Unreviewed limits.")
    release = release_publish(user=reviewer, notes="1")
    entry = ReleaseEntry.objects.get(release=release, record_key="CP22-003")
    assert entry.revision.number == approved
    assert "Reviewed limits." in entry.revision.snapshot


def test_the_status_of_the_approved_revision_decides(seeded, reviewer, analyst, second):
    """A case made a draft after its ready revision was approved is published at the
    approved ready revision until the draft is approved; then the public keeps what it saw
    (as for any draft)."""
    release_publish(user=reviewer, notes="1")
    seen = public.released_revision("case", "CP22-003").number
    ready = edit_case(analyst, "CP22-003", summary="Ready edit", limits="Ready limits.")
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=ready)
    draft = edit_case(analyst, "CP22-003", summary="To draft", status="draft")
    release = release_publish(user=reviewer, notes="2")
    assert ReleaseEntry.objects.get(release=release, record_key="CP22-003").revision.number == ready
    approve(user=second, record_kind="case", record_key="CP22-003", revision_number=draft)
    edit_case(analyst, "CP22-002", summary="Elsewhere", limits="Other limits.")
    approve_all()
    release = release_publish(user=reviewer, notes="3")
    entry = ReleaseEntry.objects.get(release=release, record_key="CP22-003")
    assert entry.revision.number == ready != seen and entry.change == "unchanged"


def test_a_never_approved_record_is_not_published(seeded, reviewer, analyst):
    create_source(analyst, "SRC-UNREVIEWED")
    plan = release_plan()
    assert ("source", "SRC-UNREVIEWED") in {(a.kind, a.key) for a in plan.awaiting}
    release = release_publish(user=reviewer, notes="1")
    assert not ReleaseEntry.objects.filter(release=release, record_key="SRC-UNREVIEWED").exists()


# --- the approve command, load_records --approve-as, bundles, the demo ------------------------


def test_the_approve_command_approves_and_shows_the_range(seeded, analyst, second, capsys):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    call_command("approve", "case", "CP22-003", user="second")
    shown = capsys.readouterr().out
    assert f"revisions {number}–{number} await review" in shown and "changed: limits" in shown
    assert latest_approved_revision_number("case", "CP22-003") != number  # showing writes nothing
    call_command("approve", "case", "CP22-003", str(number), user="second", note="ok")
    assert f"revision {number} approved by second" in capsys.readouterr().out
    assert latest_approved_revision_number("case", "CP22-003") == number


def test_four_eyes_the_author_cannot_approve_through_the_command(seeded, reviewer):
    number = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    before = written()
    with pytest.raises(CommandError, match="approval.own_change"):
        call_command("approve", "case", "CP22-003", str(number), user="reviewer")
    assert written() == before


def test_an_analyst_cannot_approve_through_the_command(seeded, analyst):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    before = written()
    with pytest.raises(CommandError, match="reviewer role"):
        call_command("approve", "case", "CP22-003", str(number), user="analyst")
    assert written() == before


def test_a_stale_approval_through_the_command_writes_nothing(seeded, analyst, second):
    seen = edit_case(analyst, "CP22-003", summary="One", limits="One.")
    edit_case(analyst, "CP22-003", summary="Two", limits="Two.")
    before = written()
    with pytest.raises(CommandError, match="approval.stale"):
        call_command("approve", "case", "CP22-003", str(seen), user="second")
    assert written() == before


def test_a_bundle_may_not_carry_approvals(seeded, reviewer, seed_bundle):
    bundle = {
        "format": "claimsdb.bundle/1",
        **{name: [] for name in ("methods", "sources", "rules")},
        "cases": [new_case("CP99-001", status="ready")],
        "approvals": [{"record_key": "CP99-001", "revision": 1, "reviewer": "reviewer"}],
    }
    before = (written(), latest("case", "CP22-003"))
    with pytest.raises(RuleViolations) as refused:
        bundle_load(user=reviewer, bundle=bundle, summary="With approvals")
    assert ("approval.not_in_bundle", "approvals") in {
        (v.code, v.path) for v in refused.value.violations
    }
    assert (written(), latest("case", "CP22-003")) == before
    assert not Case.objects.filter(key="CP99-001").exists()


def test_a_bundle_file_may_not_carry_approvals(seeded, reviewer, tmp_path):
    path = tmp_path / "bundle.json"
    path.write_text(
        json.dumps(
            {
                "format": "claimsdb.bundle/1",
                **{name: [] for name in ("methods", "sources", "rules", "cases")},
                "approvals": [],
            }
        )
    )
    with pytest.raises(RuleViolations) as refused:
        bundle_load_file(user=reviewer, path=path, summary="With approvals")
    assert "approval.not_in_bundle" in refused.value.codes


def test_load_records_approves_as_another_reviewer(seeded, reviewer, second, tmp_path, capsys):
    path = tmp_path / "case.json"
    path.write_text(json.dumps(new_case("CP99-001", status="ready")))
    call_command("load_records", str(path), user="reviewer", approve_as="second")
    assert "approved 1 record(s) as second" in capsys.readouterr().out
    assert latest_approved_revision_number("case", "CP99-001") == latest("case", "CP99-001")
    # four eyes: the loader does not approve their own load
    other = tmp_path / "other.json"
    other.write_text(json.dumps(new_case("CP99-002", status="ready")))
    call_command("load_records", str(other), user="reviewer", approve_as="reviewer")
    assert "four eyes" in capsys.readouterr().err
    assert latest_approved_revision_number("case", "CP99-002") is None


def test_setup_demo_has_a_second_reviewer_and_the_seed_approved(
    settings, db, tmp_path, monkeypatch
):
    from claimsdb.management.commands import setup_demo

    settings.DEBUG = True
    monkeypatch.setattr(setup_demo, "PASSWORD_FILE", tmp_path / "demo-password")
    call_command("setup_demo")
    assert settings.FOUR_EYES
    approvals = Approval.objects.all()
    assert approvals and {a.reviewer.username for a in approvals} == {"reviewer2"}
    assert not any(a.self_approved for a in approvals)
    assert not release_plan().awaiting
    call_command("setup_demo")  # again: nothing changes
    assert Approval.objects.count() == len(approvals)


# --- what the public sees -----------------------------------------------------------------


def test_the_public_history_says_who_reviewed_each_released_revision(seeded, reviewer, analyst):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="Reviewed limits.")
    approve(
        user=make_user("second", "reviewer"),
        record_kind="case",
        record_key="CP22-003",
        revision_number=number,
    )
    release_publish(user=reviewer, notes="1")
    for url in ("/cases/CP22-003/history/", "/cases/CP22-003/"):
        page = text_of(Client().get(url).content.decode())
        assert "reviewed by second" in page, url
        assert "self-approved" not in page


def test_a_one_person_deployment_shows_self_approved_in_the_public_history(
    seeded, reviewer, settings
):
    settings.FOUR_EYES = False
    number = edit_case(reviewer, "CP22-003", summary="Mine", limits="My own limits.")
    approval = approve(
        user=reviewer, record_kind="case", record_key="CP22-003", revision_number=number
    )
    assert approval.self_approved
    release_publish(user=reviewer, notes="1")
    page = text_of(Client().get("/cases/CP22-003/history/").content.decode())
    assert "self-approved by reviewer" in page
