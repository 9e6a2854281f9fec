"""Approvals over the API (docs/review.md): approving at a revision, four eyes, stale
approvals, roles, and the feeds a mirror follows."""

import pytest

from claimsdb.models import Approval, LedgerHead

from .support import body, edit_case, latest, make_user, publish, token_client

pytestmark = pytest.mark.django_db

URL = "/api/v1/cases/CP22-003/approvals/"


@pytest.fixture
def second(db):
    return make_user("second", "reviewer")


def written() -> tuple[int, int]:
    return Approval.objects.count(), LedgerHead.objects.get(pk=1).approval_number


def test_a_reviewer_approves_another_authors_change(seeded, analyst, second):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    pending = body(token_client(second).get(URL))
    assert pending["awaiting_review"] is True
    assert pending["review"]["latest_revision"] == number
    assert pending["review"]["authors"] == ["analyst"]
    assert {c["path"] for c in pending["review"]["changes"]} == {"limits"}

    response = token_client(second).post(
        URL, {"revision": number, "note": "Checked the limits"}, format="json"
    )
    assert response.status_code == 201, response.content
    approval = body(response)
    assert approval["revision"] == number
    assert approval["reviewer"] == "second"
    assert approval["note"] == "Checked the limits"
    assert approval["self_approved"] is False
    assert body(token_client(second).get(URL))["awaiting_review"] is False


def test_four_eyes_the_author_cannot_approve_through_the_api(seeded, reviewer):
    number = edit_case(reviewer, "CP22-003", summary="Mine", limits="Mine.")
    before = written()
    response = token_client(reviewer).post(URL, {"revision": number}, format="json")
    assert response.status_code == 403
    assert [e["code"] for e in body(response)["errors"]] == ["approval.own_change"]
    assert written() == before


def test_an_analyst_cannot_approve(seeded, analyst):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    before = written()
    response = token_client(analyst).post(URL, {"revision": number}, format="json")
    assert response.status_code == 403
    assert [e["code"] for e in body(response)["errors"]] == ["permission.denied"]
    assert written() == before


def test_a_viewer_cannot_approve_and_anonymous_must_sign_in(seeded, analyst, viewer):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    assert token_client(viewer).post(URL, {"revision": number}, format="json").status_code == 403
    assert token_client(None).post(URL, {"revision": number}, format="json").status_code in (
        401,
        403,
    )
    assert Approval.objects.filter(revision_number=number).count() == 0


def test_a_stale_approval_is_412_and_writes_nothing(seeded, analyst, second):
    seen = edit_case(analyst, "CP22-003", summary="One", limits="One.")
    edit_case(analyst, "CP22-003", summary="Two", limits="Two.")
    before = written()
    response = token_client(second).post(URL, {"revision": seen}, format="json")
    assert response.status_code == 412
    assert [e["code"] for e in body(response)["errors"]] == ["approval.stale"]
    assert written() == before


def test_approving_twice_is_a_conflict(seeded, analyst, second):
    number = edit_case(analyst, "CP22-003", summary="One", limits="One.")
    assert token_client(second).post(URL, {"revision": number}, format="json").status_code == 201
    response = token_client(second).post(URL, {"revision": number}, format="json")
    assert response.status_code == 409
    assert [e["code"] for e in body(response)["errors"]] == ["approval.already_approved"]


@pytest.mark.parametrize("payload", [{}, {"revision": "7"}, {"revision": 0}, {"revision": True}])
def test_an_approval_names_its_revision(seeded, second, payload):
    before = written()
    response = token_client(second).post(URL, payload, format="json")
    assert response.status_code == 400
    assert [e["code"] for e in body(response)["errors"]] == ["approval.revision_required"]
    assert written() == before


def test_an_unknown_record_is_404(seeded, second):
    response = token_client(second).post(
        "/api/v1/cases/CP99-404/approvals/", {"revision": 1}, format="json"
    )
    assert response.status_code == 404


def test_a_method_key_with_a_slash_is_approved(seeded, second):
    response = token_client(second).get("/api/v1/methods/diggingbeagle.assessment/1/approvals/")
    assert response.status_code == 200, response.content
    assert body(response)["record_key"] == "diggingbeagle.assessment/1"


def test_the_revision_feed_carries_each_revisions_approval(seeded, analyst, second):
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    token_client(second).post(URL, {"revision": number, "note": "ok"}, format="json")
    page = body(token_client(second).get(f"/api/v1/revisions/?since={number - 1}"))
    (revision,) = page["results"]
    assert revision["number"] == number
    assert revision["approval"]["reviewer"] == "second"
    assert revision["approval"]["note"] == "ok"


def test_the_approvals_feed_follows_new_approvals(seeded, analyst, second):
    held = Approval.objects.order_by("-number").values_list("number", flat=True).first()
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    token_client(second).post(URL, {"revision": number}, format="json")
    page = body(token_client(second).get(f"/api/v1/approvals/?since={held}"))
    assert [(a["record_key"], a["revision"]) for a in page["results"]] == [("CP22-003", number)]
    assert page["results"][0]["number"] == held + 1


def test_the_public_sees_only_approvals_of_released_revisions(seeded, reviewer, analyst, second):
    publish(reviewer, notes="1")
    number = edit_case(analyst, "CP22-003", summary="Lede", limits="New limits.")
    token_client(second).post(URL, {"revision": number}, format="json")
    public = body(token_client(None).get("/api/v1/approvals/?page_size=200"))
    assert number not in {a["revision"] for a in public["results"]}
    assert public["results"]  # the seed's approvals, whose revisions release 1 published
    assert latest("case", "CP22-003") == number
